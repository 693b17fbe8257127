/* Results, summary line, result JSON round trip, JUnit XML and the JSON
 * report (both also checked by python3's own parsers). */
#include "check.h"
#include "fsutil.h"
#include "mask.h"
#include "report_html.h"
#include "report_json.h"
#include "report_junit.h"
#include "result.h"

#include <stdlib.h>
#include <unistd.h>

static struct abx_result *mk(const char *name, enum abx_outcome o,
                             enum abx_phase when)
{
    static const char *const groups[] = {"group", "sub"};
    struct abx_result *r = abx_result_new();

    CHECK_INT(abx_result_set_identity(r, "tests-lua/test_03_commands.lua", 12,
                                      groups, 2, name),
              0);
    r->outcome = o;
    r->when = when;
    r->dur_setup = 0.001;
    r->dur_call = 0.25;
    r->dur_teardown = 0.002;
    return r;
}

static const char *line(const struct abx_summary *s)
{
    static char buf[256];

    abx_summary_line(s, buf, sizeof(buf));
    return buf;
}

static void test_summary(void)
{
    struct abx_summary s;
    char small[8];

    abx_summary_init(&s);
    CHECK_STR(line(&s), "no tests ran in 0.00s");
    CHECK_INT(abx_summary_exit_code(&s, 0), ABX_EXIT_NO_TESTS_COLLECTED);
    s.deselected = 3;
    CHECK_STR(line(&s), "3 deselected in 0.00s");
    CHECK_INT(abx_summary_exit_code(&s, 0), ABX_EXIT_NO_TESTS_COLLECTED);
    s.counts[ABX_OUTCOME_PASSED] = 120;
    s.duration = 1.234;
    CHECK_STR(line(&s), "120 passed, 3 deselected in 1.23s");
    CHECK_INT(abx_summary_exit_code(&s, 0), ABX_EXIT_OK);
    CHECK_INT(abx_summary_exit_code(&s, 1), ABX_EXIT_INTERRUPTED);
    s.counts[ABX_OUTCOME_FAILED] = 3;
    s.counts[ABX_OUTCOME_SKIPPED] = 4;
    s.counts[ABX_OUTCOME_XFAILED] = 1;
    s.counts[ABX_OUTCOME_XPASSED] = 2;
    s.counts[ABX_OUTCOME_ERROR] = 1;
    s.teardown_errors = 1;
    s.warnings = 1;
    s.rerun = 2;
    s.duration = 81.219;
    CHECK_STR(line(&s), "3 failed, 120 passed, 4 skipped, 3 deselected, "
                        "1 xfailed, 2 xpassed, 1 warning, 2 errors, 2 rerun "
                        "in 81.22s (0:01:21)");
    CHECK_INT(abx_summary_exit_code(&s, 0), ABX_EXIT_TESTS_FAILED);
    abx_summary_init(&s);
    s.counts[ABX_OUTCOME_ERROR] = 1;
    s.warnings = 2;
    s.duration = 90061.5;
    CHECK_STR(line(&s), "2 warnings, 1 error in 90061.50s (1 day, 1:01:01)");
    CHECK_INT(abx_summary_exit_code(&s, 0), ABX_EXIT_TESTS_FAILED);
    CHECK_INT(abx_summary_line(&s, small, sizeof(small)),
              (int)strlen(line(&s)));
    CHECK_STR(small, "2 warni");
}

static void test_identity_and_add(void)
{
    struct abx_result *r = mk("runs echo", ABX_OUTCOME_PASSED, ABX_PHASE_NONE);
    struct abx_summary s;

    CHECK_STR(r->nodeid,
              "tests-lua/test_03_commands.lua::group::sub::runs echo");
    CHECK_STR(r->classname, "tests-lua.test_03_commands.group.sub");
    CHECK_STR(r->file, "tests-lua/test_03_commands.lua");
    CHECK_STR(r->name, "runs echo");
    CHECK_INT((int)r->groups.n, 2);
    CHECK_INT(r->worker, -1);
    CHECK(!abx_result_is_failure(r));
    abx_summary_init(&s);
    abx_summary_add(&s, r);
    CHECK_INT(abx_result_set(&r->teardown_message, "boom"), 0);
    CHECK(abx_result_is_failure(r));
    abx_summary_add(&s, r);
    CHECK_STR(line(&s), "2 passed, 1 error in 0.00s");
    CHECK_INT(abx_result_set(&r->teardown_message, NULL), 0);
    CHECK(r->teardown_message == NULL);
    CHECK_INT(abx_outcome_parse("xpassed"), ABX_OUTCOME_XPASSED);
    CHECK_INT(abx_outcome_parse("nope"), -1);
    CHECK_STR(abx_outcome_name(ABX_OUTCOME_ERROR), "error");
    CHECK_INT(abx_phase_parse("teardown"), ABX_PHASE_TEARDOWN);
    abx_result_free(r);
    /* no groups, no .lua suffix */
    r = abx_result_new();
    CHECK_INT(abx_result_set_identity(r, "a/b/test_x", 0, NULL, 0, "t"), 0);
    CHECK_STR(r->nodeid, "a/b/test_x::t");
    CHECK_STR(r->classname, "a.b.test_x");
    abx_result_free(r);
}

