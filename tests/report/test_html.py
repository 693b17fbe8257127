#!/usr/bin/env python3
"""report.html: the page of `abx-e2e --html FILE`, opened in headless
Chromium through Selenium.

A scratch project with one test of every outcome the runner can produce
without a platform (passed, failed with an expect diff, error in a fixture's
setup, teardown error, skipped, xfailed, strict xpass, flaky on a rerun), one
test that prints the planted API key and one whose message is markup, run
with -n 2 --reruns 1 and all three reports. Then:
  - the file: the key in none of its encodings, no external reference;
  - the page: counts equal JUnit's and the JSON summary, one row per test,
    the outcome filter and the search show exactly the rows they should,
    the timeline has a bar per timed test in >= 2 worker lanes, the markup
    of the data stays text (no <img>, title untouched), and the browser
    logged nothing SEVERE (script errors, CSP violations, failed loads);
  - the full-page screenshot is kept as OUT/html-report.png.
Then a large report (1,500 tests in 3 files, a few failed and skipped), whose
table holds only a page of rows at first: the tiles equal JUnit's counts,
fewer rows than tests are in the DOM, the search finds a test beyond the
first page, unchecking `passed` shows exactly the other rows, a timeline bar
and a failure of a test beyond the first page open its row, "show all" and
printing put every row in, and the browser logged nothing SEVERE.

usage: test_html.py --bin PATH/abx-e2e --out DIR
Needs the Debian packages python3-selenium, chromium and chromium-driver
(run with /usr/bin/python3, which sees Debian's python3-selenium); a
missing one fails the test, naming it."""
import argparse
import importlib.util
import os
import re
import secrets
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import (ALL_ABX, check, check_no_sanitizer, done, eq, free_port,  # noqa: E402
                     load_json, read_text, remove, run, scratch, scrubbed_env,
                     secret_forms, write_file)

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "flaky")
HOSTILE = '<img src=x onerror="document.title=\'pwned\'"> and </script> end'

BASIC = r'''
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

e2e.fixture("broken", function() error("the fixture could not start") end)

test("adds numbers", function() expect(1 + 1):eq(2) end)
test("compares tables", function()
  expect({ name = "box", ports = { 8000, 8001 } }):eq({ name = "box", ports = { 8000, 8080 } })
end)
test("uses a broken fixture", function(broken) end)
test("static skip", { skip = "not on this platform" }, function() end)
test("pinned defect", { known_issue = "KI-001: answers 500" }, function()
  expect(500):eq(200)
end)
test("fixed defect", { known_issue = "KI-002: fixed upstream?" }, function() end)
test("teardown breaks", function()
  e2e.defer(function() error("teardown exploded") end)
end)
'''

MORE = r'''
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

-- The attempts of a test, counted in a file of the run's directory.
local function attempt(name)
  local f = io.open(name .. ".count", "r")
  local n = f and tonumber(f:read("a")) or 0
  if f then f:close() end
  f = assert(io.open(name .. ".count", "w"))
  f:write(tostring(n + 1))
  f:close()
  return n + 1
end

test("fails once then passes", function()
  local n = attempt("once")
  print("attempt " .. n)
  expect(n):ge(2)
end)
test("prints the key", function()
  local key = os.getenv("ABX_SANDBOX_API_KEY") or "missing"
  print("key: " .. key)
  e2e.fail("the key was " .. key)
end)
test("hostile message", function() e2e.fail(HOSTILE) end)
for i = 1, 4 do
  test("Sleeps " .. i, function() e2e.sleep(0.05 * i) end)
end
'''.replace("HOSTILE", "'" + HOSTILE.replace("'", "\\'") + "'")

# The large report: per file 500 tests, 2 fail, 5 skip.
BIG_FILES = 3
BIG = r'''
local e2e = require "e2e"
for i = 1, 500 do
  e2e.test(string.format("case %03d", i), { skip = i % 100 == 50 and "every 100th" or nil },
    function() if i % 200 == 123 then e2e.fail("planned failure " .. i) end end)
end
'''

