#!/usr/bin/env python3
"""scale.py - the scale benchmark: collect and the outputs
from 64 to 4,096 GPUs against a real Prometheus, next to same-run baselines.

Usage:
  python3 bench/scale.py --bin build/gpuledger [--base-bin /tmp/main/gpuledger]
      [--quick | --sizes 64,256,1024,4096] [--hours 6] [--month-sizes 64]
      [--validate] [--work DIR] [--keep] [--repeat N]

  --quick          sizes 64,256, month at 64 GPUs (about 2-3 minutes)
  default (full)   sizes 64,256,1024,4096, month at 64 and 1,024 GPUs
  --sizes LIST     GPUs per fleet, multiples of 64 (bench/make_scenario.py
                   --replicate N/64: copies of its 8-node cluster)
  --hours H        collected window per fleet (default 6 = one chunk)
  --month-sizes L  fleets whose month is built and measured ('' for none)
  --base-bin B     a second binary measured in the same run (e.g. a build of
                   main): every engine figure is printed for both
  --base-max-samples-in-memory N  the base binary's budget (the same binary
                   with 68719476736: the collect unbounded)
  --stream         fleets through bench/fleet_stream.py (a few hours at a
                   time, 2 h blocks; the same samples); for ~10,000 GPUs
  --fleet-hours H  fleets of H hours (26 = bench/steady.py's, shared through
                   --cache), of which --hours are collected
  --validate       also checks the replicated month against a real 3-day
                   collect at 64 GPUs (row counts, bytes, output times)
  --keep / --work  keep the work directory (caches: data and TSDB per fleet)
  --repeat N       N fresh collects per binary and fleet, the least CPU and
                   wall shown (a shared machine's noise is one-sided)

Collect rows also show the fixed cost: the CPU of a collect of an hour with
no data into a new database (process start, config, schema, the requests),
and the marginal CPU per sample, (CPU - fixed) / samples.

Per fleet: bench/make_scenario.py --replicate --hours writes the scenario,
tests/gen/gencluster.py its OpenMetrics (no expected figures: too slow at
this size), promtool backfills it, and a real Prometheus 2.42 serves it.
Then, all in the same run:
  1. discovery: one unmeasured `collect` through a recording proxy gives the
     engine's exact request list and how many it had in flight (K);
  2. `collect --from --to` of the window into a fresh database, per binary:
     CPU (user+sys of the child, os.wait4), wall, peak RSS (ru_maxrss);
     samples = sum of collected_query.samples of the database;
  3. baseline: curl --parallel --parallel-max K fetching the very same
     requests to /dev/null (CPU, wall, RSS of curl), once compressed (curl
     --compressed: Prometheus deflates) and once asking identity; each
     binary's wall / curl is against the curl that asks what it asks (its
     Accept-Encoding, recorded through a proxy: prometheus.compression);
  4. Prometheus's own time: the same requests again with stats=all, the sum
     of data.stats.timings.execTotalTime (server-side evaluation, no transfer).

The month (fleets of --month-sizes): Prometheus holds 26 h from day 29 of a
30-day month (2026-11-29). One day [day 29, day 30) is collected; then
  - "run, 1 day stored": `run --now` day 30 01:10 on that database (it
    collects day 30's first hour with the default 2 h re-pull and writes every
    output of November);
  - "run, 29 days stored": the same `run` on a copy where day 29 was
    replicated to days 1..28 by SQL (every row of every table with an `hour`
    column copied with hour - k x 86400, first_seen/last_seen shifted alike;
    rows of tables with a `day` column likewise), i.e. the hourly run on day
    30 of a month;
  - then invoice / export / summary / report --period 2026-11 on the month.
  The replication is checked exactly: invoice MiB.s per team of the
  replicated 29 days = 29 x the one day's (independent of the engine: both
  from its own invoice of day 29 alone, multiplied here). --validate compares
  it with a real 3-day collect (rows, bytes and output CPU of 3 replicated
  days vs 3 collected days: the data differ per day, the volume does not).

Projection to 10,000 GPUs x 30 days (printed; the model): collect CPU per
sample is fitted as a + b x log2(GPUs) over the measured fleets (constant
if the engine scales linearly; b > 0 shows superlinear growth) and
multiplied by 10,000/N samples of a fleet-hour x 720 hours; output commands
cost c x (usage rows) (per-row cost of the largest measured month, rows
proportional to GPUs x hours); database bytes per GPU-month x 10,000.

stdout: the tables; progress on stderr. Exit 1 when a command failed or a
check did not hold. Not part of tests/run.sh (a benchmark, not a test).
"""

