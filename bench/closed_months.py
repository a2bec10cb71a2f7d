#!/usr/bin/env python3
"""closed_months.py - the hourly `run` against the number of closed months.

Usage:
  python3 bench/closed_months.py --bin build/gpuledger [--base-bin OLD]
      [--gpus 256] [--teams 32] [--closed 0,3,12] [--days 15] [--work DIR]
      [--reuse DIR] [--repeat K] [--callgrind]

A database a year old holds 11-12 closed months; the hourly CronJob's `run`
must not cost more with every month closed ("flat across the month", and
across the year). Per N of --closed, a database holds the N
months 2027-01 - N .. 2026-12, every one closed, and the open month 2027-01
up to day --days, all written straight with SQLite into the engine's own
schema (the engine creates it; the usage triggers of schema 004 keep the
aggregates): per GPU and hour one pod's memory_used row, the device rows
capacity / reserved / idle (reconciling) and the team's busy rows, --teams
teams, 8 GPUs per node (as bench/agg_bench.sh). The months are generated
once, newest first, and the databases for smaller N are copies taken on the
way, so every N has the same open month. The prices file has an entry
change in 2026-07 (two entries in the history).

Then, per N and per binary (--base-bin: a second build measured in the same
run, e.g. main built in /tmp), on a private copy of the database:
  run-first:  `run --now <open month, day --days, 23:30>` into a fresh output
              folder: nothing to collect (the watermark is at the end of the
              stored data), the open month's outputs are written;
  run-hourly: the open month's data version bumped by SQL (what every
              hourly run finds after collecting into the open month), the
              same `run`: the open month's outputs are written again;
  run-again:  the same `run` again: nothing changed, nothing written;
  invoice:    `invoice --period 2027-01` (the open month with corrections).
CPU (user+sys) and wall of each, from /usr/bin/time; the N = 0 row is the
same-run baseline. --repeat K: the hourly run K times (each after its own
bump), its least CPU and wall shown (the machine is shared). --callgrind: one
more hourly run under valgrind's callgrind, its instruction count (Ir:
deterministic, unlike the timings) in a column of its own. With --base-bin
the two binaries' output folders (invoices, FOCUS, reports with the team
pages' trends, summary) must be equal byte for byte, as their invoices. stdout: the table; progress on stderr. Exit 1 when a
command failed. Not part of tests/run.sh (a benchmark, not a test).
"""

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (measure)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
OPEN = (2027, 1)
MODEL = "NVIDIA A100-SXM4-80GB"


def log(msg):
    print("closed_months: " + msg, file=sys.stderr, flush=True)


def unix(y, m, d=1):
    return int(datetime(y, m, d, tzinfo=timezone.utc).timestamp())


def month_back(y, m, k):
    i = y * 12 + (m - 1) - k
    return i // 12, i % 12 + 1


def measure(cmd, stdout=subprocess.DEVNULL, stderr=None):
    """(rc, wall s, cpu s = user+sys) of one child: scale.py's measure (CPU from
    the kernel's rusage in microseconds)."""
    return scale.measure(cmd, stdout=stdout, stderr=stderr)[:3]