B, M = "tests/test_basic.lua::", "tests/test_more.lua::"
EXPECTED = {
    B + "adds numbers": "passed", B + "compares tables": "failed",
    B + "uses a broken fixture": "error", B + "static skip": "skipped",
    B + "pinned defect": "xfailed", B + "fixed defect": "failed",
    B + "teardown breaks": "passed", M + "fails once then passes": "flaky",
    M + "prints the key": "failed", M + "hostile message": "failed",
    M + "Sleeps 1": "passed", M + "Sleeps 2": "passed", M + "Sleeps 3": "passed",
    M + "Sleeps 4": "passed",
}


def need_browser():
    """The Selenium module and the browser, or exit 1 naming the package."""
    if importlib.util.find_spec("selenium") is None:
        sys.exit("FAIL the Debian package python3-selenium is missing (or %s is not "
                 "Debian's python3, which sees it)" % sys.executable)
    for path, pkg in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            sys.exit("FAIL the Debian package %s is missing (no %s)" % (pkg, path))


def browser(profile):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-first-run", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--user-data-dir=" + profile):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def check_file(html, secret):
    """The page as a file: masked, and nothing it would fetch."""
    for form, kind in secret_forms(secret).items():
        check(form not in html, "html: the planted key never appears (%s)" % kind)
    check("[MASKED]" in html, "html: the key's place says [MASKED]")
    ext = re.findall(r'''(?:src|href)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:)?//''', html, re.I)
    eq(ext, [], "html: no src=/href= to another place")
    check("@import" not in html.lower(), "html: no @import")
    urls = [u for u in re.findall(r'''url\(\s*["']?([^)"'\s]*)''', html)
            if not u.startswith(("data:", "#"))]
    eq(urls, [], "html: no url() but data: and the page's own #ids")
    check("<script src" not in html.lower(), "html: no external script")


def counts_of_junit(path):
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    return {k: sum(int(s.get(k, 0)) for s in suites)
            for k in ("tests", "failures", "errors", "skipped")}


def rows_js(driver):
    """[(node id, displayed)] of the table's rows in order, in one round
    trip (a large report has too many for one request per row)."""
    return [tuple(r) for r in driver.execute_script(
        "return [...document.querySelectorAll('tr.test-row')].map((r) => "
        "[r.getAttribute('data-nodeid'), r.getClientRects().length > 0])")]


def click_js(driver, elem):
    """A click event on elem, without Selenium's scrolling and hit test."""
    driver.execute_script(
        "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", elem)


def shown(driver):
    """{node id: displayed} of the table's rows."""
    return {r.get_attribute("data-nodeid"): r.is_displayed()
            for r in driver.find_elements("css selector", "tr.test-row")}


def row_of(driver, nodeid, then=""):
    """The table row of nodeid (then " + tr.detail-row": its details)."""
    return driver.find_element("css selector", 'tr.test-row[data-nodeid="%s"]%s' % (nodeid, then))


def set_search(driver, text):
    box = driver.find_element("id", "search")
    box.clear()
    if text:
        box.send_keys(text)
    else:  # clear() fires no input event
        driver.execute_script("arguments[0].dispatchEvent(new Event('input'))", box)


def check_tiles(d, doc, junit, what=""):
    """The tiles' counts against the JSON summary and JUnit."""
    page = {o: int(d.find_element("css selector", '[data-count="%s"]' % o).text)
            for o in OUTCOMES + ("total",)}
    summ = doc.get("summary", {})
    for o in OUTCOMES + ("total",):
        eq(page[o], summ.get(o), "%spage count %s == JSON summary" % (what, o))
    eq(page["failed"], junit["failures"], what + "page failed == JUnit failures")
    eq(page["error"], junit["errors"],
       what + "page error == JUnit errors (teardown errors included)")
    eq(page["skipped"] + page["xfailed"], junit["skipped"],
       what + "page skipped+xfailed == JUnit skipped")
    eq(page["total"], junit["tests"], what + "page total == JUnit tests")


