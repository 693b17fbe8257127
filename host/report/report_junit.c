/* JUnit XML in the shape pytest's junitxml plugin (family xunit2) writes,
 * so CI tools that read pytest reports read ours unchanged. */
#include "report_junit.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "escape.h"

static int escape(struct abx_buf *o, const char *s, size_t len, int attr)
{
    return abx_esc_xml(o, s, len, attr ? ABX_ESC_XML_ATTR : 0);
}

int abx_xml_escape(struct abx_buf *out, const char *s, size_t len)
{
    return escape(out, s, len, 1);
}

static int attr(struct abx_buf *o, const char *name, const char *v)
{
    if (!v)
        v = "";
    return abx_buf_appendf(o, " %s=\"", name) || escape(o, v, strlen(v), 1) ||
           abx_buf_appendc(o, '"');
}

static int text(struct abx_buf *o, const char *v)
{
    return v ? escape(o, v, strlen(v), 0) : 0;
}

/* <tag message="msg">body</tag>, or self-closing without a body. */
static int simple(struct abx_buf *o, const char *tag, const char *type,
                  const char *msg, const char *body)
{
    int rc = abx_buf_appendf(o, "<%s", tag);

    if (!rc && type)
        rc = attr(o, "type", type);
    if (!rc)
        rc = attr(o, "message", msg);
    if (rc)
        return rc;
    if (!body || !*body)
        return abx_buf_appends(o, " />");
    return abx_buf_appendc(o, '>') || text(o, body) ||
           abx_buf_appendf(o, "</%s>", tag);
}

/* <properties> as pytest's record_property writes them: the ids of the
 * sandboxes a failed test used, space-separated. */
static int properties(struct abx_buf *o, const struct abx_result *r)
{
    size_t i;
    int rc;

    if (r->sandbox_ids.n == 0)
        return 0;
    rc = abx_buf_appends(o, "<properties><property name=\"sandboxes\" "
                            "value=\"");
    for (i = 0; !rc && i < r->sandbox_ids.n; i++) {
        const char *id = r->sandbox_ids.items[i];
        rc = (i && abx_buf_appendc(o, ' ')) || escape(o, id, strlen(id), 1);
    }
    return rc || abx_buf_appends(o, "\" /></properties>");
}

static int open_case(struct abx_buf *o, const struct abx_result *r,
                     double t)
{
    const char *name = r->name ? r->name : r->nodeid;

    return abx_buf_appends(o, "<testcase") ||
           attr(o, "classname", r->classname) || attr(o, "name", name) ||
           abx_buf_appendf(o, " time=\"%.3f\">", t) || properties(o, r);
}

/* message='failed on <phase> with "<msg>"' as pytest's append_error. */
static int error_el(struct abx_buf *o, const char *phase, const char *msg,
                    const char *body)
{
    struct abx_buf m;
    int rc;

    abx_buf_init(&m, 0);
    rc = abx_buf_appendf(&m, "failed on %s with \"%s\"", phase,
                         msg ? msg : "");
    if (!rc)
        rc = simple(o, "error", NULL, m.data, body ? body : msg);
    abx_buf_free(&m);
    return rc;
}

static int system_out(struct abx_buf *o, const struct abx_result *r)
{
    if (!r->output || !*r->output)
        return 0;
    return abx_buf_appends(o, "<system-out>") || text(o, r->output) ||
           abx_buf_appends(o, "</system-out>");
}

struct counts {
    unsigned errors, failures, skipped;
};

/* The earlier attempts of a rerun test as Maven Surefire writes them
 * (what Jenkins and GitLab render): flakyFailure / flakyError when it
 * passed in the end, rerunFailure / rerunError when it did not; each with
 * its message, <stackTrace> and <system-out>. */
static int attempts_els(struct abx_buf *o, const struct abx_result *r)
{
    int flaky = r->outcome == ABX_OUTCOME_FLAKY;

    for (size_t i = 0; i < r->nattempts; i++) {
        const struct abx_attempt *a = &r->attempts[i];
        const char *tag = a->outcome == ABX_OUTCOME_ERROR
                              ? (flaky ? "flakyError" : "rerunError")
                              : (flaky ? "flakyFailure" : "rerunFailure");
        if (abx_buf_appendf(o, "<%s", tag) ||
            attr(o, "message", a->message ? a->message : "") ||
            attr(o, "type", a->outcome == ABX_OUTCOME_ERROR ? "error"
                                                            : "failure") ||
            abx_buf_appends(o, ">"))
            return -1;
        if (a->longrepr && *a->longrepr &&
            (abx_buf_appends(o, "<stackTrace>") || text(o, a->longrepr) ||
             abx_buf_appends(o, "</stackTrace>")))
            return -1;
        if (a->output && *a->output &&
            (abx_buf_appends(o, "<system-out>") || text(o, a->output) ||
             abx_buf_appends(o, "</system-out>")))
            return -1;
        if (abx_buf_appendf(o, "</%s>", tag))
            return -1;
    }
    return 0;
}

/* Writes the testcase element(s) of one result. */
static int write_case(struct abx_buf *o, const struct abx_result *r,
                      struct counts *k)
{
    struct abx_buf tmp;
    const char *why = r->reason ? r->reason : "";
    int rc = 0, double_case = 0;

