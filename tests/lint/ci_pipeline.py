"""The two CI files as pipelines, for tests/lint/test_ci_examples.py: which
job is the shard matrix, the janitor, the merge; the structural rules each
file must keep (checked with abxtest.check), one run id for the whole
pipeline among them; and how to run a job's abx-e2e scripts here, offline,
with sample values for the CI's variables and secrets (GitHub's ${{ }}
expressions evaluated, GitLab's variables expanded by bash). Steps without
an abx-e2e command (checkout, package installs, the credentials guard) are
not run."""
import re

import ci_model as cm
from abxtest import check, eq, run

SAMPLE_RUN = "4242"     # github.run_id, CI_PIPELINE_ID
# Credentials and endpoints: only from the CI's secrets / masked variables.
CREDS = ("ABX_SANDBOX_API_KEY", "E2B_API_KEY", "E2B_ACCESS_TOKEN",
         "ABX_SANDBOX_BASE_URL", "E2B_API_URL", "ABX_SANDBOX_DOMAIN",
         "E2B_DOMAIN", "ABX_SANDBOX_URL", "E2B_SANDBOX_URL")
SECRET_REF = re.compile(r"^\$\{\{\s*secrets\.[A-Za-z_][A-Za-z0-9_]*\s*\}\}$")
# A script giving E2E_RUN_ID a value: `export E2E_RUN_ID=...`, `E2E_RUN_ID=...
# cmd`, `E2E_RUN_ID+=...`, `${E2E_RUN_ID:=...}`, `echo E2E_RUN_ID=... >> $GITHUB_ENV`.
RUN_ID_SET = re.compile(r"\bE2E_RUN_ID\+?=|\$\{E2E_RUN_ID:?=")
RUN_ID_REF = ("$E2E_RUN_ID", "${E2E_RUN_ID}")


def bash(script, cwd, env):
    """A CI script as the runner would run it: bash, -e, pipefail."""
    return run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
               cwd=cwd, env=env, timeout=600)


def check_one_run_id(pl):
    """One run id for the whole pipeline: the shards share the pipeline's
    E2E_RUN_ID unchanged (a run's own sweeps take only its session's
    sandboxes, so sharing is safe), and the janitor deletes by it with
    exactly one `abx-e2e cleanup --run-id "$E2E_RUN_ID" --yes`, no loop."""
    p = pl.path
    for j, texts in pl.scripts.items():
        bad = [ln.strip() for t in texts for ln in t.split("\n") if RUN_ID_SET.search(ln)]
        check(not bad, "%s: job %s's scripts leave E2E_RUN_ID as the pipeline sets it "
              "(no per-shard run id)%s" % (p, j, (": %s" % bad) if bad else ""))
    if not eq(len(pl.janitors), 1, "%s: one janitor job (abx-e2e cleanup) %s"
              % (p, pl.janitors)):
        return
    j = pl.janitors[0]
    texts = pl.scripts[j]
    calls = [args for t in texts for _, args in cm.invocations(t, 1)
             if cm.subcommand(args)[0] == "cleanup"]
    if not eq(len(calls), 1, "%s: job %s runs abx-e2e cleanup exactly once" % (p, j)):
        return
    args = cm.subcommand(calls[0])[1]
    check(cm.option_values(args, "--run-id") in [[r] for r in RUN_ID_REF] and "--yes" in args,
          "%s: job %s runs cleanup --run-id \"$E2E_RUN_ID\" --yes (got %s)"
          % (p, j, " ".join(args)))
    found = [w for t in texts for _, w in cm.loops(t, 1)]
    check(not found, "%s: job %s has no shell loop (one cleanup covers every shard)%s"
          % (p, j, (": %s" % found) if found else ""))


def subs_of(texts):
    return {cm.subcommand(args)[0] for t in texts for _, args in cm.invocations(t, 1)}


def apt_packages(texts, expand):
    """The packages of the `apt-get install` lines of texts, $VARs expanded."""
    out = set()
    for t in texts:
        for m in re.finditer(r"apt-get\s+install\s+([^\n;&|]*)", t):
            words = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?",
                           lambda v: expand(v.group(1)), m.group(1)).split()
            out |= {w for w in words if not w.startswith("-")}
    return out


