#!/usr/bin/env python3
"""server_mode_test.py - collection.mode "server" equals "raw" (issue 13 item 4).

Every chosen scenario of tests/integration/scenarios (the long ones with
--all) is generated, backfilled into a real Prometheus and collected twice,
with collection.mode "raw" and "server". Checks per (scenario, config): the
usage tables are equal row by row (hour, cluster, namespace, pod, device
identity, team, kind, MiB·s, estimated, first/last seen), the device tables
and the stored per-query counts too, and the invoices (JSON) are equal; the
server mode's log lines say how many queries and series-hours came from the
backend's hourly figures, and the suite fails unless the server path carried
most series-hours of at least one scenario (so the comparison proves
something). On an engine without collection.mode every collect in server
mode fails as a config error.
"""

import json
import re
import os
import shutil
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import tail  # noqa: E402

SCENARIOS = os.path.join(HERE, "scenarios")
# scenarios whose time range overlaps another's go to a second TSDB
SECOND = {"cluster-us"}
# the largest data sets (days to a month of samples), left to --all so that
# ./tests/run.sh stays fast; sharing, with its eight configs, stays in
LONG = {"shared", "run-month"}
# what ./tests/run.sh collects (under a minute); --all takes every scenario
DEFAULT = {"fleet", "dra", "hami", "cluster-eu"}
# bench/make_scenario.py's fleet (its own TSDB), where most hosts are plain
PLAIN = "bench-6h"


def tsdb_of(n):
    return "c" if n == PLAIN else "b" if n in SECOND else "a"



def usage_rows(db):
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT u.hour, u.cluster, u.namespace, u.pod, d.cluster, d.uuid, d.gpu_i_id, "
            "u.team, u.kind, u.quantity, u.estimated, u.first_seen, u.last_seen "
            "FROM usage u JOIN device d ON d.id = u.device_id").fetchall()
        devs = con.execute(
            "SELECT cluster, uuid, gpu_i_id, gpu_i_profile, model, hostname, max_capacity_mib, "
            "first_seen, last_seen FROM device").fetchall()
        counts = con.execute(
            "SELECT cluster, hour, query, series, samples FROM collected_query").fetchall()
    finally:
        con.close()
    return sorted(rows), sorted(devs), sorted(counts)


def diff(a, b, n=3):
    sa, sb = set(a), set(b)
    only_a, only_b = sorted(sa - sb)[:n], sorted(sb - sa)[:n]
    if not only_a and not only_b and len(a) == len(b):
        return []
    return ["%d vs %d rows; only backend: %s; only engine: %s" % (len(a), len(b), only_a, only_b)]


