"""The FC recipe of the python-hello template (abx-local/templates/
python-hello/fc, docs/fc-server-template.md), checked without docker or
FC: the Dockerfile starts the server as template.json says (command, user,
cwd, port, env), every COPY source exists in the template folder (the
build context), FROM is FC's official base image, the scripts pass
`bash -n`, start.sh starts the command and then execs the start-up it is
given, and build.sh --print pins the SDK and builds from the image."""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import PLATFORM, check, done, eq, scrubbed_env  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TEMPLATE = os.path.join(ROOT, "abx-local", "templates", "python-hello")
FC = os.path.join(TEMPLATE, "fc")
REGIONS = ("cn-beijing", "cn-shanghai", "cn-hangzhou", "cn-shenzhen", "cn-hongkong",
           "ap-southeast-1", "us-east-1", "us-west-1")
BASE = re.compile(r"fc-e2b-registry\.\$\{REGION\}\.cr\.aliyuncs\.com/runtime/base:v\d+\.\d+\.\d+")
SDK = "2.31.0"


def instructions(path):
    """The Dockerfile as (INSTRUCTION, arguments) pairs: comments dropped,
    continuation lines joined."""
    out, cur = [], ""
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not cur and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if cur and line.lstrip().startswith("#"):
                continue
            if line.endswith("\\"):
                cur += line[:-1] + " "
                continue
            cur += line
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