static void test_json_roundtrip(void)
{
    struct abx_result *r = mk("t \"q\"", ABX_OUTCOME_FAILED, ABX_PHASE_CALL);
    struct abx_result *b;
    cJSON *j, *p;
    char *text, err[128];

    abx_result_set(&r->message, "expected 1, got 2");
    abx_result_set(&r->longrepr, "trace\nline 2");
    abx_result_set(&r->output, "out\x01\xff");
    abx_result_set(&r->teardown_message, "td");
    abx_strlist_push(&r->markers, "e2e");
    abx_strlist_push(&r->sandbox_ids, "sbx-1");
    r->xpass_strict = 1;
    r->rerun = 2;
    r->worker = 3;
    j = abx_result_to_json(r);
    CHECK(j != NULL);
    text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    p = cJSON_Parse(text);
    CHECK_INT(abx_result_from_json(p, &b, err, sizeof(err)), 0);
    CHECK_STR(b->nodeid, r->nodeid);
    CHECK_STR(b->classname, r->classname);
    CHECK_INT(b->outcome, ABX_OUTCOME_FAILED);
    CHECK_INT(b->when, ABX_PHASE_CALL);
    CHECK_INT(b->line, 12);
    CHECK_STR(b->message, "expected 1, got 2");
    CHECK_STR(b->longrepr, "trace\nline 2");
    CHECK_STR(b->output, "out\x01\xff");
    CHECK_STR(b->teardown_message, "td");
    CHECK(b->reason == NULL);
    CHECK(b->xpass_strict == 1 && b->rerun == 2 && b->worker == 3);
    CHECK(b->dur_call == 0.25);
    CHECK(b->groups.n == 2 && !strcmp(b->groups.items[1], "sub"));
    CHECK(abx_strlist_contains(&b->markers, "e2e"));
    CHECK(abx_strlist_contains(&b->sandbox_ids, "sbx-1"));
    abx_result_free(b);
    cJSON_Delete(p);
    cJSON_free(text);
    abx_result_free(r);

#define BAD(js, key)                                                      \
    do {                                                                  \
        p = cJSON_Parse(js);                                              \
        CHECK_INT(abx_result_from_json(p, &b, err, sizeof(err)), -1);     \
        CHECK(b == NULL);                                                 \
        CHECK(strstr(err, key) != NULL);                                  \
        cJSON_Delete(p);                                                  \
    } while (0)
    BAD("[]", "not a JSON object");
    BAD("{\"outcome\":\"passed\"}", "nodeid");
    BAD("{\"nodeid\":\"x\",\"outcome\":\"weird\"}", "outcome");
    BAD("{\"nodeid\":\"x\",\"outcome\":\"passed\",\"line\":\"7\"}", "line");
    BAD("{\"nodeid\":\"x\",\"outcome\":\"passed\",\"markers\":[1]}",
        "markers");
    BAD("{\"nodeid\":\"x\",\"outcome\":\"passed\",\"when\":\"lunch\"}",
        "when");
    BAD("{\"nodeid\":\"x\",\"outcome\":\"passed\","
        "\"durations\":{\"call\":-1}}",
        "durations.call");
    p = cJSON_Parse("{\"nodeid\":\"x\",\"outcome\":\"skipped\"}");
    CHECK_INT(abx_result_from_json(p, &b, err, sizeof(err)), 0);
    CHECK_INT(b->outcome, ABX_OUTCOME_SKIPPED);
    abx_result_free(b);
    cJSON_Delete(p);
}

