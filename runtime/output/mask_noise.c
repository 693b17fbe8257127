/* The masker's noise: what a tool puts inside a value it prints without
 * changing the value (line breaks, ANSI sequences, a hex dump's layout),
 * skipped while a pattern is compared (mask.c, match_at). */
#include "mask_noise.h"

#include <string.h>

#include "mask.h"

/* One noise sequence is at most this long (an ANSI CSI sequence). */
#define NOISE_RUN_MAX 32
/* A dump line's end: spaces and its text column ("  |e2b_0123456789ab|"). */
#define DUMP_TAIL_MAX 64

static int hexdigit(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The token of toks that s[j..) starts with: its length; 0 if none, -1
 * if s ends inside one (never when final). */
static long token_at(const char *const *toks, const unsigned char *s, size_t len, size_t j,
                     int final)
{
    int partial = 0;

    for (const char *const *t = toks; *t; t++) {
        size_t n, k;

        if ((unsigned char)(*t)[0] != s[j])
            continue;
        n = strlen(*t);

        for (k = 0; k < n && j + k < len && s[j + k] == (unsigned char)(*t)[k]; k++)
            ;
        if (k == n)
            return (long)n;
        partial |= j + k == len;
    }
    return partial && !final ? -1 : 0;
}

/* A line break as a channel spells it: raw, escaped for JSON (once or
 * inside another JSON string), or for XML. Worker messages are masked
 * JSON-encoded, reports as written. */
static const char *const breaks[] = {
    "\n", "\r", "\\n", "\\r", "\\\\n", "\\\\r", "\\u000a", "\\u000d", "\\u000A", "\\u000D",
    "&#10;", "&#13;", "&#xa;", "&#xd;", "&#xA;", "&#xD;", NULL};
/* ESC, the start of an ANSI sequence, spelled likewise ("#x1B": how
 * escape.c writes a character XML cannot hold). */
static const char *const escs[] = {"\x1b", "\\u001b", "\\u001B", "\\\\u001b", "\\\\u001B",
                                   "&#27;", "&#x1b;", "&#x1B;", "#x1B", NULL};

/* The bytes noise_at's noise starts with. */
const unsigned char abx_mask_noise_first[256] = {['\n'] = 1, ['\r'] = 1, [0x1b] = 1, [' '] = 1,
                                               ['\\'] = 1, ['&'] = 1, ['#'] = 1};

/* After a line break: a dump's offset column ("00000010: " of xxd,
 * "00000010  " of hexdump -C, "0000020 " of od), its length; 0 if none,
 * -1 if it may go on past len. */
static long offset_at(const unsigned char *s, size_t len, size_t j, int final)
{
    size_t k = j, sp;

    while (k < len && k - j < 16 && hexdigit(s[k]))
        k++;
    if (k >= len)
        return final ? 0 : -1;
    if (k - j < 4 || (s[k] != ':' && s[k] != ' '))
        return 0;
    k += s[k] == ':';
    for (sp = k; k < len && s[k] == ' ' && k - sp < 3; k++)
        ;
    if (k >= len && !final)
        return -1;
    return k > sp ? (long)(k - j) : 0;
}

/* The text column from s[k] to the line break: its length up to the
 * break (the break is noise of its own), 0 if none within DUMP_TAIL_MAX
 * of j, -1 if it may go on past len. */
static long text_column(const unsigned char *s, size_t len, size_t j, size_t k, int final)
{
    size_t e;
    long n;

    for (e = k; e < len && e - j < DUMP_TAIL_MAX; e++) {
        n = token_at(breaks, s, len, e, final);
        if (n < 0)
            return -1;
        if (n > 0)
            return (long)(e - j);
    }
    return e >= len && !final ? -1 : 0;
}

/* Bytes a tool may put inside a value it prints without changing it: line
 * breaks (fold, base64 -w, xxd -p, od), ANSI CSI sequences (grep
 * --color), and a hex dump's layout (xxd, hexdump -C, od): the spaces
 * between bytes or groups, and from a line's last byte to the next one's
 * first, the text column, the line break and the offset column (*dump
 * set). want: the pattern's next byte. Length of the noise at s[j..), 0
 * if none; -1 if it may go on past len (never when final). Two spaces and
 * want may be hexdump -C's middle gap or a text column that starts with
 * want ("6535  3da5..."): the gap is returned and the text column, when
 * there is one, in *alt, for the caller to try if the gap leads nowhere. */
static long noise_at(const unsigned char *s, size_t len, size_t j, int final,
                     unsigned char want, int *dump, long *alt)
{
    size_t k;
    long n, off;

    *alt = 0;
    if ((n = token_at(breaks, s, len, j, final)) != 0) {
        if (n < 0)
            return -1;
        off = j + (size_t)n < len ? offset_at(s, len, j + (size_t)n, final) : (final ? 0 : -1);
        if (off < 0)
            return -1;
        *dump |= off > 0;
        return n + off;
    }
    if (s[j] == ' ') {
        for (k = j; k < len && s[k] == ' ' && k - j < 3; k++)
            ;
        if (k >= len)
            return final ? 0 : -1;
        if (s[k] == want) {
            if (k - j >= 2 && (n = text_column(s, len, j, k, final)) != 0)
                *alt = n;
            return (long)(k - j);
        }
        if (k - j < 2)
            return 0;
        /* Two spaces or more, a text column, up to the line break. */
        n = text_column(s, len, j, k, final);
        *dump |= n > 0;
        return n;
    }
    if ((n = token_at(escs, s, len, j, final)) <= 0)
        return n;
    k = j + (size_t)n;
    if (k >= len)
        return final ? 0 : -1;
    if (s[k] != '[')
        return 0;
    /* ESC [ parameters (0x30-0x3f), intermediates (0x20-0x2f), final. */
    for (k++; k < len && k - j < NOISE_RUN_MAX; k++) {
        if (s[k] >= 0x40 && s[k] <= 0x7e)
            return (long)(k - j + 1);
        if (s[k] < 0x20 || s[k] > 0x3f)
            return 0;
    }
    return k >= len && !final ? -1 : 0;
}

/* Tries of the alternative reading (noise_at's *alt) one match may nest:
 * the wrong reading dies within a few bytes, this bounds a crafted one. */
#define ALT_DEPTH_MAX 8

/* match_noisy from s[j] and pat[i], skipped bytes of noise so far. */
static long match_from(const unsigned char *pat, size_t plen, const unsigned char *s,
                       size_t len, size_t p, size_t i, size_t j, size_t skipped, int dump,
                       int final, int depth)
{
    long n = 0, alt, r;

    while (i < plen) {
        if (j >= len)
            return final ? 0 : -1;
        if (s[j] == pat[i]) {
            i++;
            j++;
            continue;
        }
        n = noise_at(s, len, j, final, pat[i], &dump, &alt);
        if (n < 0)
            return -1;
        if (alt > 0 && depth < ALT_DEPTH_MAX) {
            r = match_from(pat, plen, s, len, p, i, j + (size_t)n, skipped + (size_t)n, dump,
                           final, depth + 1);
            if (r != 0)
                return r;
            n = alt;
            dump = 1;
        }
        skipped += (size_t)n;
        if (n == 0 || skipped > ABX_MASK_NOISE_MAX)
            return 0;
        j += (size_t)n;
    }
    while (dump && j < len && j - p < plen + ABX_MASK_NOISE_MAX &&
           (n = token_at(breaks, s, len, j, final)) == 0)
        j++;
    if (dump && (n < 0 || (j >= len && !final)))
        return -1;
    return (long)(j - p);
}

/* pat at s[p..), its first i bytes matched and s[p + i] not its next
 * byte: noise (noise_at) there and between its later bytes is skipped.
 * A match through a dump's layout goes on to the end of its last line
 * (that line's text column shows the value's last bytes). The length it
 * spans in s, 0 if it does not match, -1 if undecided (not final, and s
 * ends while it still may match). */
long abx_mask_match_noisy(const unsigned char *pat, size_t plen, const unsigned char *s,
                          size_t len, size_t p, size_t i, int final)
{
    return match_from(pat, plen, s, len, p, i, p + i, 0, 0, final, 0);
}
