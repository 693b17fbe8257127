/* Message-channel framing (chan.h). The stream is read four ways: one
 * feed then a drain, random splits drained after every feed, splits of
 * at most max + 1 bytes (no bigger than a line may be, as in production:
 * 64 KiB reads against a 64 MiB cap), and abx_chan_read_line over a pipe.
 * Every run must equal a trivial splitter (lines up to the first one over
 * max; a tail without a newline never returned; overflow when a line or
 * that tail is over max): the same lines and the same verdict however
 * the bytes were cut, even when a piece brings whole lines and a tail
 * already over max (its lines still come out first). Every line is <= max,
 * holds no '\n' and ends in a NUL at len; after an
 * overflow feed is -1 and line 0; without one, the unfinished tail is
 * all that stays buffered.
 *
 * Also: a message of type OUT whose "s" is the stream up to its first
 * NUL (<= 4096 bytes) goes through abx_chan_send and a pipe and comes
 * back as one line, byte-identical to cJSON's text of {"t":"out","s":...}
 * (built here with cJSON alone), read exactly at the cap and refused one
 * byte under it; "t" set to the stream's start gives the type of that
 * name, else UNKNOWN; every type has the name of this file's own table
 * (from chan.h's protocol comment, not chan.c) and round-trips.
 *
 * Layout: b0 -> max = 1 + b0 % 64 (255: 0, the 64 MiB default); b1..b4
 * seed the splits; the rest is the stream (its first 16 KiB). */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "chan.h"
#include "fuzz.h"

/* Well inside the 64 KiB a chan buffers beyond max, so a one-shot feed
 * overflows only on a long line. */
#define MAX_STREAM 16384
#define MAX_S 4096

/* The longest line a chan with max 0 accepts: 64 MiB (chan.h). */
#define REF_LINE_MAX ((size_t)64 * 1024 * 1024)

/* The message types and their wire names ("t"). */
static const struct {
    enum abx_msg type;
    const char *name;
} ref_types[] = {
    {ABX_MSG_RUN, "run"},         {ABX_MSG_CLOSE, "close"},
    {ABX_MSG_START, "start"},     {ABX_MSG_RESULT, "result"},
    {ABX_MSG_OUT, "out"},         {ABX_MSG_SECRET, "secret"},
    {ABX_MSG_AMEND, "amend"},     {ABX_MSG_INTERRUPTED, "interrupted"},
    {ABX_MSG_DONE, "done"},       {ABX_MSG_COLLECTED, "collected"},
    {ABX_MSG_SANDBOXES, "sandboxes"},
};
#define NREF_TYPES (sizeof ref_types / sizeof ref_types[0])

/* Piece sizes: the whole stream, any (mostly tiny, sometimes big), or a
 * bound >= 2 (1..bound bytes). */
#define WHOLE 0
#define ANY 1

struct run {
    struct abx_buf log;  /* length (a size_t) and bytes of every line */
    int overflow;
};

static void run_init(struct run *r)
{
    abx_buf_init(&r->log, 0);
    r->overflow = 0;
}

static void log_line(struct run *r, const void *p, size_t n)
{
    FUZZ_CHECK(abx_buf_append(&r->log, &n, sizeof n) == 0);
    FUZZ_CHECK(abx_buf_append(&r->log, p, n) == 0);
}

/* Piece sizes from the seed: the same input cuts the same way. */
static size_t piece(uint32_t *seed, size_t bound, size_t left)
{
    size_t k;

    if (bound == WHOLE)
        return left;
    if (bound == ANY)
        k = (fuzz_rand(seed) & 3) ? fuzz_rand(seed) % 8 + 1
                                  : fuzz_rand(seed) % 512 + 1;
    else
        k = fuzz_rand(seed) % bound + 1;
    return k < left ? k : left;
}