/* Runs python3 code on a file; returns its exit status. */
static int py(const char *code, const char *path)
{
    char cmd[2048];

    snprintf(cmd, sizeof(cmd), "python3 -c '%s' '%s'", code, path);
    return system(cmd);
}

/* The JUnit document of rs[0..n) with the report's other fields. */
static int junit(struct abx_buf *out, struct abx_report *r, struct abx_result **rs, size_t n)
{
    r->results = rs;
    r->n = n;
    return abx_junit_write(out, r, "host<1>");
}

static void test_junit(const char *dir)
{
    struct abx_result *rs[8];
    static const char *const caps[] = {"a<b", NULL};
    struct abx_summary sum = {.duration = 2.5};
    struct abx_report o = {.created = 1764535692, .sum = &sum, .platform = "fc",
                           .capabilities = caps};
    struct abx_buf x;
    char path[256], err[256];
    const char *doc;
    size_t i;

    rs[0] = mk("passes", ABX_OUTCOME_PASSED, ABX_PHASE_NONE);
    rs[1] = mk("fails <&> \"q\"", ABX_OUTCOME_FAILED, ABX_PHASE_CALL);
    abx_result_set(&rs[1]->message, "assert 1 == 2 \x01 bad\xff");
    abx_result_set(&rs[1]->longrepr, "line1\nline2 <x> & \x1b[31m");
    abx_result_set(&rs[1]->output, "captured ]]> out\n");
    abx_result_set(&rs[1]->teardown_message, "kill failed");
    abx_result_set(&rs[1]->teardown_longrepr, "td trace");
    rs[2] = mk("setup err", ABX_OUTCOME_ERROR, ABX_PHASE_SETUP);
    abx_result_set(&rs[2]->message, "fixture \"x\" broke");
    rs[3] = mk("skipped", ABX_OUTCOME_SKIPPED, ABX_PHASE_SETUP);
    abx_result_set(&rs[3]->reason, "missing credentials");
    rs[4] = mk("xfail", ABX_OUTCOME_XFAILED, ABX_PHASE_CALL);
    abx_result_set(&rs[4]->reason, "KI-001");
    rs[5] = mk("strict", ABX_OUTCOME_FAILED, ABX_PHASE_CALL);
    rs[5]->xpass_strict = 1;
    abx_result_set(&rs[5]->reason, "KI-002");
    rs[6] = mk("passes but teardown", ABX_OUTCOME_PASSED, ABX_PHASE_NONE);
    abx_result_set(&rs[6]->teardown_message, "sweep failed");
    rs[7] = mk("xpass", ABX_OUTCOME_XPASSED, ABX_PHASE_CALL);

    abx_buf_init(&x, 0);
    CHECK_INT(junit(&x, &o, rs, 8), 0);
    doc = abx_buf_cstr(&x);
    CHECK_MSG(strncmp(doc, "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
                           "<testsuites name=\"pytest tests\"><testsuite "
                           "name=\"abx-e2e\" errors=\"3\" failures=\"2\" "
                           "skipped=\"2\" tests=\"8\" time=\"2.500\" "
                           "timestamp=\"2025-11-30T20:48:12.000000+00:00\" "
                           "hostname=\"host&lt;1&gt;\">",
                      200) == 0, "JUnit head: %s", doc ? doc : "(null)");
    CHECK(strstr(doc, "hostname=\"host&lt;1&gt;\"><properties><property "
                      "name=\"platform\" value=\"fc\"/><property name=\""
                      "capabilities\" value=\"a&lt;b\"/></properties><testcase"));
    CHECK(strstr(doc, "<testcase classname=\"tests-lua.test_03_commands.group"
                      ".sub\" name=\"passes\" time=\"0.253\"></testcase>"));
    CHECK(strstr(doc, "name=\"fails &lt;&amp;&gt; &quot;q&quot;\" "
                      "time=\"0.251\"><failure message=\"assert 1 == 2 #x01 "
                      "bad#xFF\">line1\nline2 &lt;x&gt; &amp; #x1B[31m"
                      "</failure><system-out>captured ]]&gt; out\n"
                      "</system-out></testcase>"));
    /* second testcase of the same test for its teardown error */
    CHECK(strstr(doc, "name=\"fails &lt;&amp;&gt; &quot;q&quot;\" "
                      "time=\"0.002\"><error message=\"failed on teardown "
                      "with &quot;kill failed&quot;\">td trace</error>"
                      "</testcase>"));
    CHECK(strstr(doc, "<error message=\"failed on setup with &quot;fixture "
                      "&quot;x&quot; broke&quot;\">fixture &quot;x&quot; "
                      "broke</error>"));
    CHECK(strstr(doc, "<skipped type=\"pytest.skip\" message=\"missing "
                      "credentials\">tests-lua/test_03_commands.lua:12: "
                      "missing credentials</skipped>"));
    CHECK(strstr(doc, "<skipped type=\"pytest.xfail\" message=\"KI-001\" />"));
    CHECK(strstr(doc, "<failure message=\"[XPASS(strict)] KI-002\">"
                      "[XPASS(strict)] KI-002</failure>"));
    CHECK(strstr(doc, "name=\"passes but teardown\" time=\"0.253\"><error "
                      "message=\"failed on teardown with &quot;sweep "
                      "failed&quot;\">sweep failed</error></testcase>"));
    CHECK(strstr(doc, "name=\"xpass\" time=\"0.253\"></testcase>"));
    snprintf(path, sizeof(path), "%s/junit.xml", dir);
    CHECK_INT(abx_write_file_atomic(path, x.data, x.len, err, sizeof(err)), 0);
    CHECK_INT(py("import xml.dom.minidom,sys; "
                 "d=xml.dom.minidom.parse(sys.argv[1]); "
                 "s=d.getElementsByTagName(\"testsuite\")[0]; "
                 "assert s.getAttribute(\"tests\")==\"8\"; "
                 "assert len(d.getElementsByTagName(\"testcase\"))==9; "
                 "f=d.getElementsByTagName(\"failure\")[0]; "
                 "assert f.getAttribute(\"message\")==\"assert 1 == 2 #x01 "
                 "bad#xFF\", f.getAttribute(\"message\")",
                 path),
              0);
    /* every attribute value survives newlines and tabs */
    abx_buf_reset(&x);
    abx_result_set(&rs[1]->message, "a\nb\tc\rd");
    CHECK_INT(junit(&x, &o, rs + 1, 1), 0);
    CHECK(strstr(abx_buf_cstr(&x), "message=\"a&#10;b&#9;c&#13;d\""));
    CHECK_INT(abx_write_file_atomic(path, x.data, x.len, err, sizeof(err)), 0);
    CHECK_INT(py("import xml.dom.minidom,sys; "
                 "d=xml.dom.minidom.parse(sys.argv[1]); "
                 "f=d.getElementsByTagName(\"failure\")[0]; "
                 "assert f.getAttribute(\"message\")==\"a\\nb\\tc\\rd\"",
                 path),
              0);
    /* sandboxes of a failed test: a property, as record_property */
    abx_buf_reset(&x);
    abx_strlist_push(&rs[1]->sandbox_ids, "sbx-a");
    abx_strlist_push(&rs[1]->sandbox_ids, "sbx-<b>");
    CHECK_INT(junit(&x, &o, rs + 1, 1), 0);
    CHECK_MSG(strstr(abx_buf_cstr(&x), "\"><properties><property "
                                       "name=\"sandboxes\" value=\"sbx-a "
                                       "sbx-&lt;b&gt;\" /></properties>"
                                       "<failure"),
              "sandboxes property: %s", abx_buf_cstr(&x));
    /* empty run */
    abx_buf_reset(&x);
    {
        struct abx_report none = {0};
        CHECK_INT(abx_junit_write(&x, &none, NULL), 0);
    }
    CHECK(strstr(abx_buf_cstr(&x), "errors=\"0\" failures=\"0\" skipped=\"0\" "
                                   "tests=\"0\""));
    CHECK(strstr(abx_buf_cstr(&x), "</testsuite></testsuites>\n"));
    /* a full buffer fails cleanly and leaves it as it was */
    {
        struct abx_buf tiny;

        abx_buf_init(&tiny, 64);
        MUST(abx_buf_appends(&tiny, "keep"));
        CHECK_INT(junit(&tiny, &o, rs, 8), -1);
        CHECK_STR(abx_buf_cstr(&tiny), "keep");
        abx_buf_free(&tiny);
    }
    /* escape helper: control chars, U+FFFE, invalid UTF-8, valid UTF-8 */
    abx_buf_reset(&x);
    {
        static const char in[] =
            "\x7f|\xef\xbf\xbe|\xc3|\xc3\xa9|\xf0\x9f\x98\x80";

        CHECK_INT(abx_xml_escape(&x, in, sizeof(in) - 1), 0);
    }
    CHECK_STR(abx_buf_cstr(&x), "#x7F|#xFFFE|#xC3|\xc3\xa9|\xf0\x9f\x98\x80");
    abx_buf_free(&x);
    for (i = 0; i < 8; i++)
        abx_result_free(rs[i]);
    unlink(path);
}

