#!/usr/bin/env python3
"""Runs gpuledger's test suites, several at a time, and counts their checks.

The suite table below is the one list of suites: `./tests/run.sh` runs it
through this file, and tests/meson.build registers the same rows with
`meson test` (`--meson` prints them). Each suite prints TAP:

  ok - NAME                 a check that passed
  not ok - NAME: REASON     a check that failed
  ok - NAME # SKIP WHY      a check that could not run because an optional
                            tool is missing (counted as skipped; a failure
                            under CI=true, where every tool is installed)
  # ...                     a comment: set-up, generation, timings

A suite that exits non-zero without a failing line counts one failure. The
last line is "N passed, N failed, N skipped": the format CI reads.

usage: tests/runner.py [--list] [--only NAME|TAG ...] [-j N] [--asan|--no-asan]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, tags, command ({bin} = the engine, {build} = the build folder),
# asan: also run against the AddressSanitizer/UBSan build (the unit stages
# and the suites that feed the engine's readers bad or unusual input),
# cost: seconds measured with two suites at a time (twice that under ASan),
# to start the longest first so that a run ends with short suites.
def _it(name, driver, tags, asan=False, cost=5):
    return (name, ("integration",) + tags,
            ["python3", "tests/integration/" + driver, "--bin", "{bin}"], asan, cost)


SUITES = [
    # unit stages and the fuzz corpora's replay: one executable each
    *[("unit-" + t, ("unit",) + tags, ["{build}/tests/unit/test_" + t], True, cost)
      for t, tags, cost in (("money", ("money",), 1), ("time", (), 1), ("config", ("config",), 1),
                            ("prices", ("prices",), 1), ("integrate", ("attribution",), 1),
                            ("close", ("close",), 1), ("parse", ("parse",), 18),
                            ("store", ("ledger",), 1), ("statement", ("outputs",), 1),
                            ("metrics", ("metrics",), 1), ("cli", ("cli",), 1),
                            ("invoice", ("outputs", "prices"), 1), ("export", ("outputs", "focus"), 1),
                            ("query", ("ledger",), 1), ("reprice", ("prices", "close"), 1),
                            ("outstate", ("run",), 1), ("auth", ("auth",), 1),
                            ("fetch", ("wire",), 1), ("report", ("report",), 1),
                            ("server", ("server-mode",), 1))],
    # attribution rules as scripts (tests/attribution/*.test), in-process
    ("attribution", ("unit", "attribution"), ["{build}/tests/unit/test_scripts"], True, 1),
    *[("replay-" + t, ("unit", "fuzz"), ["{build}/tests/fuzz/replay_" + t], True, 1)
      for t in ("matrix", "config", "prices")],
    # real Prometheus, VictoriaMetrics, S3, Pushgateway, Chromium, Helm
    # Not under the sanitizers: every engine line this suite runs is run by
    # another sanitizer row too (tests/coverage.sh tracefiles: 0 of its
    # 6,925 lines), and its own value is the scenario figures, checked here.
    _it("integration", "run.py", ("attribution", "prometheus"), cost=23),
    _it("real-captures", "real_fixtures.py", ("attribution", "real"), True, 2),
    _it("collect", "collect_test.py", ("collect",), cost=2),
    _it("memory-bound", "memory_bound_test.py", ("memory",), cost=15),
    _it("plan", "plan_test.py", ("memory", "collect"), cost=9),
    _it("run-mode", "run_test.py", ("run",), cost=13),
    _it("outputs", "outputs_test.py", ("outputs", "focus", "run"), cost=40),
    _it("manifests", "manifests_test.py", ("deploy",), cost=12),
    _it("helm", "helm_test.py", ("deploy",), cost=50),
    _it("access", "access_test.py", ("auth", "tls"), True, 5),
    _it("backends", "backends_test.py", ("backends", "vm"), cost=4),
    _it("wire", "wire_test.py", ("wire", "parse"), True, 11),
    _it("vector", "vector_test.py", ("wire", "parse", "presets"), True, 6),
    _it("report", "report_test.py", ("report",), cost=30),
    _it("report-view", "report_view_test.py", ("report", "browser"), cost=15),
    _it("arith", "arith_test.py", ("attribution",), True, 2),
    _it("ledger", "ledger_test.py", ("ledger",), cost=5),
    _it("golden", "golden_test.py", ("outputs", "focus", "golden"), True, 2),
    _it("reprice", "reprice_test.py", ("prices", "close"), cost=2),
    _it("statement", "statement_test.py", ("outputs",), cost=4),
    _it("alloc-join", "alloc_join_test.py", ("attribution",), cost=6),
    _it("pending", "pending_test.py", ("prometheus", "outputs"), True, 3),
    _it("unitcost", "unitcost_test.py",
        ("prometheus", "outputs", "unit-cost", "focus", "report"), True, 3),
    _it("advise", "advise_test.py", ("prometheus", "advise", "report"), True, 3),
    _it("keep", "keep_test.py", ("prometheus", "outputs", "run"), True, 5),
    _it("agg", "agg_test.py", ("ledger",), cost=9),
    _it("focus", "focus_test.py", ("focus",), cost=6),
    _it("server-mode", "server_mode_test.py", ("server-mode", "vm"), cost=42),
    _it("auth", "auth_test.py", ("auth",), True, 32),
    _it("presets", "presets_test.py", ("presets",), cost=2),
    _it("metrics", "metrics_test.py", ("metrics",), cost=8),
    _it("s3", "s3_test.py", ("s3", "run"), cost=14),
    _it("maintain", "maintain_test.py", ("ledger", "close"), cost=8),
    _it("frozen", "frozen_test.py", ("close",), cost=15),  # builds a patched engine
    _it("closed-run", "closed_run_test.py", ("close", "run"), cost=7),
    _it("shrink", "shrink_test.py", ("collect", "ledger"), True, 5),
    _it("period", "period_test.py", ("close", "cli"), True, 12),
    _it("autoclose", "autoclose_test.py", ("close", "run"), cost=30),
    _it("release", "release_test.py", ("deploy", "release"), cost=2),
    # a fresh clone's run: 46 s (the image's packages downloaded into the
    # build tree's cache; the release binary is build-release's from run.sh)
    _it("image", "image_test.py", ("deploy", "image", "release"), cost=46),
    _it("model-change", "model_change_test.py", ("prometheus", "collect"), True, 3),
    ("demo", ("demo",), ["tests/demo_check.sh"], False, 12),
    ("standalone", ("repo",), ["python3", "tests/standalone_test.py"], False, 1),
    ("layers", ("repo",), ["python3", "tests/layers_test.py"], False, 1),
    ("docs", ("repo", "docs"), ["python3", "tests/docs_test.py", "--bin", "{bin}"], False, 1),
]


# The suites that build the release binary (the image's options): run.sh
# compiles it once, in build-release, when one of them is chosen, and the
# runner names that folder to them in GL_RELEASE_BUILD.
RELEASE_USERS = {"image", "manifests"}


def suite_rows():
    """The table with rows whose executable is absent from this checkout
    (a suite added later) kept: a missing file is a failure, not a skip."""
    return [dict(name=n, tags=t, cmd=c, asan=a, cost=w) for n, t, c, a, w in SUITES]


def select(rows, only):
    """Rows whose name or one of whose tags is in `only` (all when empty);
    an unknown word is an error."""
    if not only:
        return rows
    known = {r["name"] for r in rows} | {t for r in rows for t in r["tags"]}
    bad = [w for w in only if w not in known]
    if bad:
        sys.exit("unknown suite or tag: %s (see --list)" % ", ".join(bad))
    return [r for r in rows if r["name"] in only or set(r["tags"]) & set(only)]


class Tally:
    def __init__(self, ci):
        self.ci = ci
        self.passed = self.failed = self.skipped = 0
        self.cpu = 0.0
        self.skips = []
        self.lock = threading.Lock()

    def count(self, suite, text, rc, secs, cpu):
        """Counts one finished suite's TAP text; returns the lines to show."""
        p = f = s = 0
        shown = []
        for line in text.splitlines():
            if line.startswith("not ok"):
                f += 1
                shown.append("%s: %s" % (suite, line))
            elif line.startswith("ok") and "# SKIP" in line:
                if self.ci:
                    f += 1
                    shown.append("%s: not ok (a skip is a failure under CI=true): %s"
                                 % (suite, line))
                else:
                    s += 1
                    self.skips.append("%s: %s" % (suite, line))
                    shown.append("%s: %s" % (suite, line))
            elif line.startswith("ok"):
                p += 1
            elif line.startswith("#"):
                shown.append("%s: %s" % (suite, line))
        if rc != 0 and f == 0:
            f += 1
            shown.append("not ok - %s exited %s without a failing check" % (suite, rc))
        if p + f + s == 0:
            f += 1
            shown.append("not ok - %s ran no check" % suite)
        shown.append("# suite %s: %d passed, %d failed, %d skipped in %.1fs (CPU %.1fs)"
                      % (suite, p, f, s, secs, cpu))
        with self.lock:
            self.cpu += cpu
            self.passed += p
            self.failed += f
            self.skipped += s
        return shown


