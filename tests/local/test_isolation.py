"""abx-local: kernel-level isolation between sandboxes and from the host."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from abxlocal import check, run_with_server  # noqa: E402


def wait_port(s, sid, port, secs=10):
    deadline = time.time() + secs
    while time.time() < deadline:
        st, body, _ = s.data_request(sid, port, "GET", "/")
        if st == 200:
            return body
        time.sleep(0.1)
    return None


def run(s):
    a = s.create("base", timeout=300)["sandboxID"]
    b = s.create("base", timeout=300)["sandboxID"]
    sb = s.create("base", timeout=300, secure=True)
    sec, tok = sb["sandboxID"], sb["envdAccessToken"]

    code, out, _ = s.run(a, "hostname")
    check(code == 0 and out.strip() == a, "hostname is the sandbox id (A)")
    code, out, _ = s.run(b, "hostname")
    check(out.strip() == b, "hostname is the sandbox id (B)")
    code, out, _ = s.run(a, "id -u; id -un; echo $HOME; pwd")
    check(out.split() == ["1000", "user", "/home/user", "/home/user"],
          "default user is user(1000) in /home/user: %r" % out)
    code, out, _ = s.run(a, "id -u; id -un", user="root")
    check(out.split() == ["0", "root"], "user root is uid 0")
    code, out, _ = s.run(a, "stat -c '%u %a' /home/user /tmp")
    check(out.split() == ["1000", "755", "0", "1777"], "/home/user owned by user, /tmp 1777: %r" % out)

    # files
    s.run(a, "echo secret-a > /home/user/a.txt; echo tmp-a > /tmp/a.txt")
    code, out, _ = s.run(b, "ls /home/user /tmp; cat /home/user/a.txt /tmp/a.txt")
    check(code != 0 and "secret-a" not in out and "tmp-a" not in out,
          "B cannot see A's /home/user or /tmp")
    code, out, _ = s.run(b, "ls -A %s/sandboxes 2>/dev/null | wc -l" % s.state_dir, user="root")
    check(out.strip() == "0", "the host's sandboxes folder is hidden inside a sandbox")
    code, out, _ = s.run(b, "find / -name a.txt -path '*%s*' 2>/dev/null | head" % a, user="root")
    check(out.strip() == "", "B (root) finds no file of A anywhere")
    code, out, _ = s.run(a, "cat /run/abx/config.json >/dev/null 2>&1 && echo readable || echo denied")
    check(out.strip() == "denied", "user cannot read envd's config (token)")

    # host is read-only, even for root
    code, out, _ = s.run(a, "touch /var/tmp/mine && ls -A /var/tmp")
    check(code == 0 and out.split() == ["mine"], "/var/tmp is the sandbox's own: %r" % out)
    for path in ("/usr/abx-probe", "/etc/abx-probe", "/var/abx-probe",
                 s.state_dir + "/abx-probe", "/opt/abx-probe"):
        code, out, err = s.run(a, "touch %s" % path, user="root")
        check(code != 0 and not os.path.exists(path), "root cannot write %s" % path)
    code, _, _ = s.run(a, "echo h > /proc/sysrq-trigger", user="root")
    check(code != 0, "root cannot write /proc/sysrq-trigger")
    code, _, _ = s.run(a, "echo 1 > /sys/kernel/mm/ksm/run || touch /sys/abx-probe", user="root")
    check(code != 0, "root cannot write /sys")
    code, _, _ = s.run(a, "mount -t tmpfs x /mnt", user="root")
    check(code != 0, "root cannot mount")
    code, _, _ = s.run(a, "echo 1 > /proc/sys/kernel/sysrq", user="root")
    check(code != 0, "root cannot write /proc/sys")
    code, _, _ = s.run(a, "hostname evil", user="root")
    code2, out, _ = s.run(a, "hostname")
    check(code != 0 and out.strip() == a, "root cannot change the hostname")

    # processes
    s.run(a, "nohup sleep 1234 >/dev/null 2>&1 &")
    code, out, _ = s.run(a, "pgrep -x sleep | head -1")
    apid = out.strip()
    check(apid.isdigit(), "A's background process is visible in A")
    code, out, _ = s.run(b, "pgrep -x sleep || echo none", user="root")
    check(out.strip() == "none", "B cannot see A's processes")
    code, out, _ = s.run(b, "ls /proc | grep -c '^[0-9]'", user="root")
    check(int(out.strip() or 99) < 10, "B sees only its own few processes (%s)" % out.strip())
    code, out, _ = s.run(b, "kill -9 %s" % apid, user="root")
    code2, out2, _ = s.run(a, "pgrep -x sleep || echo gone")
    check(out2.strip() != "gone", "B cannot kill A's process")
    code, out, _ = s.run(a, "ls /proc | grep -c '^[0-9]'", user="root")
    check(int(out.strip() or 99) < 12, "A cannot see host processes")

    # network: loopback only; the host's ports are not reachable
    code, out, _ = s.run(a, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
    check(out.split() == ["lo"], "only loopback in the network namespace: %r" % out)
    port = s.api.split(":")[1]
    code, out, _ = s.run(a, "python3 -c \"import socket;socket.create_connection(('127.0.0.1',%s),2)\""
                         " && echo reached || echo refused" % port)
    check(out.strip().endswith("refused"), "the host's control port is not reachable")

    # both can listen on 8000, each reached through its own route
    for sid, word in ((a, "from-A"), (b, "from-B")):
        # `&` on the server alone, with its output redirected: envd ends a
        # command only when nothing holds its stdout/stderr any more.
        s.run(sid, "mkdir -p /home/user/www && echo %s > /home/user/www/index.html; "
                   "cd /home/user/www; nohup python3 -m http.server 8000 >/dev/null 2>&1 &" % word)
    ba, bb = wait_port(s, a, 8000), wait_port(s, b, 8000)
    check(ba is not None and b"from-A" in ba, "A serves its own page on 8000")
    check(bb is not None and b"from-B" in bb, "B serves its own page on 8000")
    c = __import__("http.client").client.HTTPConnection(s.data, timeout=10)
    c.request("GET", "/", headers={"Host": "8000-%s.%s" % (b, s.env["E2B_DOMAIN"])})
    r = c.getresponse()
    check(r.status == 200 and b"from-B" in r.read(), "Host-based routing reaches B:8000")
    c.close()
    st, body, _ = s.data_request(a, 8001, "GET", "/")
    check(st == 502 and b"8001" in body, "closed port -> 502 naming the port")

    # secure sandbox: envd needs the token
    try:
        s.run(sec, "true")
        ok = False
    except RuntimeError as e:
        ok = "401" in str(e)
    check(ok, "secure sandbox: Process/Start without X-Access-Token -> 401")
    code, out, _ = s.run(sec, "echo yes", token=tok)
    check(code == 0 and out.strip() == "yes", "secure sandbox: with the token it runs")

    # kill: nothing left behind
    pids = {}
    for sid in (a, b, sec):
        with open(os.path.join(s.state_dir, "sandboxes", sid, "pid")) as f:
            pids[sid] = int(f.read().split()[0])
    for sid in (a, b, sec):
        check(s.kill(sid) == 204, "kill %s" % sid)
        check(not os.path.exists(os.path.join(s.state_dir, "sandboxes", sid)), "folder removed")
        check(not os.path.exists("/proc/%d" % pids[sid]), "sandbox pid 1 gone")
    leftovers = os.popen("pgrep -f '^sleep 1234$'").read().split()
    check(leftovers == [], "no process of the sandboxes left on the host")


if __name__ == "__main__":
    run_with_server(run)
