#!/usr/bin/env python3
"""The fast suite on abx-local at several --vary seeds (docs/profiles.md
"Varied details"): a green run at every seed says the suite asserts the
contract, not what one implementation happens to answer. Each run is
suite_local.py's whole check (no failure, 0 sandboxes left, exactly the
profile's expected skips) in OUT/<profile>-vary-<seed>/.

usage: vary_seeds.py --bin PATH/abx-e2e --out DIR [--seeds 1,2,3 | --random N]
                     [--profiles fc,e2b]
Runs from the source tree (the expected skips: docs/capabilities.md).
Seeds are printed first, and each failing one with the command that
replays it. Profiles are used in turn (seed i on profiles[i % len]).
Standard library only."""

import argparse
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seeds", help="comma-separated seeds")
    ap.add_argument("--random", type=int, metavar="N", help="N random seeds")
    ap.add_argument("--profiles", default="fc,e2b")
    a = ap.parse_args()
    if a.seeds:
        seeds = [int(x) for x in a.seeds.split(",") if x.strip()]
    else:
        rng = random.SystemRandom()
        seeds = [rng.randint(1, 1000000) for _ in range(a.random or 3)]
    profiles = [p for p in a.profiles.split(",") if p]
    plan = [(s, profiles[i % len(profiles)]) for i, s in enumerate(seeds)]
    print("vary_seeds: seeds %s" % ", ".join("%d (%s)" % sp for sp in plan), flush=True)
    failed = []
    for seed, prof in plan:
        out = os.path.join(os.path.abspath(a.out), "%s-vary-%d" % (prof, seed))
        cmd = [sys.executable, os.path.join(HERE, "suite_local.py"), "--bin", a.bin, "--out", out,
               "--profile", prof, "--vary", str(seed),
               "--expect-skips", "docs/capabilities.md#" + prof,
               "--", "-m", "not e2e_slow"]
        t0 = time.time()
        rc = subprocess.call(cmd)
        print("vary_seeds: seed %d on %s: %s in %.0f s" % (
            seed, prof, "green" if rc == 0 else "RED", time.time() - t0), flush=True)
        if rc != 0:
            failed.append((seed, prof))
    for seed, prof in failed:
        print("vary_seeds: replay: make e2e-local PROFILE=%s VARY=%d" % (prof, seed))
    print("%d passed, %d failed" % (len(plan) - len(failed), len(failed)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
