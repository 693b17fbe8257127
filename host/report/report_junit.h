/* pytest's --junitxml (family xunit2) document:
 *
 * <?xml version="1.0" encoding="utf-8"?>
 * <testsuites name="pytest tests"><testsuite name="abx-e2e" errors="0"
 *   failures="0" skipped="0" tests="0" time="0.000"
 *   timestamp="2026-11-30T20:00:00.000000+00:00" hostname="h">
 *  <testcase classname="tests-lua.test_x.group" name="t" time="0.001">
 *    <failure message="crash line">long text</failure>
 *    <error message="failed on setup with &quot;msg&quot;">long</error>
 *    <skipped type="pytest.skip" message="why">path:line: why</skipped>
 *    <skipped type="pytest.xfail" message="why"/>
 *    <system-out>captured output (failures and errors only)</system-out>
 *  </testcase></testsuite></testsuites>
 *
 * As in pytest, a test FAILED in call and ERROR at teardown yields two
 * <testcase> elements (failure, then error) but counts once in tests=;
 * a strict XPASS is a <failure message="[XPASS(strict)] reason">.
 * Text is escaped for XML 1.0: characters not allowed in XML 1.0 (and
 * DEL) become the visible text "#xNN" / "#xNNNN", exactly as pytest's
 * bin_xml_escape does; invalid UTF-8 bytes become "#xNN" too, so the file
 * always parses. */
#ifndef ABX_REPORT_JUNIT_H
#define ABX_REPORT_JUNIT_H

#include <stddef.h>
#include <time.h>

#include "buf.h"
#include "report_doc.h"

/* Appends the document to out. 0 or -1 (out full / out of memory). */
/* The testsuite: timestamp r->created (0: now), time the summary's
 * duration; <properties> "platform" and "capabilities" (", "-joined,
 * "none" when empty) when the report has either. hostname NULL:
 * gethostname(). */
int abx_junit_write(struct abx_buf *out, const struct abx_report *r, const char *hostname);

/* Appends s[0..len) escaped for XML text or attribute values (quotes
 * escaped too). Exposed for tests and other XML-ish sinks. */
int abx_xml_escape(struct abx_buf *out, const char *s, size_t len);

#endif