def run_one(row, binary, build, env):
    """(stdout, stderr, exit status, wall seconds, CPU seconds) of one suite;
    the CPU is the suite's and its waited-for children's (engines, servers):
    what the suite costs a busy machine, whatever else runs beside it."""
    cmd = [x.format(bin=binary, build=build) for x in row["cmd"]]
    limit = row.get("timeout", 900)
    t0 = time.time()
    cpu = 0.0
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=err, env=env, start_new_session=True)
            rc = None
            while rc is None:
                pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                if pid == p.pid:
                    rc = os.waitstatus_to_exitcode(status)
                    p.returncode = rc  # reaped here, not by Popen
                    cpu = ru.ru_utime + ru.ru_stime
                elif time.time() - t0 > limit:
                    os.killpg(p.pid, 9)
                    _, status, ru = os.wait4(p.pid, 0)
                    p.returncode = rc = -1
                    out.write(b"\nnot ok - %s did not finish within %ds\n"
                              % (row["name"].encode(), limit))
                else:
                    time.sleep(0.05)
        except OSError as e:
            rc = -1
            out.write(("\nnot ok - %s cannot start: %s\n" % (row["name"], e)).encode())
        out.seek(0)
        err.seek(0)
        text = out.read().decode("utf-8", "replace")
        etext = err.read().decode("utf-8", "replace")
    return text, etext, rc, time.time() - t0, cpu