static void test_json_report(const char *dir)
{
    struct abx_result *rs[3];
    struct abx_summary s;
    static const char *const caps[] = {"pause", "e2b-proxy", NULL};
    static const char *const paths[] = {"tests-lua"};
    cJSON *sbx = cJSON_Parse("[{\"id\":\"sb1\",\"template\":\"base\","
                             "\"test\":null,\"worker\":1,\"created\":5,"
                             "\"ended\":null,\"kept\":true}]");
    struct abx_report o = {
        .results = rs, .n = 3, .tool = "abx-e2e 9", .run_id = "run-42", .created = 1764535692.5,
        .sum = &s, .platform = "e2b", .capabilities = caps,
        .endpoint = "http://127.0.0.1:9", .local = 1, .profile = "fc",
        .command = "abx-e2e -k x", .keyword = "x", .paths = paths,
        .npaths = 1, .shard_k = 2, .shard_n = 3, .last_failed = "ff",
        .workers = 2, .sandboxes = sbx};
    struct abx_buf x;
    char path[256], err[256];
    size_t i;

    rs[0] = mk("ok", ABX_OUTCOME_PASSED, ABX_PHASE_NONE);
    abx_strlist_push(&rs[0]->markers, "e2e");
    rs[0]->start = 1764535693.25;
    rs[1] = mk("bad", ABX_OUTCOME_FAILED, ABX_PHASE_CALL);
    abx_result_set(&rs[1]->message, "boom");
    abx_result_set(&rs[1]->output, "binary \xff\xfe tail");
    abx_result_set(&rs[1]->teardown_message, "td");
    rs[2] = mk("skip", ABX_OUTCOME_SKIPPED, ABX_PHASE_SETUP);
    abx_summary_init(&s);
    for (i = 0; i < 3; i++)
        abx_summary_add(&s, rs[i]);
    s.deselected = 2;
    s.duration = 3.5;
    s.exit_code = abx_summary_exit_code(&s, 0);
    abx_buf_init(&x, 0);
    CHECK_INT(abx_report_json_write(&x, &o), 0);
    snprintf(path, sizeof(path), "%s/report.json", dir);
    CHECK_INT(abx_write_file_atomic(path, x.data, x.len, err, sizeof(err)), 0);
    CHECK_INT(py("import json,sys; "
                 "d=json.load(open(sys.argv[1],encoding=\"utf-8\")); "
                 "assert d[\"run_id\"]==\"run-42\"; "
                 "assert d[\"created\"]==1764535692.5; "
                 "assert d[\"platform\"]==\"e2b\"; "
                 "assert d[\"capabilities\"]==[\"pause\",\"e2b-proxy\"]; "
                 "assert d[\"exitcode\"]==1 and d[\"duration\"]==3.5; "
                 "s=d[\"summary\"]; "
                 "assert (s[\"passed\"],s[\"failed\"],s[\"error\"],"
                 "s[\"skipped\"],s[\"deselected\"],s[\"total\"],"
                 "s[\"collected\"])==(1,1,1,1,2,3,5), s; "
                 "t=d[\"tests\"]; assert len(t)==3; "
                 "assert t[0][\"nodeid\"].endswith(\"::ok\"); "
                 "assert t[0][\"markers\"]==[\"e2e\"]; "
                 "assert abs(t[0][\"duration\"]-0.253)<1e-9; "
                 "assert t[1][\"outcome\"]==\"failed\" and "
                 "t[1][\"when\"]==\"call\" and t[1][\"message\"]==\"boom\"; "
                 "assert t[1][\"output\"]==\"binary \\ufffd\\ufffd tail\"; "
                 "assert t[1][\"teardown_message\"]==\"td\"; "
                 "assert t[0][\"start\"]==1764535693.25; "
                 "assert t[1][\"start\"]==0; "
                 "assert d[\"tool\"]==\"abx-e2e 9\"; "
                 "assert d[\"endpoint\"]==\"http://127.0.0.1:9\"; "
                 "assert d[\"local\"] is True and d[\"profile\"]==\"fc\"; "
                 "assert d[\"command\"]==\"abx-e2e -k x\"; "
                 "assert d[\"selection\"]=={\"keyword\":\"x\","
                 "\"markexpr\":None,\"paths\":[\"tests-lua\"],"
                 "\"shard\":\"2/3\",\"last_failed\":\"ff\"}; "
                 "assert d[\"shard\"]=={\"k\":2,\"n\":3}; "
                 "assert d[\"workers\"]==2; "
                 "assert d[\"sandboxes\"]==[{\"id\":\"sb1\","
                 "\"template\":\"base\",\"test\":None,\"worker\":1,"
                 "\"created\":5,\"ended\":None,\"kept\":True}]",
                 path),
              0);
    abx_buf_free(&x);
    cJSON_Delete(sbx);
    for (i = 0; i < 3; i++)
        abx_result_free(rs[i]);
    unlink(path);
}

