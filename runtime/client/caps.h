/* Platform capabilities (docs/capabilities.md): what the suite may rely on
 * beyond E2B's core contract. A platform declares them, the suite never
 * probes them: E2E_PLATFORM=fc|e2b picks the documented set, E2E_CAPS
 * ("+pause,-signed-urls") adjusts it, and a test that needs one absent
 * capability is skipped naming it. A broken feature must fail, not skip. */
#ifndef ABX_CAPS_H
#define ABX_CAPS_H

#include <stddef.h>

enum abx_cap {
    ABX_CAP_PAUSE,          /* pause / resume (FC: allow-listed accounts) */
    ABX_CAP_SIGNED_URLS,    /* signed file URLs honoured on secure sandboxes */
    ABX_CAP_E2B_PROXY,      /* E2B's exact data-plane error bodies */
    ABX_CAP_E2B_MESSAGES,   /* E2B's exact error message wording */
    ABX_CAP_COUNT
};

#define ABX_CAPS_DEFAULT_PLATFORM "fc"

/* "pause", "signed-urls", ...; NULL out of range. */
const char *abx_cap_name(int cap);
/* One line saying what the capability means. */
const char *abx_cap_summary(int cap);
/* The capability named (exact, lower case), or -1. */
int abx_cap_lookup(const char *name, size_t len);

/* The documented set of platform "fc" or "e2b" as a bit set (1u << cap).
 * 0, or -1 for another name. */
int abx_caps_of_platform(const char *platform, unsigned *bits);
/* Applies an E2E_CAPS adjustment to *bits: a comma-separated list of
 * "+name", "-name" or "name" (= +name); spaces around items are ignored,
 * an empty spec changes nothing. 0, or -1 with err naming the bad item
 * and the known names (*bits unchanged then). */
int abx_caps_adjust(unsigned *bits, const char *spec, char *err,
                    size_t errlen);
/* "pause, signed-urls" (declaration order), or "none". */
void abx_caps_format(unsigned bits, char *out, size_t outlen);

#endif