def flags(argv):
    """start.sh's --name value pairs up to `--`."""
    got, i = {}, 0
    while i < len(argv) and argv[i] != "--":
        if argv[i].startswith("--") and i + 1 < len(argv):
            got[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            got.setdefault("?", []).append(argv[i])
            i += 1
    return got


def main():
    with open(os.path.join(TEMPLATE, "template.json")) as f:
        tmpl = json.load(f)
    start, port = tmpl["start"], tmpl["ready"]["port"]
    ins = instructions(os.path.join(FC, "Dockerfile"))
    by = {}
    for word, rest in ins:
        by.setdefault(word, []).append(rest)

    # FROM: FC's official base image, its region an ARG with a known default.
    froms = by.get("FROM", [])
    eq(len(froms), 1, "one FROM")
    image = froms[0].split()[0] if froms else ""
    check(BASE.fullmatch(image) is not None, "FROM is FC's official base image (%s)" % image)
    first_from = [w for w, _ in ins].index("FROM") if froms else 0
    args = dict(a.split("=", 1) for w, a in ins[:first_from] if w == "ARG" and "=" in a)
    check(args.get("REGION") in REGIONS, "ARG REGION before FROM defaults to a region (%r)"
          % args.get("REGION"))

    # ENTRYPOINT: start.sh with template.json's start; CMD: the base start-up.
    entry = json.loads(by.get("ENTRYPOINT", ["[]"])[-1])
    cmd = json.loads(by.get("CMD", ["[]"])[-1])
    script = entry[0] if entry else ""
    got = flags(entry[1:])
    eq(entry[-1:], ["--"], "ENTRYPOINT ends with -- (the base start-up follows as CMD)")
    eq(got.get("cmd"), start["cmd"], "the Dockerfile's start command is template.json's")
    eq(got.get("user"), start["user"], "the Dockerfile's start user is template.json's")
    eq(got.get("cwd"), start["cwd"], "the Dockerfile's start cwd is template.json's")
    eq(got.get("?"), None, "no stray ENTRYPOINT arguments")
    argv = shlex.split(start["cmd"])
    check("--host" in argv and argv[argv.index("--host") + 1:][:1] == ["0.0.0.0"],
          "the server listens on 0.0.0.0")
    check("--port" in argv and argv[argv.index("--port") + 1:][:1] == [str(port)],
          "the server listens on ready.port %d" % port)
    exposed = [p.split("/")[0] for e in by.get("EXPOSE", []) for p in e.split()]
    check(str(port) in exposed, "EXPOSE %d (ready.port)" % port)
    check(len(cmd) > 0 and cmd[0].startswith("/.fce2b/"),
          "CMD is the base image's start-up (%s)" % cmd)
    env = {}
    for e in by.get("ENV", []):
        for kv in shlex.split(e):
            k, _, v = kv.partition("=")
            env[k] = v
    for k, v in tmpl.get("envVars", {}).items():
        eq(env.get(k), v, "ENV %s as template.json's envVars" % k)

    # COPY: sources exist in the build context; the layout abx-local uses.
    dests = {}
    for c in by.get("COPY", []):
        parts = [p for p in shlex.split(c) if not p.startswith("--")]
        for src in parts[:-1]:
            check(os.path.exists(os.path.join(TEMPLATE, src)),
                  "COPY source %s exists in the template folder" % src)
            dests[src.rstrip("/")] = parts[-1].rstrip("/")
    eq(dests.get("app"), "/opt/abx/app", "app/ is copied to /opt/abx/app")
    eq(dests.get("home"), "/home/" + start["user"], "home/ is copied to the user's home")
    eq(dests.get("fc/start.sh"), script, "the ENTRYPOINT script is fc/start.sh")
    for word in argv:
        if word.startswith("/opt/abx/app/"):
            check(os.path.isfile(os.path.join(TEMPLATE, "app", word[len("/opt/abx/app/"):])),
                  "%s is in app/" % word)

    # The scripts.
    scripts = sorted(n for n in os.listdir(FC) if n.endswith(".sh"))
    eq(scripts, ["build.sh", "start.sh"], "fc/ scripts")
    for name in scripts:
        path = os.path.join(FC, name)
        r = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
        check(r.returncode == 0, "bash -n %s %s" % (name, r.stderr.strip()))
        check(os.access(path, os.X_OK), "%s is executable" % name)

    # start.sh: the command, as the user, in the cwd, then the start-up.
    me = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="abx-fc-recipe-") as d:
        env = dict(os.environ, ABX_SERVER_LOG=os.path.join(d, "server.log"))
        out = os.path.join(d, "out")
        wait = ("for i in $(seq 100); do [ -s %s ] && { cat %s; pwd; exit 7; }; sleep 0.1; done; exit 1"
                % (out, out))
        r = subprocess.run([os.path.join(FC, "start.sh"), "--user", me, "--cwd", d, "--cmd",
                            "exec sh -c 'pwd; id -un' > out", "--", "bash", "-c", wait],
                           cwd="/", env=env, capture_output=True, text=True, timeout=60)
        eq(r.returncode, 7, "start.sh execs the start-up after --")
        eq(r.stdout.split("\n"), [d, me, "/", ""],
           "the command ran in --cwd as --user; the start-up in start.sh's own cwd")
        with open(env["ABX_SERVER_LOG"]) as f:
            check("server started" in f.read(), "start.sh logs the start to ABX_SERVER_LOG")
        r = subprocess.run([os.path.join(FC, "start.sh"), "--user", me, "--cwd", d,
                            "--cmd", "true"], env=env, capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and "no start-up" in r.stderr,
              "start.sh refuses to run without the base start-up (%d %s)"
              % (r.returncode, r.stderr.strip()))

    # build.sh --print: runs nothing, pins the SDK, builds from the image.
    clean = scrubbed_env(PLATFORM)
    r = subprocess.run([os.path.join(FC, "build.sh"), "--print", "cn-hangzhou",
                        "registry.example.com/ns/abx-server:t1", "srv-x"],
                       env=clean, capture_output=True, text=True, timeout=30)
    eq(r.returncode, 0, "build.sh --print %s" % r.stderr.strip())
    text = r.stdout
    check(image.replace("${REGION}", "cn-hangzhou") in text, "build.sh pulls FROM's image of REGION")
    check("--platform linux/amd64" in text, "build.sh builds linux/amd64")
    check("docker push registry.example.com/ns/abx-server:t1" in text, "build.sh pushes IMAGE")
    code = text[text.index("# pip install e2b=="):] if "# pip install e2b==" in text else ""
    check('version("e2b") == "%s"' % SDK in code, "the snippet pins e2b==%s" % SDK)
    check('Template().from_image("registry.example.com/ns/abx-server:t1")' in code
          and 'name="srv-x"' in code, "the snippet builds the template from the image, by name")
    check(".run_cmd(" not in code and ".copy(" not in code, "no build steps (FC refuses them)")
    try:
        compile(code, "snippet", "exec")
        error = None
    except SyntaxError as e:
        error = e
    check(code != "" and error is None, "the snippet is Python (%s)" % (error or "it compiles"))
    check("https://api.cn-hangzhou.e2b.fc.aliyuncs.com" in text,
          "the API URL defaults to REGION's")
    r = subprocess.run([os.path.join(FC, "build.sh"), "--print", "mars-1", "a/b", "c"],
                       env=clean, capture_output=True, text=True, timeout=30)
    check(r.returncode != 0 and "region" in r.stderr, "build.sh refuses an unknown region")
    done()


if __name__ == "__main__":
    main()