/* Takes every whole line; -1 once the chan overflowed. */
static int drain(struct abx_chan *c, struct run *r, size_t max)
{
    char *line;
    size_t len;

    while (abx_chan_line(c, &line, &len)) {
        FUZZ_CHECK(line != NULL);
        FUZZ_CHECK(len <= max);
        FUZZ_CHECK(memchr(line, '\n', len) == NULL);
        FUZZ_CHECK(line[len] == '\0');
        log_line(r, line, len);
        free(line);
    }
    FUZZ_CHECK(line == NULL);
    if (c->overflow) {
        r->overflow = 1;
        return -1;
    }
    return 0;
}

static void run_chan(const uint8_t *s, size_t n, size_t cap, size_t max,
                     uint32_t seed, size_t bound, struct run *r)
{
    struct abx_chan c;
    const uint8_t *nl;
    size_t off = 0, k;
    char *line;

    abx_chan_init(&c, -1, cap);
    FUZZ_CHECK(c.max == max);
    while (off < n) {
        k = piece(&seed, bound, n - off);
        if (abx_chan_feed(&c, s + off, k) != 0) {
            FUZZ_CHECK(c.overflow);
            r->overflow = 1;
            break;
        }
        off += k;
        if (drain(&c, r, max) < 0)
            break;
    }
    if (r->overflow) {
        /* A broken peer stays broken, whatever comes next. */
        FUZZ_CHECK(abx_chan_feed(&c, "\n", 1) == -1);
    } else {
        nl = n ? memrchr(s, '\n', n) : NULL;
        FUZZ_CHECK(c.in.len - c.off == (nl ? n - (size_t)(nl - s) - 1 : n));
    }
    FUZZ_CHECK(abx_chan_line(&c, &line, NULL) == 0 && line == NULL);
    abx_chan_free(&c);
}

/* The trivial splitter: what an ideal reader hands out. */
static void reference(const uint8_t *s, size_t n, size_t max,
                      struct run *r)
{
    size_t start = 0, i;

    for (i = 0; i < n; i++) {
        if (s[i] != '\n')
            continue;
        if (i - start > max) {
            r->overflow = 1;
            return;
        }
        log_line(r, s + start, i - start);
        start = i + 1;
    }
    r->overflow = n - start > max;
}

static int same(const struct run *a, const struct run *b)
{
    return a->overflow == b->overflow && a->log.len == b->log.len &&
           (a->log.len == 0 || !memcmp(a->log.data, b->log.data,
                                       a->log.len));
}

/* A pipe that holds len bytes with no reader (a write never blocks), or
 * -1: a user over its pipe quota gets pipes of one page. */
static int roomy_pipe(int fds[2], size_t len)
{
    int sz;

    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    sz = fcntl(fds[1], F_GETPIPE_SZ);
    if (sz < 0 || len >= (size_t)sz) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    return 0;
}

/* The stream written whole to a pipe and read by abx_chan_read_line:
 * its lines are ref's first ones as far as a C string shows them (up to
 * a NUL byte), all of them unless it overflowed. */
static void run_pipe(const uint8_t *s, size_t n, size_t cap, size_t max,
                     const struct run *ref)
{
    struct abx_chan c;
    size_t off = 0, len;
    int fds[2], k;
    char *line;

    if (roomy_pipe(fds, n) < 0)
        return;
    FUZZ_CHECK(abx_chan_write(fds[1], s, n) == 0);
    close(fds[1]);
    abx_chan_init(&c, fds[0], cap);
    while ((k = abx_chan_read_line(&c, &line, NULL)) == 1) {
        FUZZ_CHECK(off < ref->log.len);
        memcpy(&len, ref->log.data + off, sizeof len);
        off += sizeof len;
        FUZZ_CHECK(len <= max);
        FUZZ_CHECK(strnlen(ref->log.data + off, len) == strlen(line));
        FUZZ_CHECK(!memcmp(line, ref->log.data + off, strlen(line)));
        off += len;
        free(line);
    }
    FUZZ_CHECK(line == NULL);
    FUZZ_CHECK(k == (c.overflow ? -1 : 0));
    FUZZ_CHECK(c.overflow == ref->overflow);
    FUZZ_CHECK(c.overflow || (c.eof && off == ref->log.len));
    abx_chan_free(&c);
    close(fds[0]);
}