def add_month(db, start, hours, gpus, teams):
    """Usage rows of [start, start + hours h) for the fleet (triggers on)."""
    c = sqlite3.connect(db)
    try:
        c.execute("BEGIN")
        c.execute("""
WITH RECURSIVE h(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM h WHERE i < ?3 - 1),
     d(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM d WHERE j < ?2),
     x AS (SELECT ?1 + i * 3600 AS hr, j, (30000 + (i * 7 + j * 13) % 40000) * 3600 AS used
           FROM h, d)
INSERT INTO usage (hour, cluster, namespace, pod, device_id, team, kind, quantity, estimated,
                   first_seen, last_seen)
SELECT hr, 'east', 'ns-' || (j % ?4), 'pod-' || j || '-' || (hr / 86400), j,
       'team-' || (j % ?4), 'memory_used', used, 0, hr, hr + 3540 FROM x
UNION ALL SELECT hr, 'east', '', '', j, '', 'capacity', 81920 * 3600, 0, hr, hr + 3540 FROM x
UNION ALL SELECT hr, 'east', '', '', j, '', 'reserved', 615 * 3600, 0, hr, hr + 3540 FROM x
UNION ALL SELECT hr, 'east', '', '', j, '', 'idle', (81920 - 615) * 3600 - used, 0, hr,
          hr + 3540 FROM x
UNION ALL SELECT hr, 'east', '', '', j, 'team-' || (j % ?4), 'busy_ppm', 600000 * 60, 0, hr,
          hr + 3540 FROM x
UNION ALL SELECT hr, 'east', '', '', j, 'team-' || (j % ?4), 'busy_steps', 60, 0, hr,
          hr + 3540 FROM x""", (start, gpus, hours, teams))
        c.execute("""
WITH RECURSIVE h(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM h WHERE i < ?2 - 1)
INSERT INTO collected_hour SELECT 'east', ?1 + i * 3600, ?1, 0, 0 FROM h""", (start, hours))
        c.execute("UPDATE device SET first_seen = min(first_seen, ?)", (start,))
        c.execute("COMMIT")
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--base-bin")
    ap.add_argument("--gpus", type=int, default=256)
    ap.add_argument("--teams", type=int, default=32)
    ap.add_argument("--closed", default="0,3,12")
    ap.add_argument("--days", type=int, default=15)
    ap.add_argument("--work")
    ap.add_argument("--reuse", help="a kept --work of an earlier run: its closed-N.db "
                    "(generated and closed by the oldest binary) are used as they are")
    ap.add_argument("--repeat", type=int, default=1, help="hourly runs per binary and N "
                    "(the least CPU is shown)")
    ap.add_argument("--callgrind", action="store_true", help="one more hourly run under "
                    "callgrind: its instruction count")
    a = ap.parse_args()
    ns = sorted({int(x) for x in a.closed.split(",")})
    work = os.path.abspath(a.work or tempfile.mkdtemp(prefix="gpuledger-closed-"))
    os.makedirs(work, exist_ok=True)
    bins = [("new", os.path.abspath(a.bin))]
    if a.base_bin:
        bins.insert(0, ("base", os.path.abspath(a.base_bin)))
    for i, (name, b) in enumerate(bins):  # private copies: rebuilds elsewhere
        dst = os.path.join(work, "gpuledger-" + name)
        shutil.copy2(b, dst)
        bins[i] = (name, dst)

    prices = os.path.join(work, "prices.csv")
    with open(prices, "w") as f:
        f.write("model_pattern,unit,price,currency,valid_from,valid_to,capacity_gb\n"
                "^%s$,GB-Hours,0.0275,USD,2025-01-01T00:00:00Z,2026-07-01T00:00:00Z,\n"
                "^%s$,GB-Hours,0.0290,USD,2026-07-01T00:00:00Z,,\n" % (MODEL, MODEL))
    cfg = os.path.join(work, "c.json")
    with open(cfg, "w") as f:
        json.dump({"clusters": [{"name": "east", "prometheus": {"url": "http://127.0.0.1:9"}}],
                   "collection": {"queries_dir": os.path.join(REPO, "queries")},
                   "teams": {"rules": [{"pod_label": "team"}], "default": "unallocated"},
                   "idle_overhead": {"policy": "proportional", "platform_team": "platform"},
                   "run": {"delay_minutes": 10, "repull_hours": 0},
                   "prices": {"file": prices},
                   "billing": {"currency": "USD", "account_id": "a", "account_name": "b",
                               "provider": "c", "service_name": "d"}}, f, indent=1)
    gen = bins[0][1]  # the oldest schema: the other binary migrates its copy

    def engine(binary, db, *args, out=None):
        errf = os.path.join(work, "engine.log")
        with open(errf, "a") as e:
            e.write("\n== %s %s\n" % (os.path.basename(binary), " ".join(args)))
            e.flush()
            r = measure([binary, "--config", cfg, "--db", db] + list(args),
                        stdout=open(out, "w") if out else subprocess.DEVNULL, stderr=e)
        return r

    # ---- the databases: the open month, then closed months newest first
    open_start = unix(*OPEN)
    data_end = open_start + a.days * 86400
    now = time.strftime("%Y-%m-%dT23:30:00Z", time.gmtime(data_end - 86400))
    reuse = a.reuse and all(os.path.exists(os.path.join(a.reuse, "closed-%d.db" % k))
                            for k in ns)
    if reuse:
        dbs = {k: os.path.join(os.path.abspath(a.reuse), "closed-%d.db" % k) for k in ns}
        rows = sqlite3.connect(dbs[max(ns)]).execute("SELECT count(*) FROM usage").fetchone()[0]
        log("reusing the databases of %s" % a.reuse)
    else:
        db = os.path.join(work, "gen.db")
        for f in (db, db + "-wal", db + "-shm"):
            if os.path.exists(f):
                os.unlink(f)
        t0 = time.time()
        open(db, "w").close()  # an empty file is an empty SQLite database
        rc = engine(gen, db, "summary", "--period", "2099-01")[0]  # creates the schema
        if rc:
            sys.exit("creating the schema failed (exit %d), see %s/engine.log" % (rc, work))
        c = sqlite3.connect(db)
        c.execute("""
    WITH RECURSIVE d(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM d WHERE j < ?1)
    INSERT INTO device (id, cluster, uuid, gpu_i_id, gpu_i_profile, model, hostname,
                        max_capacity_mib, first_seen, last_seen)
    SELECT j, 'east', 'GPU-' || j, '', '', ?2, 'node-' || (j / 8), 81920, ?3, ?4 FROM d""",
                  (a.gpus, MODEL, open_start, data_end - 60))
        c.execute("INSERT INTO watermark VALUES ('east', ?, ?)", (data_end, data_end))
        c.commit()
        c.close()
        add_month(db, open_start, a.days * 24, a.gpus, a.teams)
        dbs = {}
        for k in range(0, max(ns) + 1):
            if k:
                y, m = month_back(*OPEN, k)
                ny, nm = month_back(*OPEN, k - 1)
                add_month(db, unix(y, m), (unix(ny, nm) - unix(y, m)) // 3600, a.gpus, a.teams)
            if k in ns:
                dst = os.path.join(work, "closed-%d.db" % k)
                shutil.copy2(db, dst)
                dbs[k] = dst
        rows = sqlite3.connect(db).execute("SELECT count(*) FROM usage").fetchone()[0]
        log("generated %d usage rows (%d closed months at most) in %.0f s" % (rows, max(ns),
                                                                          time.time() - t0))
        os.unlink(db)
        for k in ns:
            t0 = time.time()
            for i in range(k, 0, -1):
                y, m = month_back(*OPEN, i)
                r = engine(gen, dbs[k], "close", "--period", "%04d-%02d" % (y, m), "--now", now)
                if r[0]:
                    sys.exit("close failed (exit %d), see %s/engine.log" % (r[0], work))
            log("N=%d: closed %d months in %.0f s" % (k, k, time.time() - t0))

    # ---- the measurements
    failed = []
    res = {}
    for k in ns:
        for name, b in bins:
            d = os.path.join(work, "m-%d-%s.db" % (k, name))
            shutil.copy2(dbs[k], d)
            out = os.path.join(work, "out-%d-%s" % (k, name))
            shutil.rmtree(out, ignore_errors=True)
            r = {}
            log("N=%d %s: first run (writes the open month)" % (k, name))
            r["run-first"] = engine(b, d, "run", "--now", now, "--out", out)
            def bump():
                # what each hourly run finds after its collect: the open
                # month's data changed (its data version bumped, schema/003)
                c = sqlite3.connect(d)
                c.execute("UPDATE collected_hour SET collected_at = collected_at + 1 "
                          "WHERE hour = ?", (data_end - 3600,))
                c.commit()
                c.close()
            for i in range(max(1, a.repeat)):
                bump()
                log("N=%d %s: hourly run %d (the open month's data changed)" % (k, name, i + 1))
                v = engine(b, d, "run", "--now", now, "--out", out)
                old = r.get("run-hourly")
                r["run-hourly"] = v if not old or v[0] or (not old[0] and v[2] < old[2]) \
                    else old
            log("N=%d %s: run again (up to date)" % (k, name))
            r["run-again"] = engine(b, d, "run", "--now", now, "--out", out)
            log("N=%d %s: invoice of the open month" % (k, name))
            r["invoice"] = engine(b, d, "invoice", "--period", "%04d-%02d" % OPEN,
                                  "--format", "json",
                                  out=os.path.join(work, "inv-%d-%s.json" % (k, name)))
            if a.callgrind:
                bump()
                log("N=%d %s: hourly run under callgrind" % (k, name))
                cg = os.path.join(work, "callgrind-%d-%s.out" % (k, name))
                v = measure(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg, b,
                             "--config", cfg, "--db", d, "run", "--now", now, "--out", out],
                            stderr=subprocess.DEVNULL)
                ir = None
                if not v[0]:
                    with open(cg) as f:
                        for line in f:
                            if line.startswith(("summary:", "totals:")):
                                ir = int(line.split()[1])
                r["callgrind"] = (v[0],) + v[1:] + (ir,)
            for cmd, v in r.items():
                if v[0]:
                    failed.append("N=%d %s %s: exit %d" % (k, name, cmd, v[0]))
            res[(k, name)] = r
            os.unlink(d)
        if len(bins) == 2:
            a0, a1 = (open(os.path.join(work, "inv-%d-%s.json" % (k, n))).read()
                      for n, _ in bins)
            if a0 != a1:
                failed.append("N=%d: the two binaries' invoices of %04d-%02d differ"
                              % ((k,) + OPEN))
            outs = [os.path.join(work, "out-%d-%s" % (k, n)) for n, _ in bins]
            files = [sorted(os.path.relpath(os.path.join(dp, f), o) for dp, _, fs in os.walk(o)
                            for f in fs) for o in outs]
            if files[0] != files[1]:
                failed.append("N=%d: the two binaries wrote other files" % k)
            for f in files[0] if files[0] == files[1] else []:
                with open(os.path.join(outs[0], f), "rb") as x, \
                        open(os.path.join(outs[1], f), "rb") as y:
                    if x.read() != y.read():
                        failed.append("N=%d: the two binaries' %s differ" % (k, f))
            if files[0] == files[1]:
                log("N=%d: the two binaries' %d output files are equal" % (k, len(files[0])))

    print("fleet: %d GPUs, %d teams; open month %04d-%02d with %d days; run --now %s"
          % (a.gpus, a.teams, OPEN[0], OPEN[1], a.days, now))
    print("%d usage rows in the N = %d database" % (rows, max(ns)))
    print()
    print("| closed months | binary | command | CPU s (user+sys) | wall s | CPU vs N = 0 |")
    print("|---|---|---|---|---|---|")
    for name, _ in bins:
        for cmd in ("run-first", "run-hourly", "run-again", "invoice"):
            base = res[(ns[0], name)][cmd][2]
            for k in ns:
                rc, wall, cpu = res[(k, name)][cmd]
                print("| %d | %s | %s | %.2f | %.2f | %s |"
                      % (k, name, cmd, cpu, wall,
                         "%.2fx" % (cpu / base) if base > 0 else "-"))
    if a.callgrind:
        print()
        print("| closed months | binary | hourly run, instructions (callgrind Ir) | vs N = 0 |")
        print("|---|---|---|---|")
        for name, _ in bins:
            base = res[(ns[0], name)]["callgrind"][3]
            for k in ns:
                ir = res[(k, name)]["callgrind"][3]
                print("| %d | %s | %s | %s |" % (k, name, "{:,}".format(ir) if ir else "-",
                                                 "%.2fx" % (ir / base) if ir and base else "-"))
        if len(bins) == 2:
            for k in ns:
                i0, i1 = (res[(k, n)]["callgrind"][3] for n, _ in bins)
                if i0 and i1:
                    print("N=%d: %s / %s instructions = %.3f" % (k, bins[1][0], bins[0][0],
                                                                 i1 / i0))
    for f in failed:
        print("FAILED: " + f)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