/* End to end: a secret with XML/JSON-special bytes placed in every field
 * of a result; after masking the whole report, no parser-decoded value
 * holds it (python3 decodes the entities and escapes for us). */
static void test_reports_masked(const char *dir)
{
    static const char sec[] = "p&ss<w>\"rd'/\x01\xc3\xa9\tz";
    struct abx_mask *m = abx_mask_new();
    struct abx_result *r = mk(sec, ABX_OUTCOME_FAILED, ABX_PHASE_CALL);
    struct abx_report jo = {.results = &r, .n = 1, .created = 1764535692, .platform = sec};
    struct abx_report ko = {.results = &r, .n = 1, .run_id = sec, .created = 1};
    struct abx_buf doc, masked;
    char path[256], err[256], sfile[256];
    cJSON *jdoc;

    CHECK_INT(abx_mask_add_str(m, sec), 0);
    abx_result_set(&r->message, sec);
    abx_result_set(&r->longrepr, "trace: " "p&ss<w>\"rd'/\x01\xc3\xa9\tz" " end");
    abx_result_set(&r->output, sec);
    abx_result_set(&r->reason, sec);
    abx_result_set(&r->teardown_message, sec);
    abx_strlist_push(&r->markers, sec);
    snprintf(sfile, sizeof(sfile), "%s/secret.bin", dir);
    CHECK_INT(abx_write_file_atomic(sfile, sec, sizeof(sec) - 1, err,
                                    sizeof(err)),
              0);
    abx_buf_init(&doc, 0);
    abx_buf_init(&masked, 0);
    CHECK_INT(abx_junit_write(&doc, &jo, sec), 0);
    CHECK_INT(abx_mask_string(m, doc.data, doc.len, &masked), 0);
    snprintf(path, sizeof(path), "%s/masked.xml", dir);
    CHECK_INT(abx_write_file_atomic(path, masked.data, masked.len, err,
                                    sizeof(err)),
              0);
    /* the junit writer shows \x01 as "#x01": compare against that too */
    CHECK_INT(py("import sys,xml.dom.minidom as M; "
                 "s=open(sys.argv[1][:-10]+\"secret.bin\",\"rb\").read()"
                 ".decode(); t=s.replace(\"\\x01\",\"#x01\"); "
                 "d=M.parse(sys.argv[1]); vals=[]; "
                 "[vals.extend([n.nodeValue or \"\"]+[a.value for a in "
                 "(n.attributes.values() if n.attributes else [])]) "
                 "for n in d.getElementsByTagName(\"*\")+"
                 "[c for e in d.getElementsByTagName(\"*\") "
                 "for c in e.childNodes]]; "
                 "bad=[v for v in vals if s in v or t in v]; "
                 "assert not bad, bad; "
                 "assert sum(\"[MASKED]\" in v for v in vals) >= 8",
                 path),
              0);
    abx_buf_reset(&doc);
    abx_buf_reset(&masked);
    CHECK_INT(abx_report_json_write(&doc, &ko), 0);
    CHECK_INT(abx_mask_string(m, doc.data, doc.len, &masked), 0);
    snprintf(path, sizeof(path), "%s/masked.json", dir);
    CHECK_INT(abx_write_file_atomic(path, masked.data, masked.len, err,
                                    sizeof(err)),
              0);
    CHECK_INT(py("import sys,json; "
                 "s=open(sys.argv[1][:-11]+\"secret.bin\",\"rb\").read()"
                 ".decode(); d=json.load(open(sys.argv[1])); "
                 "walk=lambda x: [x] if isinstance(x,str) else "
                 "sum((walk(v) for v in (x.values() if isinstance(x,dict) "
                 "else x if isinstance(x,list) else [])),[]); "
                 "vals=walk(d); assert not [v for v in vals if s in v]; "
                 "assert sum(\"[MASKED]\" in v for v in vals) >= 7, vals",
                 path),
              0);
    /* The HTML page holds the same document: no secret there either. */
    jdoc = abx_report_json_doc(&ko);
    CHECK(jdoc != NULL);
    abx_buf_reset(&doc);
    abx_buf_reset(&masked);
    CHECK_INT(abx_report_html_write(&doc, jdoc), 0);
    cJSON_Delete(jdoc);
    CHECK_INT(abx_mask_string(m, doc.data, doc.len, &masked), 0);
    CHECK_INT(abx_write_file_atomic(path, masked.data, masked.len, err,
                                    sizeof(err)),
              0);
    CHECK_INT(py("import sys,json,re; "
                 "s=open(sys.argv[1][:-11]+\"secret.bin\",\"rb\").read()"
                 ".decode(); h=open(sys.argv[1]).read(); "
                 "j=h.split(\"id=\\\"abx-report-data\\\">\")[1]"
                 ".split(\"</script>\")[0]; d=json.loads(j); "
                 "walk=lambda x: [x] if isinstance(x,str) else "
                 "sum((walk(v) for v in (x.values() if isinstance(x,dict) "
                 "else x if isinstance(x,list) else [])),[]); "
                 "vals=walk(d); assert not [v for v in vals if s in v]; "
                 "assert s not in h; "
                 "assert sum(\"[MASKED]\" in v for v in vals) >= 7, vals",
                 path),
              0);
    abx_buf_free(&doc);
    abx_buf_free(&masked);
    abx_result_free(r);
    abx_mask_free(m);
    unlink(path);
    snprintf(path, sizeof(path), "%s/masked.xml", dir);
    unlink(path);
    unlink(sfile);
}