/* Sends {"t":"out","s":str} over a pipe and reads it back with a chan
 * capped at cap: what abx_chan_read_line said (the line in *line), or
 * -2 when no pipe could hold the tlen + 1 bytes. */
static int send_back(const char *str, size_t tlen, size_t cap, char **line)
{
    struct abx_chan c;
    cJSON *m = abx_msg_new(ABX_MSG_OUT);
    int fds[2], k;
    char *more;

    *line = NULL;
    FUZZ_CHECK(m != NULL);
    FUZZ_CHECK(cJSON_AddStringToObject(m, "s", str) != NULL);
    if (roomy_pipe(fds, tlen + 1) < 0) {
        cJSON_Delete(m);
        return -2;
    }
    FUZZ_CHECK(abx_chan_send(fds[1], m, NULL) == 0);
    close(fds[1]);
    abx_chan_init(&c, fds[0], cap);
    k = abx_chan_read_line(&c, line, NULL);
    if (k == 1) {
        /* Exactly one line: the next read is the end. */
        FUZZ_CHECK(abx_chan_read_line(&c, &more, NULL) == 0);
        FUZZ_CHECK(more == NULL && c.eof && !c.overflow);
    } else {
        FUZZ_CHECK(*line == NULL);
    }
    abx_chan_free(&c);
    close(fds[0]);
    return k;
}

static void round_trip(const uint8_t *s, size_t n)
{
    char str[MAX_S + 1], *text, *line;
    size_t len = 0, tlen;
    cJSON *m, *back;
    int k;

    while (len < n && len < MAX_S && s[len])
        len++;
    memcpy(str, s, len);
    str[len] = '\0';

    /* The text abx_chan_send must put on the line: {"t":"out","s":str}
     * as cJSON prints it. */
    m = cJSON_CreateObject();
    FUZZ_CHECK(m != NULL);
    FUZZ_CHECK(cJSON_AddStringToObject(m, "t", "out") != NULL);
    FUZZ_CHECK(cJSON_AddStringToObject(m, "s", str) != NULL);
    text = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    FUZZ_CHECK(text != NULL);
    tlen = strlen(text);
    FUZZ_CHECK(memchr(text, '\n', tlen) == NULL);

    /* At most 6 bytes an input byte ("\u001f"): fits a 64 KiB pipe. */
    k = send_back(str, tlen, tlen, &line);
    if (k != -2) {
        FUZZ_CHECK(k == 1);
        FUZZ_CHECK(strcmp(line, text) == 0);
        back = cJSON_ParseWithLength(line, tlen);
        FUZZ_CHECK(back != NULL);
        FUZZ_CHECK(abx_msg_type(back) == ABX_MSG_OUT);
        FUZZ_CHECK(abx_msg_str(back, "s") != NULL);
        FUZZ_CHECK(strcmp(abx_msg_str(back, "s"), str) == 0);
        cJSON_Delete(back);
        free(line);
        /* One byte under the line's length: refused, nothing out. */
        FUZZ_CHECK(send_back(str, tlen, tlen - 1, &line) == -1);
    }
    cJSON_free(text);
}

/* "t" set to str: the type of that name, or UNKNOWN (also for "?",
 * what UNKNOWN is named). */
static void type_of(const char *str)
{
    enum abx_msg want = ABX_MSG_UNKNOWN;
    cJSON *m = cJSON_CreateObject();
    size_t i;

    FUZZ_CHECK(m != NULL);
    FUZZ_CHECK(cJSON_AddStringToObject(m, "t", str) != NULL);
    for (i = 0; i < NREF_TYPES; i++)
        if (strcmp(str, ref_types[i].name) == 0)
            want = ref_types[i].type;
    FUZZ_CHECK(abx_msg_type(m) == want);
    cJSON_Delete(m);
}

