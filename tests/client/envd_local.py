"""Runs a client test driver against a fresh server and stops it after:
by default `abx-local serve` on 127.0.0.1 free ports with a temporary
state dir; with --fake, envd_fake.py (broken and dripping replies). The
server's E2B_* settings go into the driver's environment; the driver is
argv[1:]. Exit status: the driver's."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))


def with_fake(argv):
    fake = subprocess.Popen([sys.executable, os.path.join(HERE, "envd_fake.py")],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = fake.stdout.readline().split()
        if len(line) != 2 or line[0] != "port":
            raise RuntimeError("fake server did not start")
        url = "http://127.0.0.1:%s" % line[1]
        env = dict(os.environ, E2B_SANDBOX_URL=url, E2B_API_URL=url,
                   E2B_DOMAIN="localhost:" + line[1], E2B_API_KEY="e2b_fake")
        return subprocess.run(argv, env=env, timeout=240).returncode
    finally:
        fake.kill()
        fake.wait()


def with_local(argv):
    from abxlocal import Server
    s = Server()
    rc = 1
    try:
        env = dict(os.environ)
        env.update(s.vars("E2B_"))
        rc = subprocess.run(argv, env=env, timeout=240).returncode
        if rc != 0:
            sys.stderr.write(s.stderr()[-3000:])
    finally:
        s.cleanup()
    return rc


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--fake":
        sys.exit(with_fake(sys.argv[2:]))
    sys.exit(with_local(sys.argv[1:]))


if __name__ == "__main__":
    main()
