"""abx-local: template handling with a private templates dir: home/ copied
into /home/user, app/ bound at /opt/abx/app, env vars (template, then the
create request), aliases, the start command, and a failing ready check."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import run_with_server  # noqa: E402
from abxtest import check, write_file  # noqa: E402


ROOTFS = {"debian": "bookworm", "variant": "essential", "packages": []}


def main():
    with tempfile.TemporaryDirectory(prefix="abx-local-tmpl-") as tdir:
        write_file(tdir + "/base/template.json", json.dumps({"templateID": "base", "rootfs": ROOTFS}))
        write_file(tdir + "/full/template.json", json.dumps({
            "templateID": "full-v1", "aliases": ["full", "full-alias"], "rootfs": ROOTFS,
            "envVars": {"T_ONLY": "t", "BOTH": "from-template"},
            "start": {"cmd": "echo started > /home/user/started.txt; exec sleep 1000",
                      "user": "user", "cwd": "/home/user"},
            "cpuCount": 3, "memoryMB": 768, "diskSizeMB": 2048}))
        write_file(tdir + "/full/home/.config/app.conf", "conf\n", 0o644)
        write_file(tdir + "/full/home/run.sh", "#!/bin/sh\necho run\n", 0o755)
        os.symlink("run.sh", tdir + "/full/home/link")
        write_file(tdir + "/full/app/hello.sh", "echo hello from app\n", 0o644)
        write_file(tdir + "/never/template.json", json.dumps({
            "templateID": "never", "rootfs": ROOTFS, "ready": {"port": 9, "path": "/", "timeoutMs": 300}}))
        write_file(tdir + "/broken/template.json", "{not json")
        run_with_server(run, extra=["--templates", tdir])


def run(s):
    sb = s.create("full", timeout=60, envVars={"BOTH": "from-request", "R_ONLY": "r"})
    sid = sb["sandboxID"]
    check(sb["templateID"] == "full-v1" and sb.get("alias") == "full", "alias resolves to the id")
    _, d, _, _ = s.request("GET", "/sandboxes/" + sid)
    check((d["cpuCount"], d["memoryMB"], d["diskSizeMB"]) == (3, 768, 2048), "sizes from template")
    code, out, _ = s.run(sid, "cat ~/.config/app.conf; ./run.sh; readlink link; "
                              "stat -c '%U %a' run.sh .config")
    check(out.split() == ["conf", "run", "run.sh", "user", "755", "user", "755"],
          "home/ copied with modes, owner user, symlinks: %r" % out)
    code, out, _ = s.run(sid, "sh /opt/abx/app/hello.sh; touch /opt/abx/app/x 2>/dev/null || echo ro")
    check(out.split() == ["hello", "from", "app", "ro"], "app/ at /opt/abx/app, read-only: %r" % out)
    code, out, _ = s.run(sid, "echo $T_ONLY $BOTH $R_ONLY")
    check(out.split() == ["t", "from-request", "r"], "env: template vars, request overrides: %r" % out)
    code, out, _ = s.run(sid, "sleep 0.5; cat ~/started.txt; for p in /proc/[0-9]*; do "
                              "[ \"$(cat $p/comm 2>/dev/null)\" = sleep ] && { echo running; break; }; done")
    check(out.split() == ["started", "running"], "start command ran at boot: %r" % out)

    dirs_before = set(os.listdir(os.path.join(s.state_dir, "sandboxes")))
    st, js, _, _ = s.request("POST", "/sandboxes", {"templateID": "never"})
    check(st == 500 and "ready" in js.get("message", ""), "failing ready check -> 500 naming it")
    check(set(os.listdir(os.path.join(s.state_dir, "sandboxes"))) == dirs_before,
          "failed create leaves no folder")
    st, lst, _, _ = s.request("GET", "/v2/sandboxes")
    check([x["sandboxID"] for x in lst] == [sid], "failed create is not listed")
    st, js, _, _ = s.request("POST", "/sandboxes", {"templateID": "broken"})
    check(st == 500 and js.get("code") == 500, "broken template.json -> 500")
    st, js, _, _ = s.request("POST", "/sandboxes", {"templateID": "full-alias"})
    check(st == 201, "second alias works")
    if st == 201:
        s.kill(js["sandboxID"])


if __name__ == "__main__":
    main()
