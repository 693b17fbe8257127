"""abx-local serve --vary SEED (docs/profiles.md "Varied details"): every
detail `abx-local switches` lists is drawn away from the profile's own
answer at one or more of seeds 1-10, and every choice it lists is drawn at
some seed (no variation that never varies); a server started with --vary
reports its seed and draw and behaves as drawn, detail by detail; bad
seeds and choices are usage errors naming them."""
import os
import re
import subprocess
import sys
from datetime import datetime

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import LOCAL_BIN, Server  # noqa: E402
from abxtest import check, done  # noqa: E402
from vary_probes import (ENVD, MiB, egress, gateway, modes, paged, secure_and_metadata,  # noqa: E402
                         start_envs, times_and_reaping, upload, watched_twice)

FC_ONLY = {"messages", "exit-text", "dead-status", "token-denied", "unknown-template"}   # e2b's capabilities promise


def details():
    """{detail: [choices]} from `abx-local switches`."""
    out = subprocess.run([LOCAL_BIN, "switches"], capture_output=True, text=True, check=True).stdout
    lines = out.split("varied details", 1)[1].splitlines()
    table = lines[[i for i, x in enumerate(lines) if x.startswith("detail ")][0] + 1:]
    got = {}
    for line in table:
        if not line.strip():
            break   # the not-varied details follow
        m = re.match(r"^(\S+)\s+(\S+)\s+\S", line)
        if m:
            got[m.group(1)] = m.group(2).split(",")
    return got


def draw(seed):
    out = subprocess.run([LOCAL_BIN, "switches", "--vary", str(seed)], capture_output=True,
                         text=True, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines())


def check_draws(table):
    check(len(table) >= 10, "switches lists the varied details (%d)" % len(table))
    out = subprocess.run([LOCAL_BIN, "switches"], capture_output=True, text=True).stdout
    check(all(("\n%s " % x) in out for x in ("list-depth", "symlink-entry", "process-group",
                                             "ports")),
          "switches lists the details it leaves alone, with why")
    for seed in range(1, 11):
        print("seed %d: %s" % (seed, " ".join("%s=%s" % kv for kv in sorted(draw(seed).items()))))
    for name, choices in sorted(table.items()):
        away = [s for s in range(1, 11) if draw(s)[name] != choices[0]]
        check(away, "%s: drawn away from %s at seeds %s" % (name, choices[0], away))
        seen = {draw(s)[name] for s in range(1, 51)}
        check(seen == set(choices), "%s: every choice drawn in seeds 1-50 (%s of %s)" % (
            name, sorted(seen), choices))
    check(draw(0) == {k: v[0] for k, v in table.items()}, "seed 0 draws every profile's own answer")
    check(draw(7) == draw(7), "a seed draws the same every time")


def usage_errors():
    for args, want in ((["serve", "--vary", "x1"], "--vary wants a seed"),
                       (["serve", "--switch", "list-order=sideways"], "list-order is one of"),
                       (["switches", "--vary", "-3"], "--vary wants a seed")):
        p = subprocess.run([LOCAL_BIN] + args, capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and want in p.stderr,
              "%s: exit 2 naming it (%d, %r)" % (" ".join(args), p.returncode, p.stderr[-200:]))


def reported(s, seed, profile):
    st, prof, _, _ = s.request("GET", "/admin/profile")
    v = (prof or {}).get("vary") or {}
    want = draw(seed)
    if profile == "e2b":
        want.update({k: details()[k][0] for k in FC_ONLY})
    check(st == 200 and v.get("seed") == seed and v.get("details") == want,
          "%s --vary %d: GET /admin/profile reports the seed and the draw in force (%r)" % (
              profile, seed, v))
    check(s.env.get("ABX_LOCAL_VARY") == str(seed), "the ready output exports ABX_LOCAL_VARY")
    check(("vary seed %d" % seed) in s.stderr(), "the log names the seed")