def check_page(d, doc, junit):
    tests = doc.get("tests", [])
    ids = [t["nodeid"] for t in tests]
    check_tiles(d, doc, junit)
    check(doc.get("run_id") and doc["run_id"] in d.find_element("id", "meta").text,
          "the header names the run id")

    rows = d.find_elements("css selector", "tr.test-row")
    eq(len(rows), len(tests), "one table row per test")
    check({r.get_attribute("data-nodeid"): r.get_attribute("data-outcome") for r in rows}
          == {t["nodeid"]: t["outcome"] for t in tests}, "rows carry node id and outcome")
    eq(d.find_element("id", "shown-count").text, "showing %d of %d" % (len(ids), len(ids)),
       "shown-count at first")
    eq(len(d.find_elements("css selector", "tr.more-row")), 0,
       "a small report has every row: no 'show more' row")

    failed = {t["nodeid"] for t in tests if t["outcome"] == "failed"}
    d.find_element("css selector", '[data-filter="failed"]').click()
    eq({i for i, vis in shown(d).items() if not vis}, failed,
       "unchecking failed hides exactly the failed rows")
    d.find_element("css selector", '[data-filter="failed"]').click()
    check(all(shown(d).values()), "checking it again shows every row")

    want = {i for i in ids if "sleeps" in i.lower()}  # the ids say "Sleeps"
    set_search(d, "sLEEPS")
    eq({i for i, vis in shown(d).items() if vis}, want, "search shows exactly the matching rows")
    eq(d.find_element("id", "shown-count").text, "showing %d of %d" % (len(want), len(ids)),
       "shown-count while searching")
    set_search(d, "")
    check(all(shown(d).values()), "clearing the search shows every row")

    timed = [t for t in tests if (t.get("start") or 0) > 0]
    eq(len(timed), len(tests), "every test of the run has a start time")
    bars = d.find_elements("css selector", "#timeline .tl-test")
    check(sorted(b.get_attribute("data-nodeid") for b in bars)
          == sorted(t["nodeid"] for t in timed), "one timeline bar per timed test")
    workers = {t.get("worker") for t in tests}
    lanes = len(d.find_elements("css selector", "#timeline .tl-lane"))
    check(lanes >= 2 and lanes == len(workers),
          "one timeline lane per worker (%d lanes, workers %s)" % (lanes, sorted(workers)))
    slow = [t for t in tests if (t.get("duration") or 0) > 0]
    eq(len(d.find_elements("css selector", ".slowest-bar")), min(10, len(slow)),
       "the slowest tests chart: top 10")
    text = d.find_element("id", "failures").text
    check(all(t["nodeid"] in text for t in tests if t["outcome"] in ("failed", "error")),
          "the failures section lists every failure")

    # Clicking a bar opens that test's details: the diff, as text.
    bar = [b for b in bars if b.get_attribute("data-nodeid") == B + "compares tables"][0]
    d.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", bar)
    detail = row_of(d, B + "compares tables", " + tr.detail-row")
    check(detail.is_displayed() and "diff (- expected, + actual)" in detail.text,
          "a timeline bar opens its test's details (the diff)")
    # One shared <title>, moved into the bar under the pointer.
    tip = d.execute_script(
        "arguments[0].dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));"
        "const t = arguments[0].querySelector('title'); return t && t.textContent", bar)
    check((tip or "").startswith(B + "compares tables\n"),
          "a timeline bar's tooltip names its test (%r)" % tip)
    row_of(d, M + "hostile message").click()
    check(HOSTILE in row_of(d, M + "hostile message", " + tr.detail-row").text,
          "the hostile message is shown as text")
    row_of(d, M + "fails once then passes").click()
    check("Attempt 1 of 2" in row_of(d, M + "fails once then passes", " + tr.detail-row").text,
          "a flaky test shows its earlier attempt")
    eq(len(d.find_elements("tag name", "img")), 0, "no <img> element from the data")
    check(d.title != "pwned", "the data's markup never ran (title %r)" % d.title)