class GitHub:
    name = "GitHub"

    def __init__(self, path, text, data):
        self.path, self.text, self.d = path, text, data
        self.jobs = data.get("jobs") or {}
        self.wf_env = data.get("env") or {}
        self.secrets = set(re.findall(r"secrets\.([A-Za-z_][A-Za-z0-9_]*)", text))
        self.ctx0 = {"github.run_id": SAMPLE_RUN, "github.run_attempt": "1"}
        runs = {j: [s.get("run", "") for s in (job.get("steps") or [])]
                for j, job in self.jobs.items()}
        self.subs = {j: subs_of(r) for j, r in runs.items()}
        self.runs = self.scripts = runs
        self.shard_job = next((j for j, job in self.jobs.items()
                               if "shard" in ((job.get("strategy") or {}).get("matrix") or {})),
                              None)
        self.shards = (self.jobs[self.shard_job]["strategy"]["matrix"]["shard"]
                       if self.shard_job else [])
        self.janitors = [j for j, s in self.subs.items() if "cleanup" in s]
        self.reports = [j for j, s in self.subs.items() if "merge" in s]

    def pipeline_run_id(self):
        return cm.gha_eval(self.wf_env.get("E2E_RUN_ID", ""), self.ctx0)

    def structure(self):
        p, jobs = self.path, self.jobs
        check(self.d.get("on", self.d.get(True)), "%s: has triggers (on:)" % p)
        for j, job in jobs.items():
            img = job.get("container")
            img = img.get("image") if isinstance(img, dict) else img
            eq(img, "debian:12", "%s: job %s runs in debian:12" % (p, j))
        rid = str(self.wf_env.get("E2E_RUN_ID", ""))
        check("github.run_id" in rid and "github.run_attempt" in rid,
              "%s: E2E_RUN_ID at workflow level from github.run_id and "
              "github.run_attempt (got %r)" % (p, rid))
        for j, job in jobs.items():
            envs = [job.get("env") or {}] + [s.get("env") or {} for s in job.get("steps") or []]
            check(not any("E2E_RUN_ID" in e for e in envs),
                  "%s: job %s does not redefine E2E_RUN_ID in an env:" % (p, j))
        for where, e in self.env_blocks():
            for k, v in e.items():
                if k in CREDS:
                    check(SECRET_REF.match(str(v)),
                          "%s: %s %s comes from ${{ secrets.* }} (got %r)" % (p, where, k, v))
        if not check(self.shard_job, "%s: a job with strategy.matrix.shard" % p):
            return
        sj = jobs[self.shard_job]
        n = len(self.shards)
        eq(self.shards, list(range(1, n + 1)), "%s: matrix.shard is 1..N" % p)
        check(n >= 2, "%s: %d shards" % (p, n))
        eq(sj["strategy"].get("fail-fast"), False, "%s: fail-fast: false" % p)
        m = re.findall(r"--shard\s+\$\{\{\s*matrix\.shard\s*\}\}/(\d+)", "\n".join(
            self.runs[self.shard_job]))
        eq(m, [str(n)], "%s: the run uses --shard ${{ matrix.shard }}/N, N = matrix size" % p)
        self.check_uploads(self.shard_job, "the shards' reports")
        for role, ids in (("janitor (cleanup)", self.janitors), ("report (merge)", self.reports)):
            if not check(ids, "%s: a %s job" % (p, role)):
                continue
            for j in ids:
                check("always()" in str(jobs[j].get("if", "")),
                      "%s: job %s has if: always()" % (p, j))
                needs = jobs[j].get("needs") or []
                needs = [needs] if isinstance(needs, str) else needs
                check(self.shard_job in needs, "%s: job %s needs %s" % (p, j, self.shard_job))
        for j in self.reports:
            self.check_uploads(j, "the merged reports")
            dl = [s.get("with") or {} for s in jobs[j].get("steps") or []
                  if str(s.get("uses", "")).startswith("actions/download-artifact")
                  and (s.get("with") or {}).get("pattern")]
            check(any(w.get("merge-multiple") is True for w in dl),
                  "%s: job %s downloads the shards' artifacts by pattern, "
                  "merge-multiple: true" % (p, j))

    def env_blocks(self):
        yield "workflow env", self.wf_env
        for j, job in self.jobs.items():
            yield "job %s env" % j, job.get("env") or {}
            for s in job.get("steps") or []:
                yield "job %s step env" % j, s.get("env") or {}

    def check_uploads(self, j, what):
        up = [s for s in self.jobs[j].get("steps") or []
              if str(s.get("uses", "")).startswith("actions/upload-artifact")]
        check(up and all("always()" in str(s.get("if", "")) for s in up),
              "%s: job %s uploads %s with if: always()" % (self.path, j, what))

    def _env(self, job, step, ctx):
        env = {}
        for layer in (self.wf_env, job.get("env") or {}, step.get("env") or {}):
            for k, v in layer.items():
                c = dict(ctx, **{"env." + x: y for x, y in env.items()})
                env[k] = cm.gha_eval(v, c)
        return env

    def run_job(self, j, work, base_env, shard=None, secrets=None):
        ctx = dict(self.ctx0)
        ctx.update({"secrets." + s: (secrets or {}).get(s, "") for s in self.secrets})
        if shard is not None:
            ctx.update({"matrix.shard": shard, "strategy.job-total": len(self.shards)})
        out = []
        for step in self.jobs[j].get("steps") or []:
            body = step.get("run")
            if body and cm.invocations(body, 1):
                env = dict(base_env, **self._env(self.jobs[j], step, ctx))
                out.append(bash(cm.gha_eval(body, ctx), work, env))
        return out

    def runtime_jobs(self):
        """{job: packages it installs} of the jobs that run abx-e2e but do
        not build it."""
        out = {}
        for j, job in self.jobs.items():
            texts = self.runs[j]
            if not self.subs[j] or any("make build" in t for t in texts):
                continue
            env = self._env(job, {}, self.ctx0)
            out[j] = apt_packages(texts, lambda v: str(env.get(v, "")))
        return out