/* Independent of the input, so once per process. */
static void names_once(void)
{
    static int done;
    const char *name;
    cJSON *m;
    int i, j;

    if (done)
        return;
    done = 1;
    /* Every type is in the table, once, with its own name. */
    FUZZ_CHECK(NREF_TYPES == ABX_MSG_COUNT_ - 1);
    for (i = 1; i < ABX_MSG_COUNT_; i++) {
        name = NULL;
        for (j = 0; j < (int)NREF_TYPES; j++)
            if (ref_types[j].type == (enum abx_msg)i) {
                FUZZ_CHECK(name == NULL);
                name = ref_types[j].name;
            }
        FUZZ_CHECK(name != NULL);
        FUZZ_CHECK(strcmp(abx_msg_name((enum abx_msg)i), name) == 0);
        m = abx_msg_new((enum abx_msg)i);
        FUZZ_CHECK(m != NULL);
        FUZZ_CHECK(abx_msg_type(m) == (enum abx_msg)i);
        FUZZ_CHECK(strcmp(abx_msg_str(m, "t"), name) == 0);
        cJSON_Delete(m);
    }
    FUZZ_CHECK(strcmp(abx_msg_name(ABX_MSG_COUNT_),
                      abx_msg_name(ABX_MSG_UNKNOWN)) == 0);
    FUZZ_CHECK(abx_msg_type(NULL) == ABX_MSG_UNKNOWN);
    m = cJSON_CreateObject();  /* no "t", then a "t" that is no string */
    FUZZ_CHECK(m != NULL);
    FUZZ_CHECK(abx_msg_type(m) == ABX_MSG_UNKNOWN);
    FUZZ_CHECK(cJSON_AddNumberToObject(m, "t", 1) != NULL);
    FUZZ_CHECK(abx_msg_type(m) == ABX_MSG_UNKNOWN);
    FUZZ_CHECK(abx_msg_str(m, "t") == NULL);
    cJSON_Delete(m);
    m = cJSON_CreateArray();
    FUZZ_CHECK(m != NULL);
    FUZZ_CHECK(abx_msg_type(m) == ABX_MSG_UNKNOWN);
    cJSON_Delete(m);
    /* No message: -2, and fd -1 shows nothing was written. */
    FUZZ_CHECK(abx_chan_send(-1, NULL, NULL) == -2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct run ref, one, any, bnd;
    size_t cap, max, n;
    const uint8_t *s;
    uint32_t seed;
    char str[64];

    names_once();
    if (size < 5)
        return 0;
    cap = data[0] == 255 ? 0 : 1 + (size_t)data[0] % 64;
    max = cap ? cap : REF_LINE_MAX;
    seed = fuzz_seed(data + 1, 4);
    s = data + 5;
    n = size - 5 < MAX_STREAM ? size - 5 : MAX_STREAM;

    run_init(&ref);
    run_init(&one);
    run_init(&any);
    run_init(&bnd);
    reference(s, n, max, &ref);
    run_chan(s, n, cap, max, seed, WHOLE, &one);
    run_chan(s, n, cap, max, seed, ANY, &any);
    run_chan(s, n, cap, max, seed, max + 1, &bnd);
    FUZZ_CHECK(same(&one, &ref));
    FUZZ_CHECK(same(&any, &ref));
    FUZZ_CHECK(same(&bnd, &ref));
    run_pipe(s, n, cap, max, &ref);

    round_trip(s, n);
    /* The stream's start as "t", so the fuzzer can spell a type name. */
    n = n < sizeof str - 1 ? n : sizeof str - 1;
    memcpy(str, s, n);
    str[n] = '\0';
    type_of(str);

    abx_buf_free(&ref.log);
    abx_buf_free(&one.log);
    abx_buf_free(&any.log);
    abx_buf_free(&bnd.log);
    return 0;
}
