/* Upload throughput and client memory of abx_envd_upload: one sandbox on
 * the platform named by E2B_* (bench/upload_bench.sh starts abx-local),
 * one local file of N MiB, uploaded once in the given mode:
 *   octet      the sandbox's envd taken as 0.6.4 (octet-stream body)
 *   multipart  taken as 0.5.2 (the fallback: one streamed multipart part)
 *   auto       the envdVersion the platform reports
 * Prints MiB/s and the process's peak RSS before and after the upload
 * (VmHWM): a streamed upload leaves the peak where it was. Figures only;
 * nothing is asserted.
 *   upload_bench MODE MIB */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "envd.h"
#include "http.h"

static long hwm_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

static const char *env(const char *k)
{
    const char *v = getenv(k);
    return v ? v : "";
}

/* n MiB of non-repeating-ish bytes, written 1 MiB at a time. */
static int make_file(char *path, size_t pathlen, long mib)
{
    static unsigned char block[1 << 20];
    FILE *f;
    int fd;

    snprintf(path, pathlen, "/tmp/abx-upload-bench-XXXXXX");
    if ((fd = mkstemp(path)) < 0 || !(f = fdopen(fd, "wb")))
        return -1;
    for (long i = 0; i < mib; i++) {
        for (size_t j = 0; j < sizeof block; j += 8)
            memcpy(block + j, &(unsigned long long){(unsigned long long)i *
                                                    1000003u + j}, 8);
        if (fwrite(block, 1, sizeof block, f) != sizeof block) {
            fclose(f);
            return -1;
        }
    }
    return fclose(f);
}

int main(int argc, char **argv)
{
    struct abx_platform p;
    struct abx_create_opts o;
    struct abx_sandbox_info info;
    struct abx_endpoint ep;
    struct abx_err err;
    char msg[256], local[64];
    const char *mode = argc > 1 ? argv[1] : "auto";
    long mib = argc > 2 ? strtol(argv[2], NULL, 10) : 100;
    long before, after;
    cJSON *wi = NULL, *entry = NULL, *size_j;
    double t0, t;
    int rc = 1;

    if (mib < 1 || mib > 4096 || (strcmp(mode, "octet") != 0 &&
                                  strcmp(mode, "multipart") != 0 &&
                                  strcmp(mode, "auto") != 0)) {
        fprintf(stderr, "usage: upload_bench octet|multipart|auto MIB\n");
        return 2;
    }
    if (abx_platform_init(&p, env("E2B_API_KEY"), env("E2B_API_URL"),
                          env("E2B_DOMAIN"), env("E2B_SANDBOX_URL"), msg,
                          sizeof msg)) {
        fprintf(stderr, "upload_bench: %s\n", msg);
        return 1;
    }
    if (make_file(local, sizeof local, mib)) {
        fprintf(stderr, "upload_bench: cannot write %s\n", local);
        return 1;
    }
    memset(&o, 0, sizeof o);
    o.template_id = "base";
    o.timeout = 300;
    o.secure = 1;
    o.allow_internet = -1;
    if (abx_api_create(&p, &o, &info, &err)) {
        fprintf(stderr, "upload_bench: create: %s\n", err.message);
        unlink(local);
        return 1;
    }
    if (abx_endpoint_init(&ep, &p, &info, ABX_ENVD_PORT, &err))
        goto out;
    if (strcmp(mode, "octet") == 0)
        abx_envd_version_parse("0.6.4", &ep.ver);
    else if (strcmp(mode, "multipart") == 0)
        abx_envd_version_parse("0.5.2", &ep.ver);
    before = hwm_kib();
    t0 = abx_http_now();
    if (abx_envd_upload(&ep, local, "/tmp/bench.bin", NULL, &wi, &err))
        goto out_ep;
    t = abx_http_now() - t0;
    after = hwm_kib();
    if (abx_envd_stat(&ep, "/tmp/bench.bin", NULL, &entry, &err))
        goto out_ep;
    /* int64 fields come as JSON strings from a Connect server */
    size_j = cJSON_GetObjectItem(entry, "size");
    if ((cJSON_IsString(size_j) ? strtoll(size_j->valuestring, NULL, 10)
                                : (long long)cJSON_GetNumberValue(size_j)) !=
        (long long)mib << 20) {
        fprintf(stderr, "upload_bench: remote size differs\n");
        goto out_ep;
    }
    printf("upload %-9s envd %-6s %4ld MiB in %6.2f s = %7.1f MiB/s, "
           "peak RSS %5.1f MiB (%5.1f before the upload)\n",
           mode, ep.ver.text, mib, t, (double)mib / t, after / 1024.0,
           before / 1024.0);
    rc = 0;
out_ep:
    abx_endpoint_free(&ep);
out:
    if (rc)
        fprintf(stderr, "upload_bench: %s: %s\n", abx_errclass_name(err.cls),
                err.message);
    cJSON_Delete(wi);
    cJSON_Delete(entry);
    abx_api_kill(&p, info.sandbox_id, &err);
    abx_sandbox_info_free(&info);
    unlink(local);
    abx_http_shutdown();
    return rc;
}