/* The document goes into the page's slot as script data that no string
 * can end; a page without the slot is refused, the buffer untouched. */
static void test_html_page(void)
{
    static const char page[] = "<p>A</p>\n" ABX_REPORT_HTML_SLOT "\n<p>B</p>";
    cJSON *doc = cJSON_CreateObject();
    struct abx_buf b;

    cJSON_AddStringToObject(doc, "m", "</script><!-- & >");
    abx_buf_init(&b, 0);
    CHECK_INT(abx_report_html_write_page(&b, doc, page, sizeof page - 1), 0);
    CHECK_STR(abx_buf_cstr(&b),
              "<p>A</p>\n<script type=\"application/json\" "
              "id=\"abx-report-data\">{\"m\":\"\\u003c/script\\u003e"
              "\\u003c!-- \\u0026 \\u003e\"}</script>\n<p>B</p>");
    abx_buf_reset(&b);
    MUST(abx_buf_appends(&b, "kept"));
    CHECK_INT(abx_report_html_write_page(&b, doc, "<p>no slot</p>", 14), -1);
    CHECK_STR(abx_buf_cstr(&b), "kept");
    abx_buf_reset(&b);
    CHECK_INT(abx_report_html_write(&b, doc), 0);  /* the embedded page */
    CHECK(strstr(abx_buf_cstr(&b), "id=\"abx-report-data\"") != NULL);
    CHECK(strstr(abx_buf_cstr(&b), ABX_REPORT_HTML_SLOT) == NULL);
    abx_buf_free(&b);
    cJSON_Delete(doc);
}

int main(void)
{
    char dir[] = "/tmp/abx-report-XXXXXX";

    CHECK(mkdtemp(dir) != NULL);
    test_summary();
    test_identity_and_add();
    test_json_roundtrip();
    test_junit(dir);
    test_json_report(dir);
    test_reports_masked(dir);
    test_html_page();
    rmdir(dir);
    return CHECK_DONE();
}
