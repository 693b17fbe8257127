/* Platform capabilities: names, documented sets, E2E_CAPS adjustments
 * (docs/capabilities.md). */
#include <stdio.h>
#include <string.h>

#include "caps.h"

static const struct {
    const char *name, *summary;
} caps[ABX_CAP_COUNT] = {
    [ABX_CAP_PAUSE] = {"pause", "pause and resume (FC: allow-listed accounts, "
                                "not on the Eco plan)"},
    [ABX_CAP_SIGNED_URLS] = {"signed-urls", "signed file URLs honoured on "
                                            "secure sandboxes"},
    [ABX_CAP_E2B_PROXY] = {"e2b-proxy", "E2B's exact data-plane error bodies "
                                        "(JSON 502s, its HTML page)"},
    [ABX_CAP_E2B_MESSAGES] = {"e2b-messages", "E2B's exact error message "
                                              "wording"},
};

const char *abx_cap_name(int cap)
{
    return cap >= 0 && cap < ABX_CAP_COUNT ? caps[cap].name : NULL;
}

const char *abx_cap_summary(int cap)
{
    return cap >= 0 && cap < ABX_CAP_COUNT ? caps[cap].summary : NULL;
}

int abx_cap_lookup(const char *name, size_t len)
{
    for (int i = 0; i < ABX_CAP_COUNT; i++)
        if (strlen(caps[i].name) == len && memcmp(caps[i].name, name, len) == 0)
            return i;
    return -1;
}

int abx_caps_of_platform(const char *platform, unsigned *bits)
{
    if (!platform)
        return -1;
    /* FC documents none of them: pause is allow-listed, envd is 0.5.2,
     * signed URLs are not honoured on secure sandboxes, its error bodies
     * and texts are its own (docs/capabilities.md). */
    if (strcmp(platform, "fc") == 0) {
        *bits = 0;
        return 0;
    }
    if (strcmp(platform, "e2b") == 0) {
        *bits = (1u << ABX_CAP_COUNT) - 1;
        return 0;
    }
    return -1;
}

static void known_names(char *out, size_t outlen)
{
    abx_caps_format((1u << ABX_CAP_COUNT) - 1, out, outlen);
}

int abx_caps_adjust(unsigned *bits, const char *spec, char *err,
                    size_t errlen)
{
    unsigned b = *bits;
    const char *p = spec ? spec : "";

    if (p[strspn(p, " \t")] == '\0')
        return 0;   /* unset or blank: the platform's set as documented */
    for (;;) {
        const char *end = strchr(p, ','), *s = p, *e;
        int add = 1, cap;

        if (!end)
            end = p + strlen(p);
        while (s < end && (*s == ' ' || *s == '\t'))
            s++;
        e = end;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (s < e && (*s == '+' || *s == '-')) {
            add = *s == '+';
            s++;
        }
        if (s == e) {
            snprintf(err, errlen, "E2E_CAPS: empty item in '%.200s' "
                     "(expected +name or -name, comma-separated)", spec);
            return -1;
        }
        cap = abx_cap_lookup(s, (size_t)(e - s));
        if (cap < 0) {
            char names[256];
            known_names(names, sizeof names);
            snprintf(err, errlen, "E2E_CAPS: unknown capability '%.*s' "
                     "(known: %s)", (int)(e - s > 64 ? 64 : e - s), s,
                     names);
            return -1;
        }
        if (add)
            b |= 1u << cap;
        else
            b &= ~(1u << cap);
        if (!*end)
            break;
        p = end + 1;
    }
    *bits = b;
    return 0;
}

void abx_caps_format(unsigned bits, char *out, size_t outlen)
{
    size_t used = 0;

    if (outlen == 0)
        return;
    out[0] = '\0';
    for (int i = 0; i < ABX_CAP_COUNT; i++) {
        if (!(bits & (1u << i)))
            continue;
        int k = snprintf(out + used, outlen - used, "%s%s",
                         used ? ", " : "", caps[i].name);
        if (k < 0 || (size_t)k >= outlen - used)
            return;
        used += (size_t)k;
    }
    if (!used)
        snprintf(out, outlen, "none");
}
