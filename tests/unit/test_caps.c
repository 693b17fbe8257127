/* Capability names, the documented sets and E2E_CAPS adjustments
 * (runtime/client/caps.h). */
#include <string.h>

#include "caps.h"
#include "check.h"

#define BIT(c) (1u << (c))

static void names(void)
{
    CHECK_STR(abx_cap_name(ABX_CAP_PAUSE), "pause");
    CHECK_STR(abx_cap_name(ABX_CAP_SIGNED_URLS), "signed-urls");
    CHECK(abx_cap_name(-1) == NULL);
    CHECK(abx_cap_name(ABX_CAP_COUNT) == NULL);
    CHECK_INT(abx_cap_lookup("e2b-proxy", 9), ABX_CAP_E2B_PROXY);
    CHECK_INT(abx_cap_lookup("e2b-proxyx", 9), ABX_CAP_E2B_PROXY);  /* by length */
    CHECK_INT(abx_cap_lookup("Pause", 5), -1);                       /* exact case */
    CHECK_INT(abx_cap_lookup("paus", 4), -1);
    for (int i = 0; i < ABX_CAP_COUNT; i++)
        CHECK(abx_cap_summary(i) && abx_cap_summary(i)[0]);
}

static void platforms(void)
{
    unsigned b = 99;

    CHECK_INT(abx_caps_of_platform("fc", &b), 0);
    CHECK_INT(b, 0);
    CHECK_INT(abx_caps_of_platform("e2b", &b), 0);
    CHECK_INT(b, (1u << ABX_CAP_COUNT) - 1);
    b = 7;
    CHECK_INT(abx_caps_of_platform("FC", &b), -1);
    CHECK_INT(abx_caps_of_platform(NULL, &b), -1);
    CHECK_INT(b, 7);
}

static void adjust(void)
{
    char err[512] = "", out[256];
    unsigned b = 0;

    CHECK_INT(abx_caps_adjust(&b, "+pause, signed-urls", err, sizeof err), 0);
    CHECK_INT(b, BIT(ABX_CAP_PAUSE) | BIT(ABX_CAP_SIGNED_URLS));
    CHECK_INT(abx_caps_adjust(&b, " -pause ", err, sizeof err), 0);
    CHECK_INT(b, BIT(ABX_CAP_SIGNED_URLS));
    CHECK_INT(abx_caps_adjust(&b, "", err, sizeof err), 0);
    CHECK_INT(abx_caps_adjust(&b, "  ", err, sizeof err), 0);
    CHECK_INT(abx_caps_adjust(&b, NULL, err, sizeof err), 0);
    CHECK_INT(b, BIT(ABX_CAP_SIGNED_URLS));
    /* a bad item leaves the set as it was and names itself */
    CHECK_INT(abx_caps_adjust(&b, "+pause,+warp", err, sizeof err), -1);
    CHECK_INT(b, BIT(ABX_CAP_SIGNED_URLS));
    CHECK(strstr(err, "unknown capability 'warp'") != NULL);
    CHECK(strstr(err, "known: pause, signed-urls") != NULL);
    CHECK_INT(abx_caps_adjust(&b, "pause,,e2b-proxy", err, sizeof err), -1);
    CHECK(strstr(err, "empty item") != NULL);
    CHECK_INT(abx_caps_adjust(&b, "pause,", err, sizeof err), -1);
    CHECK_INT(abx_caps_adjust(&b, "+", err, sizeof err), -1);
    CHECK_INT(b, BIT(ABX_CAP_SIGNED_URLS));
    abx_caps_format(b, out, sizeof out);
    CHECK_STR(out, "signed-urls");
    abx_caps_format(0, out, sizeof out);
    CHECK_STR(out, "none");
    abx_caps_format(BIT(ABX_CAP_E2B_MESSAGES) | BIT(ABX_CAP_PAUSE), out, sizeof out);
    CHECK_STR(out, "pause, e2b-messages");
    abx_caps_format((1u << ABX_CAP_COUNT) - 1, out, 10);   /* cut, terminated */
    CHECK(strlen(out) < 10);
}

int main(void)
{
    names();
    platforms();
    adjust();
    return CHECK_DONE();
}