class GitLab:
    name = "GitLab"

    def __init__(self, path, text, data):
        self.path, self.text, self.d = path, text, data
        self.vars = {k: (v.get("value") if isinstance(v, dict) else v)
                     for k, v in (data.get("variables") or {}).items()}
        self.jobs = {k: v for k, v in data.items() if isinstance(v, dict) and "script" in v
                     and not k.startswith(".")}
        self.subs = {j: subs_of(cm.flatten(job.get("script"))) for j, job in self.jobs.items()}
        self.scripts = {j: [s for k in ("before_script", "script", "after_script")
                            for s in cm.flatten(job.get(k))] for j, job in self.jobs.items()}
        self.shard_job = next((j for j, job in self.jobs.items() if "parallel" in job), None)
        par = self.jobs[self.shard_job]["parallel"] if self.shard_job else 0
        self.shards = list(range(1, par + 1)) if isinstance(par, int) else []
        self.janitors = [j for j, s in self.subs.items() if "cleanup" in s]
        self.reports = [j for j, s in self.subs.items() if "merge" in s]

    def pipeline_run_id(self):
        return re.sub(r"\$\{?CI_PIPELINE_ID\}?", SAMPLE_RUN, str(self.vars.get("E2E_RUN_ID", "")))

    def structure(self):
        p, d, jobs = self.path, self.d, self.jobs
        default_img = (d.get("default") or {}).get("image")
        for j, job in jobs.items():
            eq(job.get("image", default_img), "debian:12", "%s: job %s runs in debian:12" % (p, j))
        check("CI_PIPELINE_ID" in str(self.vars.get("E2E_RUN_ID", "")),
              "%s: global variable E2E_RUN_ID from CI_PIPELINE_ID" % p)
        for j, job in jobs.items():
            check("E2E_RUN_ID" not in (job.get("variables") or {}),
                  "%s: job %s does not redefine E2E_RUN_ID in variables:" % (p, j))
        for where, v in [("global", self.vars)] + [(j, job.get("variables") or {})
                                                   for j, job in jobs.items()]:
            bad = sorted(set(v) & set(CREDS))
            check(not bad, "%s: %s variables define no credential (masked CI/CD "
                  "variables do): %s" % (p, where, bad or "none"))
        if not check(self.shard_job and self.shards,
                     "%s: a job with parallel: N (an integer)" % p):
            return
        sj = jobs[self.shard_job]
        script = "\n".join(cm.flatten(sj.get("script")))
        check(re.search(r"--shard\s+\"?\$\{?CI_NODE_INDEX\}?/\$\{?CI_NODE_TOTAL\}?", script),
              "%s: the run uses --shard ${CI_NODE_INDEX}/${CI_NODE_TOTAL}" % p)
        art = sj.get("artifacts") or {}
        eq(art.get("when"), "always", "%s: the shards' artifacts when: always" % p)
        check((art.get("reports") or {}).get("junit"), "%s: the shards' reports: junit:" % p)
        stages = d.get("stages") or []
        for role, ids in (("janitor (cleanup)", self.janitors), ("report (merge)", self.reports)):
            if not check(ids, "%s: a %s job" % (p, role)):
                continue
            for j in ids:
                job = jobs[j]
                eq(job.get("when"), "always", "%s: job %s when: always" % (p, j))
                st = [job.get("stage", "test"), sj.get("stage", "test")]
                check(all(s in stages for s in st) and stages.index(st[0]) > stages.index(st[1]),
                      "%s: job %s's stage %s comes after %s" % (p, j, st[0], st[1]))
                deps = [n.get("job") if isinstance(n, dict) else n
                        for n in (job.get("needs") or []) + (job.get("dependencies") or [])]
                check(self.shard_job in deps, "%s: job %s needs %s" % (p, j, self.shard_job))

    def run_job(self, j, work, base_env, shard=None, secrets=None):
        job = self.jobs[j]
        pre = dict(base_env, CI_PIPELINE_ID=SAMPLE_RUN, **(secrets or {}))
        pre["CI_NODE_INDEX"] = str(shard or 1)
        pre["CI_NODE_TOTAL"] = str(len(self.shards) if shard else 1)
        # GitLab expands $VAR in variables; bash does the same here.
        exports = "".join('export %s="%s"\n' % (k, re.sub(r'(["\\`])', r"\\\1", str(v)))
                          for k, v in list(self.vars.items()) +
                          list((job.get("variables") or {}).items()))
        return [bash(exports + "\n".join(cm.flatten(job.get("script"))), work, pre)]

    def runtime_jobs(self):
        out = {}
        for j, job in self.jobs.items():
            texts = cm.flatten(job.get("before_script")) + cm.flatten(job.get("script"))
            if not self.subs[j] or any("make build" in t for t in texts):
                continue
            out[j] = apt_packages(texts, lambda v: str(self.vars.get(v, "")))
        return out