import argparse
import hashlib
import json
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gen"))
import collect_bench  # noqa: E402  (RecordingProxy)
import fleet_stream  # noqa: E402
import gencluster  # noqa: E402

DAY29 = "2026-11-29T00:00:00Z"
PERIOD = "2026-11"
MONTH_DAYS = 30


log = collect_bench.log
ts = collect_bench.parse_time


def rfc(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def measure(cmd, stdout=subprocess.DEVNULL, stderr=None, timeout=7200):
    """(rc, wall s, cpu s = user+sys, peak RSS MiB) of one child, from GNU
    time's wait4 (a child forked from this Python would start its ru_maxrss
    at this process's size: the mm high-water mark survives exec)."""
    fd, tf = tempfile.mkstemp(prefix="gpuledger-time-")
    os.close(fd)
    t0 = time.perf_counter()
    try:
        p = subprocess.Popen(["/usr/bin/time", "-q", "-f", "%x %U %S %M", "-o", tf] + cmd,
                             stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            # CPU from the kernel in microseconds (GNU time prints 10 ms
            # steps): time's rusage holds its reaped child's (time: ~1 ms)
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        f = open(tf).read().split()
    finally:
        os.unlink(tf)
    rc = int(f[-4]) if len(f) >= 4 else p.returncode
    cpu = ru.ru_utime + ru.ru_stime
    return rc, wall, cpu, int(f[-1]) / 1024.0


class Prometheus:
    def __init__(self, tsdb, logf):
        cfg = os.path.join(os.path.dirname(logf), "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global: {scrape_interval: 1h}\n")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.logf = open(logf, "a")
        self.p = subprocess.Popen(
            ["prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + tsdb,
             "--storage.tsdb.retention.time=100y", "--web.listen-address=127.0.0.1:%d" % self.port,
             "--query.lookback-delta=59s",
             # no compaction of the backfilled blocks while the bench measures
             # (fleet_stream.py writes 2 h blocks, as a live Prometheus holds)
             "--storage.tsdb.max-block-duration=2h"], stdin=subprocess.DEVNULL, stdout=self.logf,
            stderr=self.logf)
        for _ in range(600):
            if self.p.poll() is not None:
                break
            try:
                if urllib.request.urlopen(self.url + "/-/ready", timeout=2).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("prometheus did not become ready (log %s)" % logf)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.logf.close()


class Fleet:
    """Scenario, generated data and backfilled TSDB of one fleet (cached)."""

    def __init__(self, cache, gpus, hours, stream=False):
        self.gpus, self.hours = gpus, hours
        self.start = ts(DAY29)
        d = os.path.join(cache, "fleet-%d-%dh" % (gpus, hours))
        os.makedirs(d, exist_ok=True)
        self.scn = os.path.join(d, "scenario.json")
        subprocess.run([sys.executable, os.path.join(HERE, "make_scenario.py"), self.scn,
                        "--start", DAY29, "--hours", str(hours), "--replicate", str(gpus // 64)],
                       check=True)
        h = hashlib.sha256()
        for p in (self.scn, os.path.join(REPO, "tests", "gen", "gencluster.py")) + \
                ((os.path.join(HERE, "fleet_stream.py"),) if stream else ()):
            h.update(open(p, "rb").read())
        h.update(subprocess.run(["promtool", "--version"], capture_output=True).stdout[:80])
        key = h.hexdigest()[:16]
        self.dir = os.path.join(d, ("stream-" if stream else "") + key)
        self.tsdb = os.path.join(self.dir, "tsdb")
        if not os.path.exists(os.path.join(self.dir, ".complete")):
            shutil.rmtree(self.dir, ignore_errors=True)
            os.makedirs(self.dir)
            t0 = time.time()
            if stream:
                # the same lines, a few hours at a time (fleet_stream.py)
                n, gen_s, fill_s = fleet_stream.build(self.scn, self.dir, log=log)
                log("fleet %d GPUs x %d h: %d samples, generation %.0f s + backfill %.0f s "
                    "(summed over the slices), %.0f s wall" % (gpus, hours, n, gen_s, fill_s,
                                                                time.time() - t0))
                open(os.path.join(self.dir, ".complete"), "w").close()
            else:
                self._generate(gpus, hours, t0)
        with open(os.path.join(self.dir, "config.json")) as f:
            self.cfg = json.load(f)
        self.cfg["prices"]["file"] = os.path.join(self.dir, "prices.csv")

    def _generate(self, gpus, hours, t0):
        """gencluster's whole fleet in memory, one file, one backfill."""
        cl = gencluster.load_scenario(self.scn)
        om = os.path.join(self.dir, "data.om")
        with open(om, "w", encoding="utf-8", newline="\n") as f:
            n = cl.write_openmetrics(f)
        with open(os.path.join(self.dir, "prices.csv"), "w", newline="") as f:
            f.write(cl.prices_csv())
        with open(os.path.join(self.dir, "config.json"), "w") as f:
            json.dump(cl.run_config(), f, indent=1)
        log("fleet %d GPUs x %d h: %d OpenMetrics lines in %.0f s; backfilling"
            % (gpus, hours, n, time.time() - t0))
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q",
                        "--max-block-duration=24h", om, self.tsdb], check=True,
                       stdout=subprocess.DEVNULL)
        os.unlink(om)
        open(os.path.join(self.dir, ".complete"), "w").close()
        log("fleet %d GPUs: data ready after %.0f s" % (gpus, time.time() - t0))

    def config(self, path, url, **run):
        cfg = json.loads(json.dumps(self.cfg))
        cfg["prometheus"]["url"] = url
        cfg["prometheus"]["timeout_seconds"] = 600
        if run:
            cfg["run"] = run
        with open(path, "w") as f:
            json.dump(cfg, f, indent=1)
        return path


def with_budget(cfg, n):
    """A copy of config file cfg with collection.max_samples_in_memory = n
    (beside it, .budget-N.json); cfg itself when n is 0."""
    if not n:
        return cfg
    with open(cfg) as f:
        c = json.load(f)
    c.setdefault("collection", {})["max_samples_in_memory"] = n
    out = "%s.budget-%d.json" % (cfg[:-5] if cfg.endswith(".json") else cfg, n)
    with open(out, "w") as f:
        json.dump(c, f, indent=1)
    return out


def db_samples(db):
    c = sqlite3.connect(db)
    try:
        return c.execute("SELECT coalesce(sum(samples), 0) FROM collected_query").fetchone()[0]
    finally:
        c.close()


def db_rows(db):
    c = sqlite3.connect(db)
    try:
        return c.execute("SELECT count(*) FROM usage").fetchone()[0]
    finally:
        c.close()


def replicate(db, src_day, days_back):
    """Copies the rows of day src_day (unix s) to the days_back days before
    it, in every table with an `hour` (or `day`) column; returns the tables."""
    c = sqlite3.connect(db)
    done = []
    try:
        tables = [r[0] for r in c.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
        # triggers on usage (schema 004 on main) would add the copied rows
        # to the aggregates that are copied as well: off while copying
        trig = c.execute("SELECT name, sql FROM sqlite_master WHERE type='trigger' "
                         "AND tbl_name = 'usage'").fetchall()
        c.execute("BEGIN")
        for name, _ in trig:
            c.execute("DROP TRIGGER %s" % name)
        for t in tables:
            cols = [r[1] for r in c.execute("PRAGMA table_info(%s)" % t)]
            key = "hour" if "hour" in cols else "day" if "day" in cols else None
            if not key:
                continue
            lo, hi = c.execute("SELECT min(%s), max(%s) FROM %s" % (key, key, t)).fetchone()
            if lo is None:
                continue
            if lo < 10 ** 9:
                raise RuntimeError("table %s: column %s is not unix seconds (%s); the "
                                   "replication does not know it" % (t, key, lo))
            shifted = {key, "first_seen", "last_seen"} & set(cols)
            for k in range(1, days_back + 1):
                sel = ", ".join("%s - %d" % (col, k * 86400) if col in shifted else col
                                for col in cols)
                c.execute("INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s >= ? AND %s < ?"
                          % (t, ", ".join(cols), sel, t, key, key),
                          (src_day, src_day + 86400))
            done.append(t)
        c.execute("UPDATE device SET first_seen = first_seen - ?", (days_back * 86400,))
        for _, sql in trig:
            c.execute(sql)
        c.execute("COMMIT")
        c.execute("VACUUM")
    finally:
        c.close()
    return done


DUMP_TABLES = ("usage", "device", "usage_key_hour", "device_day", "pod_day", "anomaly_day",
               "collected_hour", "collected_query", "label_series")


def db_digest(db):
    """{table: sha256 of its rows in key order} of the tables a collect
    writes (collected_at, the wall clock of the write, left out), for the
    base-vs-new dump check: equal digests = identical figures."""
    c = sqlite3.connect(db)
    out = {}
    try:
        have = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for t in DUMP_TABLES:
            if t not in have:
                continue
            # devices by their identity, not their id: a split collect
            # numbers them in another order with the same figures
            cols = ["(SELECT uuid || '/' || gpu_i_id FROM device d WHERE d.id = %s.device_id)"
                    % t if r[1] == "device_id" else r[1]
                    for r in c.execute("PRAGMA table_info(%s)" % t)
                    if r[1] != "collected_at" and (t, r[1]) != ("device", "id")]
            h = hashlib.sha256()
            n = 0
            for row in c.execute("SELECT %s FROM %s ORDER BY %s" % (
                    ", ".join(cols), t, ", ".join(cols))):
                h.update(repr(row).encode())
                n += 1
            out[t] = "%d:%s" % (n, h.hexdigest()[:16])
    finally:
        c.close()
    return out


def team_mib(path):
    """{(team, kind): MiB.s} of the invoice lines in `invoice --format json`."""
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for inv in doc["invoices"]:
        for line in inv["lines"]:
            k = (inv["team"], line["kind"])
            out[k] = out.get(k, 0) + int(line["mib_seconds"])
    return out


class Bench:
    def __init__(self, a):
        self.a = a
        self.work = os.path.abspath(a.work or tempfile.mkdtemp(prefix="gpuledger-scale-"))
        os.makedirs(self.work, exist_ok=True)
        self.cache = os.path.abspath(a.cache or os.path.join(tempfile.gettempdir(),
                                                             "gpuledger-scale-cache"))
        self.bins = [("new", os.path.abspath(a.bin))]
        if a.base_bin:
            self.bins.insert(0, ("base", os.path.abspath(a.base_bin)))
        # private copies: other work may rebuild the binaries while we measure
        for i, (name, b) in enumerate(self.bins):
            dst = os.path.join(self.work, "gpuledger-" + name)
            shutil.copy2(b, dst)
            self.bins[i] = (name, dst)
        self.failed = []
        self.collect_rows = []
        self.month_rows = []

    def engine(self, binary, cfg, db, *args, out=None, timeout=7200):
        if self.a.base_budget and binary == self.bins[0][1] and self.a.base_bin:
            cfg = with_budget(cfg, self.a.base_budget)
        elif binary == self.bins[-1][1]:
            cfg = with_budget(cfg, self.a.budget)
        errf = os.path.join(self.work, "engine.log")
        with open(errf, "a") as e:
            e.write("\n== %s %s\n" % (os.path.basename(binary), " ".join(args)))
            e.flush()
            stdout = open(out, "w") if out else subprocess.DEVNULL
            try:
                r = measure([binary, "--config", cfg, "--db", db, "--quiet"] + list(args),
                            stdout=stdout, stderr=e, timeout=timeout)
            finally:
                if out:
                    stdout.close()
        if r[0] != 0:
            self.failed.append("%s %s: exit %d (see %s)" % (os.path.basename(binary),
                                                             " ".join(args[:3]), r[0], errf))
        return r

    # ---- collect of one fleet
    def collect(self, fleet, prom):
        w0, w1 = rfc(fleet.start), rfc(fleet.start + self.a.hours * 3600)
        d = os.path.join(self.work, "fleet-%d" % fleet.gpus)
        os.makedirs(d, exist_ok=True)
        proxy = collect_bench.RecordingProxy(prom.url)
        try:
            cfg = fleet.config(os.path.join(d, "discover.json"), proxy.url)
            rc = self.engine(self.bins[-1][1], cfg, os.path.join(d, "discover.db"),
                             "collect", "--from", w0, "--to", w1)[0]
        finally:
            proxy.close()
        if rc:
            return
        reqs = [p for _, p in proxy.requests]
        k = max(1, proxy.max_in_flight)
        log("%d GPUs: %d requests, %d in flight" % (fleet.gpus, len(reqs), k))
        cfg = fleet.config(os.path.join(d, "collect.json"), prom.url)
        row = {"gpus": fleet.gpus, "requests": len(reqs), "inflight": k, "engine": {}}
        for name, b in self.bins:
            db = os.path.join(d, "collect-%s.db" % name)
            if os.path.exists(db):
                os.unlink(db)
            log("%d GPUs: collect (%s)" % (fleet.gpus, name))
            rc, wall, cpu, rss = self.engine(b, cfg, db, "collect", "--from", w0, "--to", w1)
            for _ in range(self.a.repeat - 1): # the least CPU and wall of N fresh collects
                os.unlink(db)
                r2 = self.engine(b, cfg, db, "collect", "--from", w0, "--to", w1)
                rc = rc or r2[0]
                wall, cpu, rss = min(wall, r2[1]), min(cpu, r2[2]), max(rss, r2[3])
            # the cost of a collect with no data (process, config, a new
            # database's schema, the requests): what does not scale with samples
            e0, e1 = rfc(fleet.start - 7 * 86400), rfc(fleet.start - 7 * 86400 + 3600)
            fixed = None
            for _ in range(max(1, self.a.repeat)):
                edb = os.path.join(d, "empty-%s.db" % name)
                for f in (edb, edb + "-wal", edb + "-shm"):
                    if os.path.exists(f):
                        os.unlink(f)
                r0 = self.engine(b, cfg, edb, "collect", "--from", e0, "--to", e1)
                if r0[0] == 0:
                    fixed = r0[2] if fixed is None else min(fixed, r0[2])
            # the Accept-Encoding this binary sends (prometheus.compression),
            # from one more empty collect through the recording proxy: its
            # curl baseline asks the same
            ep = collect_bench.RecordingProxy(prom.url)
            try:
                pcfg = fleet.config(os.path.join(d, "encoding.json"), ep.url)
                edb = os.path.join(d, "encoding-%s.db" % name)
                self.engine(b, pcfg, edb, "collect", "--from", e0, "--to", e1)
            finally:
                ep.close()
            enc = sorted(ep.encodings)
            if len(enc) != 1:
                raise RuntimeError("%s: the empty collect through the proxy sent Accept-Encoding "
                                   "%s, expected one" % (name, enc))
            compressed = enc[0] not in ("", "identity")
            row["engine"][name] = {"rc": rc, "wall": wall, "cpu": cpu, "rss": rss, "fixed": fixed,
                                   "compressed": compressed,
                                   "samples": db_samples(db) if rc == 0 else 0,
                                   "rows": db_rows(db) if rc == 0 else 0,
                                   "digest": db_digest(db) if rc == 0 else {}}
        dg = [e["digest"] for e in row["engine"].values() if e["rc"] == 0]
        if len(dg) == 2:
            common = set(dg[0]) & set(dg[1])
            row["dump"] = ("equal (%s)" % ", ".join(sorted(common))
                           if all(dg[0][t] == dg[1][t] for t in common) else
                           "DIFFERENT: " + ", ".join(t for t in sorted(common)
                                                      if dg[0][t] != dg[1][t]))
            if not row["dump"].startswith("equal"):
                self.failed.append("%d GPUs: the two binaries' databases differ: %s"
                                   % (fleet.gpus, row["dump"]))
        lst = os.path.join(d, "curl.txt")
        with open(lst, "w") as f:
            for p in reqs:
                f.write('url = "%s%s"\noutput = "/dev/null"\n' % (prom.url, p))
        # the same requests with curl, compressed (what libcurl's default
        # Accept-Encoding gets: deflate from Prometheus) and not
        row["curls"] = {}
        for compressed in (True, False):
            log("%d GPUs: curl --parallel-max %d (%s)" % (fleet.gpus, k, "compressed"
                                                          if compressed else "identity"))
            enc = ["--compressed"] if compressed else ["-H", "Accept-Encoding: identity"]
            crc, cwall, ccpu, crss = measure(
                ["curl", "-s", "-S", "--noproxy", "*"] + enc + ["-H",
                 "Accept: application/json", "--parallel", "--parallel-max", str(k), "-K", lst],
                stderr=subprocess.DEVNULL)
            if crc:
                self.failed.append("curl of %d GPUs: exit %d" % (fleet.gpus, crc))
            row["curls"][compressed] = {"wall": cwall, "cpu": ccpu, "rss": crss}
        log("%d GPUs: Prometheus stats=all" % fleet.gpus)
        exec_s = 0.0
        nbytes = 0
        for p in reqs:
            body = urllib.request.urlopen(prom.url + p + "&stats=all", timeout=600).read()
            nbytes += len(body)
            doc = json.loads(body)
            exec_s += float(doc["data"].get("stats", {}).get("timings", {})
                            .get("execTotalTime", 0))
        row["prom_exec"] = exec_s
        row["bytes"] = nbytes
        self.collect_rows.append(row)

    # ---- the month of one fleet
    def month(self, fleet, prom):
        d = os.path.join(self.work, "month-%d" % fleet.gpus)
        os.makedirs(d, exist_ok=True)
        day29 = fleet.start
        now = rfc(day29 + 25 * 3600 + 10 * 60)
        cfg = fleet.config(os.path.join(d, "config.json"), prom.url,
                           start=rfc(day29 + 86400))
        row = {"gpus": fleet.gpus, "engine": {}}
        for name, b in self.bins:
            log("%d GPUs month (%s): collect of day 29" % (fleet.gpus, name))
            day = os.path.join(d, "day-%s.db" % name)
            for f in (day, day + "-journal"):
                if os.path.exists(f):
                    os.unlink(f)
            rc = self.engine(b, cfg, day, "collect", "--from", rfc(day29),
                             "--to", rfc(day29 + 86400))[0]
            if rc:
                continue
            e = {"day_rows": db_rows(day)}
            inv_day = os.path.join(d, "invoice-day-%s.json" % name)
            self.engine(b, cfg, day, "invoice", "--period", PERIOD, "--format", "json",
                        out=inv_day)
            mon = os.path.join(d, "month-%s.db" % name)
            shutil.copy2(day, mon)
            t0 = time.time()
            tables = replicate(mon, day29, 28)
            e["replicate_s"] = time.time() - t0
            e["tables"] = tables
            e["month_rows"] = db_rows(mon)
            e["month_bytes"] = os.path.getsize(mon)
            inv_mon = os.path.join(d, "invoice-month-%s.json" % name)
            self.engine(b, cfg, mon, "invoice", "--period", PERIOD, "--format", "json",
                        out=inv_mon)
            one, many = team_mib(inv_day), team_mib(inv_mon)
            want = {t: 29 * q for t, q in one.items()}
            e["replica_ok"] = bool(one) and many == want
            if not e["replica_ok"]:
                self.failed.append("%d GPUs (%s): the replicated month's invoice MiB.s %s "
                                   "!= 29 x one day's %s" % (fleet.gpus, name, many, want))
            for label, db in (("run1", day), ("run29", mon)):
                log("%d GPUs month (%s): %s" % (fleet.gpus, name, label))
                out = os.path.join(d, "out-%s-%s" % (label, name))
                shutil.rmtree(out, ignore_errors=True)
                e[label] = self.engine(b, cfg, db, "run", "--out", out, "--now", now)
            for cmd, extra in (("invoice", ["--format", "json"]), ("export", []),
                               ("summary", []), ("report", ["--out",
                                                            os.path.join(d, "report-" + name)])):
                log("%d GPUs month (%s): %s" % (fleet.gpus, name, cmd))
                e[cmd] = self.engine(b, cfg, mon, cmd, "--period", PERIOD, *extra,
                                     out=os.path.join(d, "%s-%s.out" % (cmd, name)))
            e["final_bytes"] = os.path.getsize(mon)
            row["engine"][name] = e
        self.month_rows.append(row)

    # ---- validation of the replication against a real 3-day collect
    def validate(self):
        fleet = Fleet(self.cache, 64, 72)
        prom = Prometheus(fleet.tsdb, os.path.join(self.work, "prometheus-validate.log"))
        d = os.path.join(self.work, "validate")
        os.makedirs(d, exist_ok=True)
        b = self.bins[-1][1]
        try:
            cfg = fleet.config(os.path.join(d, "config.json"), prom.url)
            real, rep = os.path.join(d, "real.db"), os.path.join(d, "replicated.db")
            s = fleet.start
            self.engine(b, cfg, real, "collect", "--from", rfc(s), "--to", rfc(s + 3 * 86400))
            self.engine(b, cfg, rep, "collect", "--from", rfc(s + 2 * 86400),
                        "--to", rfc(s + 3 * 86400))
        finally:
            prom.stop()
        replicate(rep, s + 2 * 86400, 2)
        c = sqlite3.connect(real)
        c.execute("VACUUM")
        c.close()
        res = {}
        for label, db in (("collected", real), ("replicated", rep)):
            r = {"rows": db_rows(db), "bytes": os.path.getsize(db)}
            for cmd, extra in (("invoice", ["--format", "json"]), ("export", []),
                               ("summary", [])):
                r[cmd] = self.engine(b, cfg, db, cmd, "--period", PERIOD, *extra)[2]
            res[label] = r
        self.validation = res

    def main(self):
        sizes = self.a.sizes
        months = set(self.a.month_sizes)
        for g in sorted(set(sizes) | months):
            hours = max(self.a.hours, self.a.fleet_hours, 26 if g in months else 0)
            fleet = Fleet(self.cache, g, hours, stream=self.a.stream)
            prom = Prometheus(fleet.tsdb, os.path.join(self.work, "prometheus-%d.log" % g))
            try:
                if g in sizes:
                    self.collect(fleet, prom)
                if g in months:
                    self.month(fleet, prom)
            finally:
                prom.stop()
        self.validation = None
        if self.a.validate:
            self.validate()
        self.report()
        for f in self.failed:
            print("FAILED: " + f)
        return 1 if self.failed else 0

    # ---- output
    def report(self):
        names = [n for n, _ in self.bins]
        print("binaries: " + ", ".join("%s = %s" % (n, a) for n, a in
                                       zip(names, ([self.a.base_bin] if self.a.base_bin else [])
                                           + [self.a.bin])))
        print("machine: %d CPUs, load %.2f; collect window %d h at 60 s (one chunk = %s h)"
              % (os.cpu_count(), os.getloadavg()[0], self.a.hours,
                 6))
        print()
        print("## collect (real Prometheus, promtool-backfilled)")
        print("| GPUs | binary | samples | CPU s | CPU us/sample | fixed CPU s | marginal us/sample "
              "| wall s | peak RSS MiB | wall / curl | usage rows |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        fit = {n: [] for n in names}
        for r in self.collect_rows:
            for n in names:
                e = r["engine"].get(n)
                if not e or e["rc"]:
                    print("| %d | %s | failed | | | | | | | | |" % (r["gpus"], n))
                    continue
                us = e["cpu"] / e["samples"] * 1e6 if e["samples"] else float("nan")
                fit[n].append((r["gpus"], us, e["samples"]))
                fx = e.get("fixed")
                marg = ((e["cpu"] - fx) / e["samples"] * 1e6
                        if fx is not None and e["samples"] else float("nan"))
                curl = r["curls"][e.get("compressed", True)]
                print("| %d | %s%s | %d | %.2f | %.3f | %s | %.3f | %.2f | %.0f | %.2f | %d |" % (
                    r["gpus"], n, "" if e.get("compressed", True) else " (identity)",
                    e["samples"], e["cpu"], us,
                    "%.3f" % fx if fx is not None else "-", marg, e["wall"], e["rss"],
                    e["wall"] / curl["wall"], e["rows"]))
        print()
        print("| GPUs | requests | in flight | bytes MiB | curl | curl wall s | curl CPU s | "
              "curl RSS MiB | Prometheus execTotalTime s |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in self.collect_rows:
            for compressed, c in sorted(r["curls"].items(), reverse=True):
                print("| %d | %d | %d | %.1f | %s | %.2f | %.2f | %.0f | %.2f |" % (
                    r["gpus"], r["requests"], r["inflight"], r["bytes"] / 2 ** 20,
                    "compressed" if compressed else "identity",
                    c["wall"], c["cpu"], c["rss"], r["prom_exec"]))
        dumps = [r for r in self.collect_rows if "dump" in r]
        if dumps:
            print()
            for r in dumps:
                print("dump check %d GPUs, base vs new: %s" % (r["gpus"], r["dump"]))
        if self.month_rows:
            print()
            print("## month (one collected day replicated to 29 days by SQL; run --now day 30)")
            print("| GPUs | binary | rows/day | month rows | DB bytes/GPU-month | run, 1 day "
                  "stored s | run, 29 days s | invoice s | export s | summary s | report s | "
                  "29 x day check |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|")
            for r in self.month_rows:
                for n in names:
                    e = r["engine"].get(n)
                    if not e:
                        print("| %d | %s | failed |" % (r["gpus"], n))
                        continue
                    bpg = e["month_bytes"] / r["gpus"] * MONTH_DAYS / 29.0
                    print("| %d | %s | %d | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | "
                          "%.2f | %s |" % (
                              r["gpus"], n, e["day_rows"], e["month_rows"], bpg,
                              e["run1"][1], e["run29"][1], e["invoice"][1], e["export"][1],
                              e["summary"][1], e["report"][1],
                              "ok" if e["replica_ok"] else "MISMATCH"))
            print("(wall seconds; run = the whole hourly run: collect of 3 h incl. re-pull, "
                  "then every output of the period; tables replicated: %s)"
                  % ", ".join(sorted({t for r in self.month_rows for e in r["engine"].values()
                                      for t in e["tables"]})))
        if self.validation:
            v = self.validation
            print()
            print("## replication check, 64 GPUs x 3 days: collected vs replicated from day 3")
            print("| | usage rows | DB bytes | invoice CPU s | export CPU s | summary CPU s |")
            print("|---|---|---|---|---|---|")
            for k in ("collected", "replicated"):
                print("| %s | %d | %d | %.2f | %.2f | %.2f |" % (
                    k, v[k]["rows"], v[k]["bytes"], v[k]["invoice"], v[k]["export"],
                    v[k]["summary"]))
            print("rows differ by %+.2f %%, bytes by %+.2f %%" % (
                100.0 * (v["replicated"]["rows"] / v["collected"]["rows"] - 1),
                100.0 * (v["replicated"]["bytes"] / v["collected"]["bytes"] - 1)))
        print()
        print("## projection to 10,000 GPUs x 30 days")
        for n in names:
            pts = [(g, us, s) for g, us, s in fit[n] if us == us]
            if not pts:
                continue
            if len(pts) >= 2:
                xs = [math.log2(g) for g, _, _ in pts]
                ys = [us for _, us, _ in pts]
                mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
                sxx = sum((x - mx) ** 2 for x in xs)
                b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
                a0 = my - b * mx
            else:
                a0, b = pts[0][1], 0.0
            us10k = a0 + b * math.log2(10000)
            g, _, s = pts[-1]
            samples_month = s / g * 10000 / self.a.hours * 720
            print("%s: collect CPU/sample = %.3f + %.3f x log2(GPUs) us -> %.3f us at 10,000 "
                  "GPUs; %.3g samples per month -> %.0f CPU s per month, %.1f CPU s per hourly "
                  "run" % (n, a0, b, us10k, samples_month, us10k * samples_month / 1e6,
                           us10k * samples_month / 1e6 / 720))
            ms = [r for r in self.month_rows if n in r["engine"]]
            if ms:
                r = ms[-1]
                e = r["engine"][n]
                scale = 10000 / r["gpus"] * MONTH_DAYS / 29.0
                rows10k = e["month_rows"] * scale
                parts = ["%s %.0f s" % (cmd, e[cmd][1] * scale)
                         for cmd in ("run29", "invoice", "export", "summary", "report")]
                print("%s: outputs linear in usage rows (per-row cost at %d GPUs): %.3g rows; "
                      "%s; database %.1f GB" % (n, r["gpus"], rows10k, ", ".join(parts),
                                                e["month_bytes"] * scale / 1e9))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--repeat", type=int, default=1,
                    help="collects per binary and fleet: the least CPU and wall are shown")
    ap.add_argument("--base-bin")
    ap.add_argument("--max-samples-in-memory", dest="budget", type=int, default=0,
                    help="the new binary's collection.max_samples_in_memory (default: "
                         "the config's)")
    ap.add_argument("--base-max-samples-in-memory", dest="base_budget", type=int, default=0,
                    help="the base binary's collection.max_samples_in_memory (the same "
                         "binary unbounded: --base-bin BIN --base-max-samples-in-memory "
                         "68719476736)")
    ap.add_argument("--stream", action="store_true",
                    help="fleets through bench/fleet_stream.py (2 h blocks, bounded memory)")
    ap.add_argument("--fleet-hours", type=int, default=0,
                    help="generate fleets of this many hours (26: the steady bench's fleet, "
                         "shared through --cache) and collect --hours of them")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes")
    ap.add_argument("--month-sizes")
    ap.add_argument("--hours", type=int, default=6)
    ap.add_argument("--validate", action="store_true")
    ap.add_argument("--work")
    ap.add_argument("--cache", help="data/TSDB cache (default $TMPDIR/gpuledger-scale-cache)")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    def sizes(s):
        out = [int(x) for x in s.split(",") if x.strip()] if s else []
        for g in out:
            if g <= 0 or g % 64:
                ap.error("fleet sizes are multiples of 64 GPUs: %d" % g)
        return out
    if a.sizes is None:
        a.sizes = "64,256" if a.quick else "64,256,1024,4096"
    if a.month_sizes is None:
        a.month_sizes = "64" if a.quick else "64,1024"
    a.sizes, a.month_sizes = sizes(a.sizes), sizes(a.month_sizes)
    for tool in ("prometheus", "promtool", "curl", "/usr/bin/time"):
        if not shutil.which(tool):
            sys.exit("scale.py: %s not found" % tool)
    b = Bench(a)
    try:
        rc = b.main()
    finally:
        if a.keep or a.work:
            print("work directory: %s" % b.work)
        else:
            shutil.rmtree(b.work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
