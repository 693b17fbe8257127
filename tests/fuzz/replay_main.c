/* Corpus replay without libFuzzer: runs LLVMFuzzerTestOneInput over every
 * regular file of the directories (or files) given, in name order, so a
 * plain gcc build checks the committed corpus in normal CI. A crash or a
 * failed property aborts, which fails the ctest case. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Corpus files are small; anything bigger is a mistake in the corpus. */
#define REPLAY_MAX_FILE ((size_t)1 << 20)

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t n = 0;
    int rc = -1;

    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    buf = malloc(REPLAY_MAX_FILE + 1);
    if (!buf)
        goto out;
    n = fread(buf, 1, REPLAY_MAX_FILE + 1, f);
    if (ferror(f) || n > REPLAY_MAX_FILE) {
        fprintf(stderr, "replay: %s: unreadable or over 1 MiB\n", path);
        goto out;
    }
    /* An exact-size copy, so ASan sees reads past the input's end. */
    {
        unsigned char *exact = malloc(n ? n : 1);

        if (!exact)
            goto out;
        memcpy(exact, buf, n);
        LLVMFuzzerTestOneInput(exact, n);
        free(exact);
    }
    rc = 0;
out:
    free(buf);
    fclose(f);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Returns the number of files replayed, -1 on error. */
static long run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL, **tmp, path[4096];
    size_t n = 0, cap = 0, i;
    long count = -1;
    struct stat st;

    if (!d) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            tmp = realloc(names, cap * sizeof(*names));
            if (!tmp)
                goto out;
            names = tmp;
        }
        names[n] = strdup(e->d_name);
        if (!names[n])
            goto out;
        n++;
    }
    if (n)
        qsort(names, n, sizeof(*names), by_name);
    count = 0;
    for (i = 0; i < n; i++) {
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >=
            sizeof path) {
            count = -1;
            goto out;
        }
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (run_file(path)) {
            count = -1;
            goto out;
        }
        count++;
    }
out:
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return count;
}

int main(int argc, char **argv)
{
    long total = 0, k;
    struct stat st;
    int i;

    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
        return 2;
    }
    for (i = 1; i < argc; i++) {
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        if (S_ISDIR(st.st_mode))
            k = run_dir(argv[i]);
        else
            k = run_file(argv[i]) ? -1 : 1;
        if (k < 0)
            return 1;
        total += k;
    }
    /* An empty corpus would make the test pass vacuously. */
    if (total == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    printf("replay: %ld input(s) ran clean\n", total);
    return 0;
}