def main():
    ap = argparse.ArgumentParser(description="gpuledger's test suites")
    ap.add_argument("--list", action="store_true", help="print the suites and their tags")
    ap.add_argument("--meson", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only", nargs="+", default=[], metavar="NAME|TAG",
                    help="run only these suites, or the suites with these tags")
    # One more lane than cores: several suites wait on sleeps (credential
    # lifetimes, retry delays, servers starting), which a third lane fills
    # on 2 cores; the suites' CPU is the floor either way.
    ap.add_argument("-j", type=int, default=int(os.environ.get("GL_TEST_JOBS", "0")) or
                    max(2, (os.cpu_count() or 2)) + 1,
                    help="suites run at a time (default: cores + 1)")
    ap.add_argument("--build", default="build", help="the build folder (default: build)")
    ap.add_argument("--asan-build", default="build-asan",
                    help="the AddressSanitizer/UBSan build folder (default: build-asan)")
    ap.add_argument("--no-asan", action="store_true",
                    help="skip the sanitizer pass (the asan rows)")
    ap.add_argument("--add", nargs=2, type=int, default=[0, 0], metavar=("PASSED", "FAILED"),
                    help=argparse.SUPPRESS)  # run.sh's build checks, in the one closing line
    ap.add_argument("--release-build", default="build-release",
                    help="the release build folder shared by the image and manifests suites "
                         "(default: build-release; used when it exists)")
    ap.add_argument("--wants-release", action="store_true",
                    help=argparse.SUPPRESS)  # run.sh: exit 0 when a chosen suite uses it
    ap.add_argument("--wants-asan", action="store_true",
                    help=argparse.SUPPRESS)  # run.sh: exit 0 when a chosen suite has a twin
    ap.add_argument("--times", help="append per-suite wall times as JSON lines to this file")
    a = ap.parse_args()
    rows = suite_rows()
    if a.wants_release:
        return 0 if any(r["name"] in RELEASE_USERS for r in select(rows, a.only)) else 1
    if a.wants_asan:
        return 0 if not a.no_asan and any(r["asan"] for r in select(rows, a.only)) else 1

    if a.meson:
        # name|tags|is-asan|timeout|argv... one per line, for tests/meson.build
        for r in rows:
            print("|".join([r["name"], ",".join(r["tags"]), "1" if r["asan"] else "0",
                            str(max(120, r["cost"] * 10))] + r["cmd"]))
        return 0
    if a.list:
        for r in rows:
            print("%-16s %s%s" % (r["name"], " ".join(r["tags"]),
                                  "  (also under ASan/UBSan)" if r["asan"] else ""))
        return 0

    chosen = select(rows, a.only)
    jobs = []
    for r in chosen:
        jobs.append((r, os.path.join(ROOT, a.build, "gpuledger"), a.build, r["name"]))
    if not a.no_asan:
        for r in chosen:
            if r["asan"]:
                jobs.append((dict(r, cost=r["cost"] * 2), os.path.join(ROOT, a.asan_build,
                                                                      "gpuledger"),
                             a.asan_build, r["name"] + "-asan"))
    jobs.sort(key=lambda j: -j[0]["cost"])

    env = dict(os.environ)
    env.setdefault("GL_TEST_CACHE", os.path.join(ROOT, a.build, "test-cache"))
    release = os.path.join(ROOT, a.release_build)
    if os.path.isfile(os.path.join(release, "build.ninja")):
        env.setdefault("GL_RELEASE_BUILD", release)
    asan_env = dict(env, ASAN_OPTIONS="detect_leaks=1",
                    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    tally = Tally(os.environ.get("CI", "") == "true")
    tally.passed, tally.failed = a.add
    out_lock = threading.Lock()
    pending = list(jobs)
    t_start = time.time()

    def worker():
        while True:
            with out_lock:
                if not pending:
                    return
                row, binary, build, name = pending.pop(0)
            text, etext, rc, secs, cpu = run_one(row, binary, build,
                                                 asan_env if name.endswith("-asan") else env)
            shown = tally.count(name, text, rc, secs, cpu)
            with out_lock:
                for line in shown:
                    print(line)
                if rc != 0 and etext.strip():
                    for line in etext.strip().splitlines()[-20:]:
                        print("# %s stderr: %s" % (name, line))
                sys.stdout.flush()
                if a.times:
                    with open(a.times, "a") as f:
                        f.write(json.dumps({"suite": name, "secs": round(secs, 1),
                                            "cpu": round(cpu, 1), "rc": rc}) + "\n")

    threads = [threading.Thread(target=worker) for _ in range(max(1, a.j))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if tally.skips:
        print("# skipped (an optional tool is missing):")
        for s in tally.skips:
            print("#   " + s)
    print("# %d suites in %.0fs with %d at a time, %.0fs of CPU (load average %s)"
          % (len(jobs), time.time() - t_start, a.j, tally.cpu,
             " ".join("%.2f" % x for x in os.getloadavg())))
    print("%d passed, %d failed, %d skipped" % (tally.passed, tally.failed, tally.skipped))
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