    abx_buf_init(&tmp, 0);
    switch (r->outcome) {
    case ABX_OUTCOME_FAILED:
        /* pytest opens a second testcase for the teardown error, since a
         * testcase may hold only one failure/error. */
        double_case = r->teardown_message != NULL;
        rc = open_case(o, r, double_case ? r->dur_setup + r->dur_call
                                         : abx_result_duration(r));
        if (r->xpass_strict && !r->message)
            rc = rc || abx_buf_appendf(&tmp, "[XPASS(strict)] %s", why);
        else
            rc = rc || abx_buf_appends(&tmp, r->message ? r->message : "");
        rc = rc || simple(o, "failure", NULL, tmp.data,
                          r->longrepr ? r->longrepr : tmp.data);
        k->failures++;
        break;
    case ABX_OUTCOME_ERROR:
        rc = open_case(o, r, abx_result_duration(r));
        if (r->when == ABX_PHASE_COLLECT)
            rc = rc || simple(o, "error", NULL, "collection failure",
                              r->longrepr ? r->longrepr : r->message);
        else
            rc = rc || error_el(o,
                                r->when == ABX_PHASE_TEARDOWN ? "teardown"
                                                              : "setup",
                                r->message, r->longrepr);
        k->errors++;
        break;
    case ABX_OUTCOME_SKIPPED:
        rc = open_case(o, r, abx_result_duration(r));
        if (r->skip_loc)
            rc = rc || abx_buf_appendf(&tmp, "%s: %s", r->skip_loc, why);
        else
            rc = rc || abx_buf_appendf(&tmp, "%s:%d: %s",
                                       r->file ? r->file : "", r->line, why);
        rc = rc || simple(o, "skipped", "pytest.skip", why, tmp.data);
        k->skipped++;
        break;
    case ABX_OUTCOME_XFAILED:
        rc = open_case(o, r, abx_result_duration(r)) ||
             simple(o, "skipped", "pytest.xfail", why, NULL);
        k->skipped++;
        break;
    default:  /* passed, xpassed, flaky (a pass, with its attempts) */
        rc = open_case(o, r, abx_result_duration(r));
        break;
    }
    rc = rc || attempts_els(o, r);
    if (!rc && double_case)
        rc = system_out(o, r) || abx_buf_appends(o, "</testcase>") ||
             open_case(o, r, r->dur_teardown);
    if (!rc && r->teardown_message) {
        rc = error_el(o, "teardown", r->teardown_message,
                      r->teardown_longrepr);
        k->errors++;
    }
    if (!rc && !double_case && abx_result_is_failure(r))
        rc = system_out(o, r);
    rc = rc || abx_buf_appends(o, "</testcase>");
    abx_buf_free(&tmp);
    return rc;
}

static int property(struct abx_buf *out, const char *name, const char *value)
{
    return abx_buf_appends(out, "<property") || attr(out, "name", name) ||
                   attr(out, "value", value) || abx_buf_appends(out, "/>")
               ? -1 : 0;
}

/* What the run could rely on, as the properties CI tools show. */
static int write_properties(struct abx_buf *out, const struct abx_report *r)
{
    struct abx_buf caps;
    int rc;

    if (!r->platform && !r->capabilities)
        return 0;
    abx_buf_init(&caps, out->max);
    for (size_t i = 0; r->capabilities && r->capabilities[i]; i++)
        if (abx_buf_appendf(&caps, "%s%s", i ? ", " : "", r->capabilities[i]))
            break;
    rc = abx_buf_appends(out, "<properties>") ||
                 property(out, "platform", r->platform ? r->platform : "") ||
                 property(out, "capabilities", caps.len ? abx_buf_cstr(&caps) : "none") ||
                 abx_buf_appends(out, "</properties>")
             ? -1 : 0;
    abx_buf_free(&caps);
    return rc;
}

int abx_junit_write(struct abx_buf *out, const struct abx_report *r, const char *hostname)
{
    struct abx_result *const *results = r->results;
    size_t n = r->n;
    struct abx_buf cases;
    struct counts k = {0, 0, 0};
    char host[256] = "", ts[64];
    time_t when;
    struct tm tm;
    size_t i, oldlen = out->len;
    int rc = -1;

    abx_buf_init(&cases, out->max);
    for (i = 0; i < n; i++)
        if (write_case(&cases, results[i], &k))
            goto out;
    if (!hostname) {
        if (gethostname(host, sizeof(host) - 1) != 0)
            host[0] = '\0';
        hostname = host;
    }
    when = r->created > 0 ? (time_t)r->created : time(NULL);
    if (!gmtime_r(&when, &tm) ||
        !strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S.000000+00:00", &tm))
        ts[0] = '\0';
    /* tests= counts each test once even when it yields two testcases. */
    if (abx_buf_appends(out, "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
                             "<testsuites name=\"pytest tests\"><testsuite") ||
        attr(out, "name", "abx-e2e") ||
        abx_buf_appendf(out,
                        " errors=\"%u\" failures=\"%u\" skipped=\"%u\""
                        " tests=\"%zu\" time=\"%.3f\"",
                        k.errors, k.failures, k.skipped, n,
                        r->sum ? r->sum->duration : 0.0) ||
        attr(out, "timestamp", ts) || attr(out, "hostname", hostname) ||
        abx_buf_appendc(out, '>') || write_properties(out, r) ||
        abx_buf_append(out, cases.data ? cases.data : "", cases.len) ||
        abx_buf_appends(out, "</testsuite></testsuites>\n"))
        goto out;
    rc = 0;
out:
    if (rc) {
        out->len = oldlen;
        if (out->data)
            out->data[oldlen] = '\0';
    }
    abx_buf_free(&cases);
    return rc;
}