class ServerMode(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.proms = {}

    def main(self):
        tap = self.tap
        self.engine = harness.Engine(os.path.abspath(self.args.bin), self.work)
        names = sorted(f[:-5] for f in os.listdir(SCENARIOS) if f.endswith(".json"))
        if self.args.only:
            names = [n for n in names if n in self.args.only.split(",")]
        elif not self.args.all:
            names = [n for n in names if n in DEFAULT]
        if not shutil.which("promtool") or not shutil.which("prometheus"):
            tap.skip("server mode", "promtool/prometheus missing")
            return
        # the plain fleet: bench/make_scenario.py's 64 GPUs for six hours
        # (exclusive and process-mode nodes, a MIG node)
        plain = self.path("plain.json")
        subprocess.run([sys.executable, os.path.join(REPO, "bench", "make_scenario.py"), plain,
                        "--hours", "6"], check=True)
        paths = {n: os.path.join(SCENARIOS, n + ".json") for n in names}
        paths[PLAIN] = plain
        # generate all (in parallel), backfill each, merge into the TSDBs
        t0 = time.time()
        procs = {n: subprocess.Popen(
            [sys.executable, os.path.join(REPO, "tests", "gen", "gencluster.py"),
             paths[n], self.path("gen-" + n)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for n in paths}
        gens = []
        for n, p in procs.items():
            out = p.communicate()[0].decode(errors="replace")
            if p.returncode != 0:
                tap.fail("%s: generator" % n, tail(out))
            else:
                gens.append(n)
        fills = {n: harness.backfill_start(os.path.join(self.path("gen-" + n), "data.om"),
                                           self.path("tsdb-" + n), self.work) for n in gens}
        for n in list(gens):
            rc, out = harness.backfill_wait(fills[n])
            if rc != 0:
                tap.fail("%s: promtool backfill" % n, tail(out))
                gens.remove(n)
                continue
            dst = self.path("tsdb-" + tsdb_of(n))
            os.makedirs(dst, exist_ok=True)
            src = self.path("tsdb-" + n)
            for b in os.listdir(src):
                if os.path.isfile(os.path.join(src, b, "meta.json")):
                    os.rename(os.path.join(src, b), os.path.join(dst, b))
        tap.ok("%d scenarios generated and backfilled (%.1fs)" % (len(gens), time.time() - t0))
        for which in ("a", "b", "c"):
            if not any(tsdb_of(n) == which for n in gens):
                continue
            prom = harness.Prometheus(self.path("prom-" + which), self.path("tsdb-" + which))
            os.makedirs(prom.work, exist_ok=True)
            prom.start()
            self.proms[which] = prom
        self.shares = {}
        for n in gens:
            prom = self.proms[tsdb_of(n)]
            self.scenario(n, prom)
        share = self.shares.get(PLAIN + "/base", 0.0)
        tap.check("%s: the hourly sums carried most device-hours (%.0f %%)" % (PLAIN, 100 * share),
                  [] if share > 0.5 else ["most device-hours were fetched raw"])
        self.victoria()

    def scenario(self, n, prom):
        tap = self.tap
        gen = self.path("gen-" + n)
        configs = sorted(f for f in os.listdir(gen) if f.startswith("config") and
                         f.endswith(".json"))
        for cf in configs:
            run = cf[len("config"):-len(".json")].lstrip("-") or "base"
            exp_file = os.path.join(gen, "expected%s.json" % ("" if run == "base" else "-" + run))
            with open(exp_file) as f:
                exp = json.load(f)
            wf, wt = exp["window"]["from"], exp["window"]["to"]
            results = {}
            for mode in ("raw", "server"):
                with open(os.path.join(gen, cf)) as f:
                    cfg = json.load(f)
                cfg["prometheus"]["url"] = prom.url()
                cfg["prices"]["file"] = os.path.join(gen, "prices.csv")
                col = cfg.setdefault("collection", {})
                col["mode"] = mode
                path = self.path("cfg", "%s-%s-%s.json" % (n, run, mode))
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    json.dump(cfg, f, indent=1)
                db = self.path("db", "%s-%s-%s.db" % (n, run, mode))
                os.makedirs(os.path.dirname(db), exist_ok=True)
                rc, out, err = self.engine.run(path, db, "collect", "--from", wf, "--to", wt,
                                               timeout=300)
                if rc != 0:
                    results[mode] = "collect exit %s: %s" % (rc, tail(err))
                    continue
                if mode == "server":
                    self.count_log(n, run, err)
                rc, out, err = self.engine.run(path, db, "invoice", "--period", exp["period"],
                                               "--format", "json")
                if rc != 0:
                    results[mode] = "invoice exit %s: %s" % (rc, tail(err))
                    continue
                results[mode] = usage_rows(db) + (out,)
            bad = [m + ": " + r for m, r in results.items() if isinstance(r, str)]
            if not bad:
                (ua, da, ca, ia), (ub, dbv, cb, ib) = results["raw"], results["server"]
                bad = diff(ua, ub) + ["devices: " + p for p in diff(da, dbv)] + \
                    ["query counts: " + p for p in diff(ca, cb)]
                if ia != ib:
                    bad.append("the invoices differ")
                if not ua:
                    bad.append("no usage rows at all")
            tap.check("%s/%s: usage, device rows, query counts and invoices collected in "
                      "server mode equal raw mode's, to the MiB·s (%s rows)" % (
                          n, run, len(results["raw"][0])
                          if not isinstance(results.get("raw"), str) else "?"), bad)

    def count_log(self, n, run, err):
        """Sums the server mode's per-chunk log lines."""
        sv = raw = 0
        for m in re.finditer(r"device_hours_server=(\d+) device_hours_raw=(\d+)", err):
            sv += int(m.group(1))
            raw += int(m.group(2))
        self.shares["%s/%s" % (n, run)] = sv / (sv + raw) if sv + raw else 0.0
        self.tap.ok("%s/%s: server mode took %d device-hours from the hourly sums, %d raw"
                    % (n, run, sv, raw))

    def victoria(self):
        """VictoriaMetrics reports no version: server mode refuses it."""
        tap = self.tap
        vm = shutil.which("victoria-metrics") or shutil.which("victoria-metrics-prod")
        if not vm:
            tap.skip("server mode refuses VictoriaMetrics", "victoria-metrics not on PATH")
            return
        srv = harness.Server("victoria-metrics", self.work)
        data = self.path("vm-data")
        errors = harness.start_all([(srv, lambda port: [
            vm, "-storageDataPath=" + data, "-httpListenAddr=127.0.0.1:%d" % port],
            "/health")])
        if errors:
            tap.fail("victoria-metrics starts", sorted(errors.values()))
            return
        try:
            gen = self.path("gen-" + PLAIN)
            with open(os.path.join(gen, "config.json")) as f:
                cfg = json.load(f)
            cfg["prometheus"]["url"] = srv.url()
            cfg["prices"]["file"] = os.path.join(gen, "prices.csv")
            cfg.setdefault("collection", {})["mode"] = "server"
            path = self.path("cfg", "vm-server.json")
            with open(path, "w") as f:
                json.dump(cfg, f)
            rc, out, err = self.engine.run(path, self.path("db", "vm.db"), "collect", "--from",
                                           "2026-10-05T00:00:00Z", "--to",
                                           "2026-10-05T01:00:00Z")
            tap.check("server mode refuses VictoriaMetrics (no version in buildinfo): exit 4 "
                      "naming collection.mode", [] if rc == 4 and "buildinfo" in err and
                      "collection.mode" in err else ["exit %s: %s" % (rc, tail(err))])
        finally:
            srv.stop()

    def cleanup(self):
        for p in self.proms.values():
            p.stop()


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--only", help="scenario names, comma-separated")
    ap.add_argument("--all", action="store_true",
                    help="every scenario, not only %s" % ", ".join(sorted(DEFAULT)))
    args = ap.parse_args()
    tap = harness.Tap()
    return harness.run_driver(lambda a, t: ServerMode(a, t), args, tap,
                              "server_mode_test", "gl-server-mode-")


if __name__ == "__main__":
    sys.exit(main())
