#!/usr/bin/env python3
"""steady.py - the hourly CronJob as it runs: `run` on a database that the
previous hourly run left (its watermark, its outputs), against a real
Prometheus, fresh process each time.

Usage:
  python3 bench/steady.py --bin build/gpuledger [--base-bin OTHER] [--gpus 1024]
      [--runs 5] [--max-samples-in-memory N] [--base-max-samples-in-memory N]
      [--stream] [--work DIR] [--keep]

The fleet is bench/scale.py's (bench/make_scenario.py --replicate GPUs/64,
26 h from 2026-11-29, tests/gen/gencluster.py, promtool backfill; cached in
the work directory; --stream: through bench/fleet_stream.py, a few hours at
a time, which ~10,000 GPUs need). --base-bin may be the same binary with
--base-max-samples-in-memory 68719476736: the collect unbounded. Per binary:
  1. the previous run: `run --now 2026-11-30T00:10Z` on an empty database
     with run.start at day 29 (it collects day 29 and writes every output;
     not measured): the database now holds the watermark 2026-11-30T00:00Z;
  2. the measured run, --runs times, each on a fresh copy of that database
     and of its output folder: `run --now 2026-11-30T01:10Z` with the
     configured run.repull_hours (default 2), so it collects the new hour
     plus the re-pulled two, and writes the full output stage.
Printed per binary: min / median / max of CPU (user+sys), wall and peak RSS
of the engine, Prometheus's CPU over the same run (from /proc), the run's
logged window and its samples= (every query's samples of the stored hours),
and the machine's load average before the runs.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scale  # noqa: E402

PREV_NOW = "2026-11-30T00:10:00Z"
NOW = "2026-11-30T01:10:00Z"


def proc_cpu(pid):
    """User+sys CPU seconds of a live process (its /proc stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spread(xs):
    return "%.2f / %.2f / %.2f" % (min(xs), statistics.median(xs), max(xs))


def bench(binary, label, fleet, prom, work, args):
    d = os.path.join(work, label)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    extra = {}
    cfg = scale.with_budget(fleet.config(os.path.join(d, "config.json"), prom.url,
                                         start=scale.DAY29),
                            args.base_budget if label == "base" and args.base_budget
                            else args.max_samples_in_memory)
    prev_db, prev_out = os.path.join(d, "prev.db"), os.path.join(d, "prev-out")
    scale.log("%s: the previous hourly run (%s)" % (binary, PREV_NOW))
    r = scale.measure([binary, "--config", cfg, "--db", prev_db, "run", "--out", prev_out,
                       "--now", PREV_NOW], stderr=open(os.path.join(d, "prev.log"), "w"))
    if r[0]:
        raise RuntimeError("%s: the previous run exited %d (%s/prev.log)" % (binary, r[0], d))
    load = os.getloadavg()
    rows = []
    for k in range(args.runs):
        db, out = os.path.join(d, "run.db"), os.path.join(d, "run-out")
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(prev_out, out)
        shutil.copy2(prev_db, db)
        logf = os.path.join(d, "run-%d.log" % k)
        p0 = proc_cpu(prom.p.pid)
        rc, wall, cpu, rss = scale.measure([binary, "--config", cfg, "--db", db, "run",
                                            "--out", out, "--now", NOW],
                                           stderr=open(logf, "w"))
        pcpu = proc_cpu(prom.p.pid) - p0
        if rc:
            raise RuntimeError("%s: run %d exited %d (%s)" % (binary, k, rc, logf))
        text = open(logf, errors="replace").read()
        m = re.search(r"collected cluster=\S+ from=(\S+) to=(\S+) hours=(\d+) samples=(\d+)",
                      text)
        rows.append({"wall": wall, "cpu": cpu, "rss": rss, "prom": pcpu,
                     "window": "%s..%s (%s h)" % m.group(1, 2, 3) if m else "?",
                     "samples": m.group(4) if m else "?"})
        scale.log("%s: run %d: %.2f s CPU, %.2f s wall, %.1f MiB, Prometheus %.2f s CPU"
                  % (binary, k, cpu, wall, rss, pcpu))
    extra.update(load=load, rows=rows)
    return extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--base-bin")
    ap.add_argument("--gpus", type=int, default=1024, help="a multiple of 64")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--max-samples-in-memory", type=int, default=0)
    ap.add_argument("--base-max-samples-in-memory", dest="base_budget", type=int, default=0,
                    help="the base binary's budget instead (the same binary unbounded: "
                         "--base-bin BIN --base-max-samples-in-memory 68719476736)")
    ap.add_argument("--stream", action="store_true",
                    help="the fleet through bench/fleet_stream.py (for ~10,000 GPUs)")
    ap.add_argument("--work")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="gpuledger-steady-"))
    os.makedirs(work, exist_ok=True)
    fleet = scale.Fleet(os.path.join(work, "cache"), args.gpus, 26, stream=args.stream)
    prom = scale.Prometheus(fleet.tsdb, os.path.join(work, "prometheus.log"))
    results = []
    try:
        for label, b in [("bin", args.bin)] + ([("base", args.base_bin)] if args.base_bin
                                                else []):
            results.append((b, bench(os.path.abspath(b), label, fleet, prom, work, args)))
    finally:
        prom.stop()
    print("steady-state hourly run, %d GPUs: run --now %s after a run at %s; %d runs, "
          "min / median / max" % (args.gpus, NOW, PREV_NOW, args.runs))
    for b, r in results:
        rows = r["rows"]
        print("%s (load average before: %s)" % (b, " ".join("%.2f" % x for x in r["load"])))
        print("  window %s, samples=%s" % (rows[0]["window"], rows[0]["samples"]))
        print("  engine CPU s     %s" % spread([x["cpu"] for x in rows]))
        print("  engine wall s    %s" % spread([x["wall"] for x in rows]))
        print("  engine RSS MiB   %s" % spread([x["rss"] for x in rows]))
        print("  Prometheus CPU s %s" % spread([x["prom"] for x in rows]))
    if not args.keep and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
