#!/usr/bin/env python3
"""alloc_join_test.py - the allocation joined in the engine equals the
backend's join.

Usage: python3 tests/integration/alloc_join_test.py --bin build/gpuledger
           [--work DIR] [--keep] [--only NAME,...] [--all]

Every scenario of tests/integration/scenarios (shared and run-month, the
largest, only with --all) is generated (tests/gen), loaded
into a real Prometheus (promtool backfill; cluster-us, which overlaps
cluster-eu in time, into a second one) and collected with each engine config
the generator writes (the base and every run), twice into separate
databases:

  backend  a queries folder holding queries/backend-join/allocation.promql
           (the joined PromQL: sum by ... * on (...) group_left () max by
           (...) (kube_pod_status_phase{phase="Running"} == 1)), which the
           engine then runs as it is;
  engine   the repository's queries/ (alloc_requests.promql and
           pod_phase.promql, two plain selectors joined by the engine).

Checks per (scenario, config): the usage tables are equal row by row
(hour, cluster, namespace, pod, device identity, team, kind, MiB·s,
estimated, first/last seen), the device tables too, and the stored query
counts of the allocation agree; and the engine mode sent no query with a
join or aggregation over kube_pod_status_phase (read from the Prometheus
query log). The engine before the change fails every check: without
allocation.promql in queries/ it cannot read its allocation query at all.
"""

import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import harness  # noqa: E402
import ledger_db  # noqa: E402
from harness import tail  # noqa: E402

SCENARIOS = os.path.join(HERE, "scenarios")
# scenarios whose time range overlaps another's go to a second TSDB
SECOND = {"cluster-us"}
# the largest data sets (days to a month of samples), left to --all so that
# ./tests/run.sh stays fast; sharing, with its eight configs, stays in
LONG = {"shared", "run-month"}
# Pending pods' requests: the backend's join reads Running pods only, so the
# demand waiting exists in the engine's join alone (pending_test.py checks it)
ENGINE_ONLY = {"pending"}


def usage_rows(db):
    return (sorted(ledger_db.usage_by_device(db, device_cluster=True)),
            sorted(ledger_db.devices(db)),
            sorted(ledger_db.query_counts(db, "allocation")))


def diff(a, b, n=3):
    sa, sb = set(a), set(b)
    only_a, only_b = sorted(sa - sb)[:n], sorted(sb - sa)[:n]
    if not only_a and not only_b and len(a) == len(b):
        return []
    return ["%d vs %d rows; only backend: %s; only engine: %s" % (len(a), len(b), only_a, only_b)]


class AllocJoin(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.proms = {}

    def main(self):
        tap = self.tap
        self.engine = harness.Engine(os.path.abspath(self.args.bin), self.work)
        names = sorted(f[:-5] for f in os.listdir(SCENARIOS)
                       if f.endswith(".json") and f[:-5] not in ENGINE_ONLY)
        if self.args.only:
            names = [n for n in names if n in self.args.only.split(",")]
        elif not self.args.all:
            names = [n for n in names if n not in LONG]
        if not shutil.which("promtool") or not shutil.which("prometheus"):
            tap.skip("allocation join", "promtool/prometheus missing")
            return
        # generate all (in parallel), backfill each, merge into two TSDBs
        t0 = time.time()
        procs = {n: subprocess.Popen(
            [sys.executable, os.path.join(REPO, "tests", "gen", "gencluster.py"),
             os.path.join(SCENARIOS, n + ".json"), self.path("gen-" + n)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for n in names}
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
            dst = self.path("tsdb-b" if n in SECOND else "tsdb-a")
            os.makedirs(dst, exist_ok=True)
            src = self.path("tsdb-" + n)
            for b in os.listdir(src):
                if os.path.isfile(os.path.join(src, b, "meta.json")):
                    os.rename(os.path.join(src, b), os.path.join(dst, b))
        tap.setup("%d scenarios generated and backfilled (%.1fs)" % (len(gens), time.time() - t0))
        for which in ("a", "b"):
            if not any((n in SECOND) == (which == "b") for n in gens):
                continue
            prom = harness.Prometheus(self.path("prom-" + which), self.path("tsdb-" + which))
            self.write_query_log_config(prom)
            prom.start()
            self.proms[which] = prom
        # the backend-join queries folder: the repository's plus allocation.promql
        qb = self.path("queries-backend")
        shutil.copytree(os.path.join(REPO, "queries"), qb)
        shutil.copy(os.path.join(REPO, "queries", "backend-join", "allocation.promql"), qb)
        for n in gens:
            prom = self.proms["b" if n in SECOND else "a"]
            self.scenario(n, prom, qb)
        for which, prom in self.proms.items():
            self.check_query_log(which, prom)

    def write_query_log_config(self, prom):
        """prometheus.yml (harness keeps an existing one) with a query log."""
        os.makedirs(prom.work, exist_ok=True)
        with open(os.path.join(prom.work, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1h\n  query_log_file: %s\n"
                    % os.path.join(prom.work, "queries.log"))

    def scenario(self, n, prom, qb):
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
            for mode in ("backend", "engine"):
                with open(os.path.join(gen, cf)) as f:
                    cfg = json.load(f)
                cfg["prometheus"]["url"] = prom.url()
                cfg["prices"]["file"] = os.path.join(gen, "prices.csv")
                col = cfg.setdefault("collection", {})
                col["queries_dir"] = qb if mode == "backend" else os.path.join(REPO, "queries")
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
                results[mode] = usage_rows(db)
            bad = [m + ": " + r for m, r in results.items() if isinstance(r, str)]
            if not bad:
                (ua, da, ca), (ub, dbv, cb) = results["backend"], results["engine"]
                bad = diff(ua, ub) + ["devices: " + p for p in diff(da, dbv)] + \
                    ["allocation counts: " + p for p in diff(ca, cb)]
                if not ua:
                    bad.append("no usage rows at all")
            tap.check("%s/%s: usage rows with the allocation joined by the engine equal the "
                      "backend join's, to the MiB·s (%s rows)" % (
                          n, run, len(results["backend"][0])
                          if not isinstance(results.get("backend"), str) else "?"), bad)

    def check_query_log(self, which, prom):
        path = os.path.join(prom.work, "queries.log")
        joined, plain = 0, 0
        try:
            with open(path) as f:
                for line in f:
                    q = json.loads(line).get("params", {}).get("query", "")
                    if "kube_pod_status_phase" not in q:
                        continue
                    if "group_left" in q or "max by" in q:
                        joined += 1
                    else:
                        plain += 1
        except OSError as e:
            self.tap.fail("prometheus %s: query log" % which, e)
            return
        # the backend mode sends the joined query, the engine mode plain selectors
        self.tap.check("prometheus %s: the engine mode's phase queries are plain selectors "
                       "(%d plain, %d joined from the backend mode)" % (which, plain, joined),
                       [] if plain > 0 and joined > 0 else ["expected both kinds"])

    def cleanup(self):
        for p in self.proms.values():
            p.stop()


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--only", help="scenario names, comma-separated")
    ap.add_argument("--all", action="store_true",
                    help="also the long scenarios (%s)" % ", ".join(sorted(LONG)))
    args = ap.parse_args()
    tap = harness.Tap()
    return harness.run_driver(lambda a, t: AllocJoin(a, t), args, tap,
                              "alloc_join_test", "gl-alloc-join-")


if __name__ == "__main__":
    sys.exit(main())
