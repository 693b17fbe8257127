"""abx-local control plane: auth, create/get/list/filters/pagination, kill,
timeout, connect, pause/resume, metrics, error shapes."""
import os
import re
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import cgroup_file, run_with_server  # noqa: E402
from abxtest import check, err_shape, proc_gone, proc_state  # noqa: E402


def run(s):
    check(re.fullmatch(r"e2b_[0-9a-f]+", s.key) is not None, "generated key is e2b_<hex>")
    check(s.env.get("ABX_SANDBOX_DOMAIN", "").startswith("localhost:"), "domain export")
    st, _, _, _ = s.request("GET", "/health", key=False)
    check(200 <= st < 300, "GET /health answers 2xx without a key")

    # ---- auth ----
    st, js, _, _ = s.request("GET", "/v2/sandboxes", key=False)
    check(err_shape(st, js, 401), "missing key -> 401 {code,message}")
    st, js, _, _ = s.request("GET", "/v2/sandboxes", key="e2b_00")
    check(err_shape(st, js, 401), "bad key -> 401")
    st, js, _, _ = s.request("POST", "/sandboxes", {"templateID": "base"}, key=False)
    check(st == 401, "create without key -> 401")

    # ---- create ----
    a = s.create("base", timeout=120, metadata={"app": "prod", "user": "abc"}, secure=False)
    for f in ("templateID", "sandboxID", "clientID", "envdVersion"):
        check(f in a, "create answer has " + f)
    check(re.fullmatch(r"[a-z0-9]{20}", a["sandboxID"]) is not None, "sandbox id is 20 [a-z0-9]")
    check(a["clientID"] == "6532622b", "clientID constant")
    check(re.fullmatch(r"\d+\.\d+\.\d+", a["envdVersion"]) is not None, "envdVersion x.y.z")
    check("envdAccessToken" not in a, "non-secure: no envdAccessToken")
    check(a.get("trafficAccessToken", "x") is None, "trafficAccessToken null")
    b = s.create("base", timeout=120, metadata={"app": "dev", "k y": "v&=%"}, secure=True)
    check(re.fullmatch(r"[0-9a-f]{16,}", b.get("envdAccessToken", "")) is not None,
          "secure: envdAccessToken is random hex")
    c = s.create("base", timeout=120)
    st, v2, _, _ = s.request("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 60,
                                                       "secure": False})
    check(st == 201 and len(v2.get("envdAccessToken", "")) >= 16,
          "POST /v2/sandboxes is always secured (token returned)")
    if st == 201:
        check(s.kill(v2["sandboxID"]) == 204, "kill the v2 sandbox")
    check(len({a["sandboxID"], b["sandboxID"], c["sandboxID"]}) == 3, "ids are distinct")

    st, js, _, _ = s.request("POST", "/sandboxes", {"templateID": "no-such-template"})
    check(err_shape(st, js, 404) and "no-such-template" in js["message"],
          "unknown template -> 404 naming it")

    # ---- get ----
    st, d, _, _ = s.request("GET", "/sandboxes/" + a["sandboxID"])
    check(st == 200, "get -> 200")
    for f in ("templateID", "sandboxID", "clientID", "startedAt", "endAt", "cpuCount",
              "memoryMB", "diskSizeMB", "state", "envdVersion"):
        check(d is not None and f in d, "detail has " + f)
    check(d["state"] == "running", "detail state running")
    check(d["metadata"] == {"app": "prod", "user": "abc"}, "metadata round trip")
    rfc = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"
    check(re.fullmatch(rfc, d["startedAt"]) and re.fullmatch(rfc, d["endAt"]), "RFC3339 times")
    st, d2, _, _ = s.request("GET", "/sandboxes/%s-6532622b" % a["sandboxID"])
    check(st == 200 and d2["sandboxID"] == a["sandboxID"], "legacy <id>-<clientID> accepted")
    st, db, _, _ = s.request("GET", "/sandboxes/" + b["sandboxID"])
    check(db.get("envdAccessToken") == b["envdAccessToken"], "detail carries the access token")
    st, js, _, _ = s.request("GET", "/sandboxes/aaaaaaaaaaaaaaaaaaaa")
    check(err_shape(st, js, 404), "get unknown -> 404")

    # ---- list ----
    st, lst, h, _ = s.request("GET", "/v2/sandboxes")
    ids = [x["sandboxID"] for x in lst]
    check(st == 200 and set(ids) >= {a["sandboxID"], b["sandboxID"], c["sandboxID"]},
          "v2 list has all")
    check(all("envdAccessToken" not in x for x in lst), "listed items have no token")
    check("x-next-token" not in h, "no X-Next-Token on a single page")
    q = urllib.parse.quote(urllib.parse.urlencode({"app": "prod"}))
    st, lst, _, _ = s.request("GET", "/v2/sandboxes?metadata=" + q)
    check([x["sandboxID"] for x in lst] == [a["sandboxID"]], "metadata filter app=prod")
    # triple encoding with special characters, as the SDKs send it
    inner = urllib.parse.urlencode({urllib.parse.quote("k y"): urllib.parse.quote("v&=%")})
    st, lst, _, _ = s.request("GET", "/v2/sandboxes?metadata=" + urllib.parse.quote(inner))
    check(st == 200 and [x["sandboxID"] for x in lst] == [b["sandboxID"]],
          "metadata filter with special characters (triple encoding)")
    q = urllib.parse.quote("app=prod&user=nobody")
    st, lst, _, _ = s.request("GET", "/v2/sandboxes?metadata=" + q)
    check(st == 200 and lst == [], "metadata filters are ANDed")
    st, js, _, _ = s.request("GET", "/v2/sandboxes?metadata=" + urllib.parse.quote("novalue"))
    check(err_shape(st, js, 400), "metadata filter without '=' -> 400")
    st, js, _, _ = s.request("GET", "/v2/sandboxes?state=bogus")
    check(err_shape(st, js, 400), "bad state -> 400")
    for bad in ("0", "101", "x"):
        st, js, _, _ = s.request("GET", "/v2/sandboxes?limit=" + bad)
        check(err_shape(st, js, 400), "limit=%s -> 400" % bad)
    st, js, _, _ = s.request("GET", "/v2/sandboxes?nextToken=zz")
    check(err_shape(st, js, 400), "foreign nextToken -> 400")

    # pagination: limit 1 walks every sandbox once
    seen, token, pages = [], None, 0
    while pages < 10:
        path = "/v2/sandboxes?limit=1" + ("&nextToken=" + urllib.parse.quote(token) if token else "")
        st, lst, h, _ = s.request("GET", path)
        pages += 1
        check(st == 200 and len(lst) <= 1, "page %d has <= 1 item" % pages)
        seen += [x["sandboxID"] for x in lst]
        token = h.get("x-next-token")
        if not token:
            break
    check(sorted(seen) == sorted(ids) and len(seen) == 3, "pagination visits each sandbox once")
    st, lst, _, _ = s.request("GET", "/v2/sandboxes?order=asc")
    check([x["sandboxID"] for x in lst] == list(reversed(ids)), "order=asc reverses")

    # v1 list
    st, lst, _, _ = s.request("GET", "/sandboxes")
    check(st == 200 and len(lst) == 3, "v1 list")

    # ---- timeout ----
    st, _, _, _ = s.request("POST", "/sandboxes/%s/timeout" % c["sandboxID"], {"timeout": 5})
    check(st == 204, "set timeout -> 204")
    _, d, _, _ = s.request("GET", "/sandboxes/" + c["sandboxID"])
    end = time_of(d["endAt"])
    check(3 <= end - time.time() <= 7, "timeout shortens the end time to ~5s")
    st, js, _, _ = s.request("POST", "/sandboxes/%s/timeout" % c["sandboxID"], {"timeout": "x"})
    check(err_shape(st, js, 400), "timeout wrong type -> 400")
    st, js, _, _ = s.request("POST", "/sandboxes/%s/timeout" % c["sandboxID"], {})
    check(err_shape(st, js, 400), "timeout missing -> 400")
    st, js, _, _ = s.request("POST", "/sandboxes/aaaaaaaaaaaaaaaaaaaa/timeout", {"timeout": 5})
    check(err_shape(st, js, 404), "timeout unknown -> 404")

    # ---- connect never shortens ----
    _, d0, _, _ = s.request("GET", "/sandboxes/" + a["sandboxID"])
    st, js, _, _ = s.request("POST", "/sandboxes/%s/connect" % a["sandboxID"], {"timeout": 10})
    check(st == 200 and js["sandboxID"] == a["sandboxID"], "connect running -> 200 Sandbox")
    _, d1, _, _ = s.request("GET", "/sandboxes/" + a["sandboxID"])
    check(d1["endAt"] == d0["endAt"], "connect with a shorter timeout keeps endAt")
    st, js, _, _ = s.request("POST", "/v2/sandboxes/%s/connect" % a["sandboxID"], {"timeout": 600})
    _, d2, _, _ = s.request("GET", "/sandboxes/" + a["sandboxID"])
    check(st == 200 and time_of(d2["endAt"]) > time_of(d0["endAt"]) + 100,
          "v2 connect with a longer timeout extends endAt")
    st, js, _, _ = s.request("POST", "/sandboxes/%s/connect" % a["sandboxID"], {})
    check(err_shape(st, js, 400), "connect without timeout -> 400")
    st, js, _, _ = s.request("POST", "/v2/sandboxes/%s/connect" % a["sandboxID"], {})
    check(st == 200, "v2 connect without timeout -> 200 (defaults to 300)")
    st, js, _, _ = s.request("POST", "/sandboxes/aaaaaaaaaaaaaaaaaaaa/connect", {"timeout": 5})
    check(err_shape(st, js, 404), "connect unknown -> 404")
    st, js, _, _ = s.request("POST", "/sandboxes/%s/connect" % b["sandboxID"], {"timeout": 60})
    check(js.get("envdAccessToken") == b["envdAccessToken"], "connect returns the token")

    # ---- pause / resume ----
    code, out, _ = s.run(a["sandboxID"], "sleep 300 >/dev/null 2>&1 & echo $!")
    check(code == 0, "start a background process")
    st, _, _, _ = s.request("POST", "/sandboxes/%s/pause" % a["sandboxID"])
    check(st == 204, "pause -> 204")
    st, js, _, _ = s.request("POST", "/sandboxes/%s/pause" % a["sandboxID"])
    check(err_shape(st, js, 409), "pause again -> 409")
    _, d, _, _ = s.request("GET", "/sandboxes/" + a["sandboxID"])
    check(d["state"] == "paused", "get shows paused")
    pid1 = int(open(os.path.join(s.state_dir, "sandboxes", a["sandboxID"], "pid")).read().split()[0])
    stopped = paused_state(a["sandboxID"], pid1)
    check(stopped in ("T", "FROZEN"), "paused sandbox's processes are stopped (%s)" % stopped)
    st, lst, _, _ = s.request("GET", "/v2/sandboxes?state=paused")
    check([x["sandboxID"] for x in lst] == [a["sandboxID"]], "list state=paused")
    st, lst, _, _ = s.request("GET", "/v2/sandboxes?state=running")
    check(a["sandboxID"] not in [x["sandboxID"] for x in lst], "list state=running omits paused")
    st, lst, _, _ = s.request("GET", "/sandboxes")
    check(a["sandboxID"] not in [x["sandboxID"] for x in lst], "v1 list omits paused")
    st, _, _ = s.data_request(a["sandboxID"], 49983, "GET", "/health")
    check(st == 502, "data plane to a paused sandbox -> 502")
    st, js, _, _ = s.request("POST", "/sandboxes/%s/connect" % a["sandboxID"], {"timeout": 60})
    check(st == 201, "connect paused -> 201 (resumed)")
    check(paused_state(a["sandboxID"], pid1) not in ("T", "FROZEN"), "resumed sandbox runs again")
    st, _, _ = s.data_request(a["sandboxID"], 49983, "GET", "/health")
    check(200 <= st < 300, "envd answers after resume")
    s.request("POST", "/sandboxes/%s/pause" % a["sandboxID"], {"memory": True})
    st, js, _, _ = s.request("POST", "/sandboxes/%s/resume" % a["sandboxID"], {"timeout": 60})
    check(st == 201 and js["sandboxID"] == a["sandboxID"], "deprecated resume -> 201")
    st, js, _, _ = s.request("POST", "/sandboxes/%s/resume" % a["sandboxID"], {})
    check(err_shape(st, js, 409), "resume running -> 409")

    # ---- metrics ----
    st, m, _, _ = s.request("GET", "/sandboxes/%s/metrics" % a["sandboxID"])
    # A time series since the start, oldest first (docs/profiles.md).
    check(st == 200 and isinstance(m, list) and m and m[-1]["memUsed"] > 0
          and all(x["cpuCount"] == d["cpuCount"] for x in m)
          and [x["timestampUnix"] for x in m] == sorted(x["timestampUnix"] for x in m),
          "metrics of one sandbox: samples in time order")
    st, m, _, _ = s.request("GET", "/sandboxes/metrics?sandbox_ids=%s,%s" %
                            (a["sandboxID"], b["sandboxID"]))
    check(st == 200 and set(m.get("sandboxes", {})) == {a["sandboxID"], b["sandboxID"]},
          "metrics of many sandboxes")

    # ---- kill ----
    adir = os.path.join(s.state_dir, "sandboxes", a["sandboxID"])
    st, _, _, _ = s.request("DELETE", "/sandboxes/" + a["sandboxID"])
    check(st == 204, "kill -> 204")
    check(not os.path.exists(adir), "kill removes the folder")
    check(proc_gone(pid1), "kill leaves no process")
    st, js, _, _ = s.request("DELETE", "/sandboxes/" + a["sandboxID"])
    check(err_shape(st, js, 404), "kill again -> 404")
    st, js, _, _ = s.request("GET", "/sandboxes/" + a["sandboxID"])
    check(err_shape(st, js, 404), "get killed -> 404")
    st, _, _ = s.data_request(a["sandboxID"], 49983, "GET", "/health")
    check(st == 502, "data plane to a killed sandbox -> 502")

    # ---- TTL: c had timeout 5s ----
    cdir = os.path.join(s.state_dir, "sandboxes", c["sandboxID"])
    deadline = time.time() + 15
    while time.time() < deadline and os.path.exists(cdir):
        time.sleep(0.2)
    check(not os.path.exists(cdir), "TTL kills the sandbox at its end time (folder gone)")
    st, js, _, _ = s.request("GET", "/sandboxes/" + c["sandboxID"])
    check(err_shape(st, js, 404), "expired sandbox -> 404")

    # ---- create with a 1 s timeout dies on its own ----
    e = s.create("base", timeout=1)
    time.sleep(2.5)
    st, _, _, _ = s.request("GET", "/sandboxes/" + e["sandboxID"])
    check(st == 404, "timeout=1 sandbox is gone after 2.5 s")


def time_of(rfc):
    import datetime
    return datetime.datetime.strptime(rfc[:19], "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def paused_state(sid, pid):
    """FROZEN when the sandbox's cgroup freezer holds it (v1 or v2), else
    the process state of its pid 1 (T when stopped by SIGSTOP)."""
    v1 = cgroup_file(sid, "freezer", "freezer.state", "-") or "-"
    v2 = cgroup_file(sid, "-", "-", "cgroup.events") or "-"
    try:
        with open(v1) as f:
            return f.read().strip()
    except OSError:
        pass
    try:
        with open(v2) as f:
            if "frozen 1" in f.read():
                return "FROZEN"
    except OSError:
        pass
    return proc_state(pid)


if __name__ == "__main__":
    run_with_server(run)
