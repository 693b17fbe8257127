"""Helper of local_bench.sh (python3 stdlib). Prints one line per figure."""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import abxlocal  # noqa: E402
from abxtest import free_port, pid_ns, pidns_procs  # noqa: E402


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def rss_of_tree(pids):
    total = 0
    for p in pids:
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def transfer(addr, headers, path, size):
    """Uploads size bytes then downloads them; returns (write MB/s, read MB/s)."""
    block = os.urandom(min(size, 1 << 20))
    c = http.client.HTTPConnection(addr, timeout=300)
    c.putrequest("POST", path)
    for k, v in list(headers.items()) + [("Content-Type", "application/octet-stream"),
                                         ("Content-Length", str(size))]:
        c.putheader(k, v)
    c.endheaders()
    t0 = time.perf_counter()
    sent = 0
    while sent < size:
        n = min(len(block), size - sent)
        c.send(block[:n])
        sent += n
    r = c.getresponse()
    r.read()
    tw = time.perf_counter() - t0
    if r.status != 200:
        raise RuntimeError("upload: HTTP %d" % r.status)
    t0 = time.perf_counter()
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    got = 0
    while True:
        chunk = r.read(1 << 20)
        if not chunk:
            break
        got += len(chunk)
    tr = time.perf_counter() - t0
    c.close()
    if got != size:
        raise RuntimeError("download: %d of %d bytes" % (got, size))
    mb = size / 1e6
    return mb / tw, mb / tr


def first_builds(local_bin):
    """Times the first build of each shipped template's root into a fresh
    cache (mmdebstrap from the machine's Debian sources), one at a time."""
    import json
    import shutil
    import subprocess
    import tempfile
    cache = tempfile.mkdtemp(prefix="abx-bench-cache-")
    try:
        out = subprocess.run([local_bin, "template", "list", "--cache-dir", cache],
                             capture_output=True, text=True, check=True).stdout
        names = [line.split()[0] for line in out.splitlines()[1:] if line.strip()]
        for name in names:
            t0 = time.perf_counter()
            r = subprocess.run([local_bin, "template", "build", name, "--cache-dir", cache],
                               capture_output=True, text=True)
            secs = time.perf_counter() - t0
            size = 0
            for meta in os.listdir(os.path.join(cache, "rootfs")):
                if meta.endswith(".json"):
                    with open(os.path.join(cache, "rootfs", meta)) as f:
                        m = json.load(f)
                    if m.get("template") == name:
                        size = m.get("bytes", 0)
            print("template first build (%s): %s in %.1f s, %.0f MiB"
                  % (name, "ok" if r.returncode == 0 else "FAILED", secs, size / 2**20))
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main():
    abxlocal.LOCAL_BIN, abxlocal.ENVD_BIN = sys.argv[1], sys.argv[2]
    if os.environ.get("ABX_BENCH_BUILDS", "1") != "0":
        first_builds(sys.argv[1])
    s = abxlocal.Server()
    try:
        bench(s)
    finally:
        s.cleanup()
    if shutil.which("runsc") and os.environ.get("ABX_BENCH_GVISOR", "1") != "0":
        g = abxlocal.Server(extra=["--runtime", "gvisor"])
        try:
            n = int(os.environ.get("ABX_BENCH_N", "30"))
            t = create_times(g, n)
            print("sandbox create under gVisor (--runtime gvisor, ptrace platform, n=%d): "
                  "p50 %.1f ms, p99 %.1f ms" % (n, pct(t, 50), pct(t, 99)))
        finally:
            g.cleanup()


# create p50 of this bench on the 2-core machine of docs/security.md at
# 5d61824, the last commit before user namespaces, seccomp and the log pipe
# (the old binary, same cached root, same machine, n=30).
CREATE_P50_BEFORE_USERNS = 24.3


def create_times(s, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        sid = s.create("base", timeout=60)["sandboxID"]
        times.append((time.perf_counter() - t0) * 1000)
        s.kill(sid)
    return times


def bench(s):
    n = int(os.environ.get("ABX_BENCH_N", "30"))
    times = create_times(s, n)
    p50 = pct(times, 50)
    print("sandbox create (base, cached root, overlay mount included, n=%d): "
          "p50 %.1f ms, p99 %.1f ms (target p50 < 50 ms)"
          % (n, p50, pct(times, 99)))
    print("  vs %.1f ms before user namespaces (5d61824): %+.0f %% (aim: at most +20 %%)"
          % (CREATE_P50_BEFORE_USERNS, (p50 / CREATE_P50_BEFORE_USERNS - 1) * 100))

    before = mem_available()
    ids = [s.create("base", timeout=300)["sandboxID"] for _ in range(20)]
    time.sleep(0.5)
    pids = []
    for sid in ids:
        pids += list(pidns_procs(pid_ns(s.sandbox_pid(sid))))
    rss = rss_of_tree(pids)
    used = before - mem_available()
    print("20 sandboxes alive: %d processes, RSS %.1f MiB (%.2f MiB each), "
          "MemAvailable drop %.1f MiB, server RSS %.1f MiB"
          % (len(pids), rss / 2**20, rss / 2**20 / 20, used / 2**20,
             rss_of_tree([s.proc.pid]) / 2**20))
    for sid in ids[1:]:
        s.kill(sid)
    sid = ids[0]

    rt = []
    for _ in range(50):
        t0 = time.perf_counter()
        code, _, _ = s.run(sid, "true")
        rt.append((time.perf_counter() - t0) * 1000)
    print("command round trip (Process/Start 'true' via proxy, n=50): p50 %.1f ms, p99 %.1f ms"
          % (pct(rt, 50), pct(rt, 99)))

    # Baseline: the same envd directly on host loopback (no proxy, no netns).
    tmp = tempfile.mkdtemp(prefix="abx-bench-")
    cfg = os.path.join(tmp, "config.json")
    with open(cfg, "w") as f:
        json.dump({"sandboxID": "bench", "templateID": "base", "envVars": {}}, f)
    port = free_port()
    envd = subprocess.Popen([abxlocal.ENVD_BIN, "--config", cfg, "--port", str(port),
                             "--listen-addr", "127.0.0.1"], stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        route = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983"}
        for size, label in ((1 << 20, "1 MiB"), (100 << 20, "100 MiB")):
            pw, pr = transfer(s.data, route, "/files?path=/home/user/b.bin&username=user", size)
            dw, dr = transfer("127.0.0.1:%d" % port, {},
                              "/files?path=%s/b.bin&username=root" % tmp, size)
            print("file %s via proxy: write %.0f MB/s, read %.0f MB/s | direct loopback envd: "
                  "write %.0f MB/s, read %.0f MB/s" % (label, pw, pr, dw, dr))
    finally:
        envd.terminate()
        envd.wait()
        subprocess.run(["rm", "-rf", tmp])
    s.kill(sid)


if __name__ == "__main__":
    main()