def behaviours():
    """Each detail turned by --switch on a seed-0 server, as drawn."""
    sw = ["template-id=opaque", "list-order=oldest", "dead-listed=terminated",
          "dead-status=410", "upload-cap=32MiB", "messages=terse", "max-timeout=7d",
          "id-check=strict", "key-check=strict", "token-denied=403", "metadata-check=strict",
          "watch-events=twice", "stdin-refused=invalid", "time-format=cst-s", "reap-delay=30s",
          "umask=002", "unknown-template=400", "watch-rename=to", "watch-subdirs=late",
          "lifetime-from=request", "page-size=20", "egress=fc"]
    args = ["--profile", "fc", "--vary", "0"]
    for x in sw:
        args += ["--switch", x]
    with Server(args) as s:
        a = s.create("base", secure=True, metadata={"v": "1"})
        check(a["templateID"] != "base" and a.get("alias") == "base",
              "template-id=opaque: an opaque templateID, the name as alias (%s/%s)" % (
                  a["templateID"], a.get("alias")))
        b = s.create(a["templateID"], metadata={"v": "1"})
        check(b["templateID"] == a["templateID"], "a sandbox is created by the opaque id too")
        st, js, _, _ = s.request("GET", "/v2/sandboxes?metadata=v%3D1")
        order = [x["sandboxID"] for x in js or []]
        check(order == [a["sandboxID"], b["sandboxID"]], "list-order=oldest: oldest first")
        st, data = upload(s, a["sandboxID"], a["envdAccessToken"], 33 * MiB)
        check(st == 413 and b"EntityTooLarge" in data, "upload-cap: 33 MiB refused with 413 (%d)" % st)
        st, data = upload(s, a["sandboxID"], a["envdAccessToken"], 31 * MiB)
        check(st == 200, "upload-cap: 31 MiB accepted (%d %r)" % (st, data[:200]))
        st, js, _, _ = s.request("GET", "/sandboxes/sbx-" + "0" * 26)
        check(st == 404 and js["message"].startswith("error 404; "),
              "messages=terse: other words, status and shape kept (%r)" % js)
        c = s.create("base", timeout=7 * 86400)
        _, info, _, _ = s.get(c["sandboxID"])
        life = (datetime.fromisoformat(info["endAt"].replace("Z", "+00:00")) -
                datetime.fromisoformat(info["startedAt"].replace("Z", "+00:00")))
        check(abs(life.total_seconds() - 7 * 86400) < 5,
              "max-timeout=7d: a 7-day timeout is kept (%s)" % life)
        st, _, _, _ = s.request("POST", "/sandboxes", {"templateID": "base",
                                                      "timeout": 7 * 86400 + 1})
        check(st == 400, "max-timeout=7d: a second more is refused with 400 (%d)" % st)
        s.kill(c["sandboxID"])
        st, _, _, _ = s.request("POST", "/sandboxes/nosuchsandbox/connect", {"timeout": 10})
        check(st == 400, "id-check=strict: an id not of the platform's shape is 400 (%d)" % st)
        shaped = "sbx-" + "0" * 26
        st, _, _, _ = s.request("POST", "/sandboxes/%s/connect" % shaped, {"timeout": 10})
        check(st == 404, "... one of its shape that no sandbox has is 404 (%d)" % st)
        st, _, _, _ = s.request("GET", "/v2/sandboxes", headers={"X-API-KEY": "no such key"})
        check(st == 400, "key-check=strict: a key with a space is 400 (%d)" % st)
        st, _, _, _ = s.request("GET", "/v2/sandboxes", headers={"X-API-KEY": "e2b_" + "0" * 40})
        check(st == 401, "... a well-formed wrong key is 401 (%d)" % st)
        secure_and_metadata(s, a)
        times_and_reaping(s, a["sandboxID"])
        paged(s)
        egress(s, True)
        st, js, _, _ = s.request("POST", "/sandboxes", {"templateID": "no-such-template"})
        check(st == 400 and "no-such-template" in js["message"],
              "unknown-template=400: 400 naming it (%d %r)" % (st, js))
        check(modes(s, b["sandboxID"]) == ["664", "775", "664"],
              "umask=002: the API's file and folder and a command's file are group-writable")
        watched_twice(s, b["sandboxID"])
        s.kill(b["sandboxID"])
        st, js, _, _ = s.request("GET", "/v2/sandboxes?metadata=v%3D1")
        dead = [x for x in js or [] if x["sandboxID"] == b["sandboxID"]]
        check(dead and dead[0]["state"] == "terminated",
              "dead-listed: a killed sandbox listed as terminated (%r)" % dead)
        check(b["sandboxID"] not in s.ids({"v": "1"}), "... never under state=running,paused")
        check(s.get(b["sandboxID"])[0] == 404, "... and GET /sandboxes/{id} is 404")
        st, _, _ = s.data_request(b["sandboxID"], 8000, "GET", "/")
        check(st == 410, "dead-status=410: a killed sandbox's port answers 410 (%d)" % st)
        st, _, _ = s.data_request(b["sandboxID"], ENVD, "GET", "/health")
        check(st == 502, "... envd's port keeps 502, which SDKs read as not running (%d)" % st)
    # Started under umask 077: envd sets its own, whoever starts abx-local.
    old = os.umask(0o077)
    try:
        s = Server(["--profile", "e2b", "--vary", "0", "--switch", "dead-status=404",
                    "--switch", "messages=terse", "--switch", "unknown-template=400",
                    "--switch", "token-denied=403", "--switch", "upload-cap=64MiB",
                    "--gateway", "fc"])
    finally:
        os.umask(old)
    with s:
        st, js, _, _ = s.request("GET", "/sandboxes/nosuchsandbox")
        check(st == 404 and not js["message"].startswith("error 404"),
              "e2b: messages stay upstream's (e2b-messages)")
        st, _, _ = s.data_request("nosuchsandbox", 8000, "GET", "/")
        check(st == 502, "e2b: an unknown sandbox stays 502 (e2b-proxy) (%d)" % st)
        a = s.create("base", secure=True)
        st, _ = s.rpc(a["sandboxID"], "/filesystem.Filesystem/Stat", {"path": "/tmp"})
        check(st == 401, "e2b: envd's own 401 for a missing token (e2b-proxy) (%d)" % st)
        st, _, _, _ = s.request("POST", "/sandboxes", {"templateID": "no-such-template"})
        check(st == 404, "e2b: an unknown template stays 404 (%d)" % st)
        a = s.create("base", secure=True)
        st, _ = upload(s, a["sandboxID"], a["envdAccessToken"], 65 * MiB)
        check(st == 413, "upload-cap=64MiB: 65 MiB refused with 413 (%d)" % st)
        st, _ = upload(s, a["sandboxID"], a["envdAccessToken"], 63 * MiB)
        check(st == 200, "... 63 MiB accepted (%d)" % st)
        gateway(s, "1.0", 32)
        start_envs(s, False)
        egress(s, False)
        check(modes(s, s.create("base")["sandboxID"]) == ["644", "755", "644"],
              "umask 022 whatever the umask of who started abx-local (077 here)")


def main():
    table = details()
    check_draws(table)
    usage_errors()
    for profile, seed in (("fc", 2), ("e2b", 5)):
        with Server(["--profile", profile, "--vary", str(seed)]) as s:
            reported(s, seed, profile)
    with Server(["--profile", "fc", "--vary"]) as s:
        seed = s.env.get("ABX_LOCAL_VARY", "")
        check(seed.isdigit() and ("vary seed %s" % seed) in s.stderr(),
              "--vary without a seed draws one and prints it (%s)" % seed)
    behaviours()
    with Server(["--profile", "e2b", "--vary", "0", "--switch", "gateway=buffer",
                 "--switch", "gateway-http=1.1", "--switch", "gateway-cap=64MiB",
                 "--switch", "start-envs=create"]) as s:
        gateway(s, "1.1", 64)
        start_envs(s, True)
    done()


if __name__ == "__main__":
    main()
