#!/usr/bin/env python3
"""Which sanitizer rows of tests/runner.py run engine lines that no other
sanitizer row runs: the evidence for giving a suite a sanitizer twin or
taking it away (docs/testing.md, Coverage).

Runs each row named (default: every row the table runs under ASan + UBSan,
plus --also rows) alone against the gcov build (tests/coverage.sh's
build-coverage, built first), keeps gcovr's JSON tracefile of engine/ per
row in DIR, then prints per row the engine lines it covers and how many of
them no other row covers. With --drop, it removes rows one at a time, the
most expensive first (CPU of its run here), as long as every line of the
removed row is still covered by the rows kept, and prints what stays.

  python3 tests/coverage_rows.py --dir build-coverage/rows [--reuse] [--drop]
                                 [--also integration] [ROW ...]

--reuse reads tracefiles already in DIR instead of running the rows again.
"""

import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import runner  # noqa: E402


def lines_of(tracefile):
    """{(file, line)} with a non-zero count in a gcovr JSON tracefile."""
    with open(tracefile) as f:
        doc = json.load(f)
    return {(f["file"], ln["line_number"]) for f in doc["files"] for ln in f["lines"]
            if ln["count"] > 0}


def run_row(row, build, out, env):
    for g in glob.glob(os.path.join(ROOT, build, "**", "*.gcda"), recursive=True):
        os.unlink(g)
    text, etext, rc, secs, cpu = runner.run_one(row, os.path.join(ROOT, build, "gpuledger"),
                                                build, env)
    failed = [ln for ln in text.splitlines() if ln.startswith("not ok")]
    subprocess.run(["gcovr", "-r", ROOT, "--filter", "engine/", "--json", out, build],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    with open(out + ".meta", "w") as f:
        json.dump({"cpu": round(cpu, 1), "secs": round(secs, 1), "rc": rc,
                   "failed": failed}, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows", nargs="*", help="row names (default: the sanitizer rows)")
    ap.add_argument("--dir", required=True, help="folder of the per-row tracefiles")
    ap.add_argument("--build", default="build-coverage")
    ap.add_argument("--also", nargs="*", default=[], help="rows to add to the default set")
    ap.add_argument("--reuse", action="store_true", help="read the tracefiles in --dir")
    ap.add_argument("--drop", action="store_true",
                    help="remove the rows whose lines the others cover, most expensive first")
    a = ap.parse_args()
    table = {r["name"]: r for r in runner.suite_rows()}
    names = a.rows or [n for n, r in table.items() if r["asan"]] + a.also
    unknown = [n for n in names if n not in table]
    if unknown:
        sys.exit("unknown row: %s" % ", ".join(unknown))
    os.makedirs(a.dir, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("GL_TEST_CACHE", os.path.join(ROOT, "build", "test-cache"))
    if not a.reuse:
        subprocess.run(["ninja", "-C", a.build], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    cov, meta = {}, {}
    for n in names:
        out = os.path.join(a.dir, n + ".json")
        if not a.reuse:
            run_row(table[n], a.build, out, env)
        cov[n] = lines_of(out)
        with open(out + ".meta") as f:
            meta[n] = json.load(f)
    bad = [n for n in names if meta[n]["rc"] != 0 or meta[n]["failed"]]
    for n in bad:
        print("# %s did not pass (exit %s): its lines are a lower bound" % (n, meta[n]["rc"]))
    union = set().union(*cov.values())
    print("# %d rows, %d engine lines covered in all" % (len(names), len(union)))
    for n in sorted(names, key=lambda n: -meta[n]["cpu"]):
        others = set().union(*(cov[m] for m in names if m != n))
        print("%-16s CPU %6.1fs  lines %6d  only its own %5d" % (
            n, meta[n]["cpu"], len(cov[n]), len(cov[n] - others)))
    if a.drop:
        kept = list(names)
        for n in sorted(names, key=lambda n: -meta[n]["cpu"]):
            rest = set().union(*(cov[m] for m in kept if m != n))
            if cov[n] <= rest:
                kept.remove(n)
                print("drop %-16s (CPU %.1fs): all %d lines covered by the rows kept"
                      % (n, meta[n]["cpu"], len(cov[n])))
        after = set().union(*(cov[m] for m in kept))
        print("# kept %d rows: %d lines (before: %d)" % (len(kept), len(after), len(union)))
        print("# kept: " + " ".join(kept))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