def shown_count(d):
    return d.find_element("id", "shown-count").text


def detail_text(d, nodeid):
    """The text of nodeid's details when its row is in the DOM and they
    are displayed, else None."""
    found = d.find_elements("css selector",
                            'tr.test-row[data-nodeid="%s"] + tr.detail-row' % nodeid)
    return found[0].text if found and found[0].is_displayed() else None


def reset_view(d):
    """The page scrolled to its top and the search cleared: the table
    shows the first page of all tests, its end far out of sight (so no
    page is added behind the test's back)."""
    d.execute_script("window.scrollTo(0, 0); const box = document.getElementById('search');"
                     "box.value = ''; box.dispatchEvent(new Event('input'))")


def check_big(d, doc, junit):
    """The large report: a page of rows at first, the rest on demand."""
    tests = doc.get("tests", [])
    ids = [t["nodeid"] for t in tests]
    total = len(ids)
    check_tiles(d, doc, junit, "large: ")
    first = rows_js(d)
    check(0 < len(first) < total,
          "large: fewer rows than tests in the DOM at first (%d of %d)" % (len(first), total))
    check([i for i, _ in first] == ids[:len(first)], "large: the first rows are the first tests")
    eq(shown_count(d), "showing %d of %d" % (total, total),
       "large: shown-count counts the tests of the view, not the rows in the DOM")
    in_dom = {i for i, _ in first}
    later = [t for t in tests if t["nodeid"] not in in_dom]

    target = later[len(later) // 2]["nodeid"]
    eq([i for i in ids if target.lower() in i.lower()], [target],
       "large: the node id searched matches only itself")
    set_search(d, target)
    eq(rows_js(d), [(target, True)],
       "large: searching a test beyond the first page shows exactly that row")
    eq(shown_count(d), "showing 1 of %d" % total, "large: shown-count while searching")
    reset_view(d)
    eq(len(rows_js(d)), len(first), "large: clearing the search shows the first page again")

    want = sorted(t["nodeid"] for t in tests if t["outcome"] != "passed")
    d.find_element("css selector", '[data-filter="passed"]').click()
    got = rows_js(d)
    check(sorted(i for i, vis in got if vis) == want,
          "large: unchecking passed shows exactly the %d non-passed rows of the JSON report"
          % len(want))
    eq(len(got), len(want), "large: and only those rows are in the DOM")
    eq(shown_count(d), "showing %d of %d" % (len(want), total),
       "large: shown-count without passed")
    d.find_element("css selector", '[data-filter="passed"]').click()

    far = [t["nodeid"] for t in later if t["outcome"] == "failed"]
    check(len(far) >= 2, "large: failed tests beyond the first page (%d)" % len(far))
    tid = far[-1]
    sel = 'tr.test-row[data-nodeid="%s"]' % tid
    eq(len(d.find_elements("css selector", sel)), 0, "large: %s has no row yet" % tid)
    click_js(d, d.find_element("css selector", '#timeline .tl-test[data-nodeid="%s"]' % tid))
    check("planned failure" in (detail_text(d, tid) or ""),
          "large: the timeline bar of a test beyond the first page opens its row")
    # Far from the first page, the table jumps to the page of the test.
    got = [i for i, _ in rows_js(d)]
    check(ids.index(tid) >= 2 * len(first) and len(got) < total,
          "large: the jump keeps the DOM small (%d rows, %s is test %d)"
          % (len(got), tid, ids.index(tid) + 1))
    earlier = {b.get_attribute("textContent"): b for b in d.find_elements(
        "css selector", 'tr.more-row[data-more="earlier"] button')}
    label = [k for k in earlier if k.endswith(" earlier")]
    if check(len(label) == 1, "large: a 'show N earlier' button above the rows %s"
             % sorted(earlier)):
        d.execute_script("arguments[0].click()", earlier[label[0]])
        # (The row is in the middle of the screen: the next page may come
        # in meanwhile, below.)
        now = [i for i, _ in rows_js(d)]
        k = ids.index(now[0]) if now else 0
        j = now.index(got[0]) if got and got[0] in now else -1
        check(j > 0 and now == ids[k:k + len(now)] and now[j:j + len(got)] == got,
              "large: '%s' adds the rows before, in order (%d -> %d rows)"
              % (label[0], len(got), len(now)))
    reset_view(d)
    fid = far[0]
    eq(len(d.find_elements("css selector", 'tr.test-row[data-nodeid="%s"]' % fid)), 0,
       "large: %s has no row yet" % fid)
    link = [b for b in d.find_elements("css selector", "#failures button.link")
            if b.get_attribute("textContent") == fid]
    if check(len(link) == 1, "large: the failures section links " + fid):
        d.execute_script("arguments[0].click()", link[0])
        check("planned failure" in (detail_text(d, fid) or ""),
              "large: a failure's link to a test beyond the first page opens its row")

    reset_view(d)
    n = len(first)
    buttons = {b.get_attribute("textContent"): b for b in d.find_elements(
        "css selector", 'tr.more-row[data-more="later"] button')}
    if check("show %d more" % n in buttons, "large: a 'show %d more' button below the rows" % n):
        d.execute_script("arguments[0].click()", buttons["show %d more" % n])
        eq(len(rows_js(d)), 2 * n, "large: 'show %d more' adds a page of rows" % n)
    # Scrolled into sight, the row below the table adds the next page (the
    # observer answers later: the script waits for the table to change).
    try:
        got = d.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const body = document.getElementById('test-body');
            const count = () => body.querySelectorAll('tr.test-row').length;
            const before = count();
            new MutationObserver((_, mo) => { mo.disconnect(); done([before, count()]); })
              .observe(body, {childList: true});
            document.querySelector('tr.more-row[data-more=later]').scrollIntoView();""")
    except Exception as ex:  # noqa: BLE001 (the script's timeout: nothing came)
        got = repr(ex)[:200]
    eq(got, [2 * n, 3 * n], "large: scrolling to the end of the rows adds the next page")

    reset_view(d)
    more = [b for b in d.find_elements("css selector", 'tr.more-row[data-more="later"] button')
            if b.get_attribute("textContent") == "show all %d" % total]
    if check(len(more) == 1, "large: a 'show all %d' button below the rows" % total):
        d.execute_script("arguments[0].click()", more[0])  # as Enter on it would
        got = rows_js(d)
        check([i for i, _ in got] == ids,
              "large: 'show all' puts every row in, in order (%d rows)" % len(got))
        check(all(vis for _, vis in got), "large: and every one is displayed")
        eq(len(d.find_elements("css selector", "tr.more-row")), 0,
           "large: and no 'show more' row is left")
    reset_view(d)
    check(len(rows_js(d)) < total, "large: a new view starts at one page again")
    d.execute_script("window.dispatchEvent(new Event('beforeprint'))")
    eq(len(rows_js(d)), total, "large: printing puts every row in")

    reset_view(d)
    d.find_element("css selector", '#tests th[data-key="duration"] button').click()
    slowest = [t["nodeid"] for t in sorted(tests, key=lambda t: -(t.get("duration") or 0))]
    check([i for i, _ in rows_js(d)] == slowest[:len(first)],
          "large: sorting by duration sorts every test: the first page is the slowest ones")


def run_big(binary, env, d):
    """A report of BIG_FILES x 500 tests, opened in d."""
    proj = scratch("abx-html-big-")
    try:
        for k in range(1, BIG_FILES + 1):
            write_file(os.path.join(proj, "tests", "test_big%d.lua" % k), BIG)
        p = run([binary, "-n", "2", "--html", "out/big.html", "--junitxml", "out/big.xml",
                 "--json", "out/big.json", "tests"], cwd=proj, env=env)
        eq(p.returncode, 1, "large: abx-e2e exits 1 (tests failed)")
        check_no_sanitizer(p.stdout + p.stderr, "abx-e2e --html (large)")
        doc = load_json(os.path.join(proj, "out", "big.json"))
        if not check(isinstance(doc, dict) and
                     os.path.exists(os.path.join(proj, "out", "big.html")),
                     "large: the HTML and JSON reports exist"):
            print(p.stdout[-4000:], p.stderr[-2000:])
            return
        got = [t["outcome"] for t in doc.get("tests", [])]
        eq({o: got.count(o) for o in set(got)},
           {"passed": 1479, "failed": 6, "skipped": 15}, "large: the outcomes planned")
        junit = counts_of_junit(os.path.join(proj, "out", "big.xml"))
        d.set_window_size(1280, 900)
        d.set_script_timeout(20)
        d.get("file://" + os.path.join(proj, "out", "big.html"))
        check_big(d, doc, junit)
        severe = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
        eq(severe, [], "large: the browser logged nothing SEVERE")
    finally:
        remove(proj)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    need_browser()
    binary = os.path.abspath(a.bin)
    proj = scratch("abx-html-")
    profile = tempfile.mkdtemp(prefix="abx-html-chromium-")
    secret = "e2b_" + secrets.token_hex(24)
    try:
        write_file(os.path.join(proj, "tests", "test_basic.lua"), BASIC)
        write_file(os.path.join(proj, "tests", "test_more.lua"), MORE)
        # A key makes the runner sweep its tag at the end: a closed port
        # answers at once.
        env = scrubbed_env(ALL_ABX, ABX_SANDBOX_API_KEY=secret, NO_COLOR="1", CI="true",
                           ABX_SANDBOX_BASE_URL="http://127.0.0.1:%d" % free_port())
        p = run([binary, "-n", "2", "--reruns", "1", "--html", "out/report.html",
                 "--junitxml", "out/junit.xml", "--json", "out/report.json", "tests"],
                cwd=proj, env=env)
        eq(p.returncode, 1, "abx-e2e exits 1 (tests failed)")
        check_no_sanitizer(p.stdout + p.stderr, "abx-e2e --html")
        html = read_text(os.path.join(proj, "out", "report.html"))
        doc = load_json(os.path.join(proj, "out", "report.json"))
        if not check(html and isinstance(doc, dict), "the HTML and JSON reports exist"):
            print(p.stdout[-4000:], p.stderr[-2000:])
            done()
        got = {t["nodeid"]: t["outcome"] for t in doc.get("tests", [])}
        eq({i: (got.get(i), o) for i, o in EXPECTED.items() if got.get(i) != o}, {},
           "the run produced the outcomes planned ({node id: (got, want)})")
        eq(len(got), len(EXPECTED), "and no other test")
        eq(sorted({t.get("worker") for t in doc["tests"]}), [0, 1], "both workers ran tests")
        check_file(html, secret)
        junit = counts_of_junit(os.path.join(proj, "out", "junit.xml"))

        d = browser(profile)
        try:
            d.set_window_size(1280, 900)
            d.get("file://" + os.path.join(proj, "out", "report.html"))
            check_page(d, doc, junit)
            severe = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
            eq(severe, [], "the browser logged nothing SEVERE")
            # The whole page in one window: its height plus the browser's own.
            height = d.execute_script("window.scrollTo(0, 0); return document.documentElement"
                                      ".scrollHeight + window.outerHeight - window.innerHeight")
            d.set_window_size(1280, height)
            png = os.path.join(os.path.abspath(a.out), "html-report.png")
            check(d.save_screenshot(png), "screenshot saved: " + png)
            run_big(binary, env, d)
        finally:
            d.quit()
    finally:
        remove(proj)
        shutil.rmtree(profile, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
