#!/usr/bin/env python3
"""ledger_test.py - the ledger side of collection (specification: Integrity): no
silent shrink, chunk splitting, the schema version and the writer lock.

A generated fleet (4 nodes n1..n4, 4 A100 each, one pod on GPUs 0 and 1,
GPUs 2 and 3 idle, 60 s
samples for six hours from 2026-11-03T00:00Z) is backfilled into a real
Prometheus started with --web.enable-admin-api. Pod p-N-G on node nN uses
1000*N + 100*G MiB all the time; teams come from kube_pod_labels (n1, n2:
alpha, n3: beta, n4: gamma). The expected MiB*s per team are worked out
here from that model: MiB * 60 s * 360 steps per pod.

Splitting: the window is collected with the default response cap and with
prometheus.max_response_bytes set between the size of one hour of the
largest dcgm-exporter query for two nodes and for all four (sizes measured
here, on the same Prometheus): the engine must halve 6 h -> 3 h -> 1 h and
then split each hour by host; every stored row, count and the invoice must
be identical to the unsplit collect and to the model. A cap below one
node's hour must fail (exit 4) naming the config key.

No silent shrink: Prometheus's admin API deletes series (what a backend
losing data looks like), then the window is re-collected:
  * n1's pods deleted (a quarter of every per-pod query's series): with
    collection.shrink_tolerance 1 (only "no samples at all" refused),
    accepted; the model without n1's pods; with collection.shrink_tolerance
    0.1 the same re-collect is refused (the default, 0.01, and the billed
    figures it compares: shrink_test.py);
  * n2's and n3's pods deleted too (2 series of the 6 stored remain):
    refused, exit 5, the message names cluster, hours, query and counts;
    the stored rows and the invoice are unchanged;
  * everything deleted (a backend answering success with no data): refused
    for collect and for run (exit 5, nothing changed); replaced with
    collect --allow-shrink and with run.allow_shrink.

Schema version: a database whose PRAGMA user_version is negative or newer
than the engine is refused (exit 1, naming the version) before anything
is written to it (its journal mode stays as it was).

Lock: a `collect` held on a stalling loopback server keeps the lock; a
second writer through a symlink and through a hard link to the same file
exits 6; readers are not blocked; once the first finishes the second runs.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import ledger_db  # noqa: E402

T0 = 1793664000  # 2026-11-03T00:00:00Z
HOURS = 6
STEP = 60
END = T0 + HOURS * 3600
FROM, TO = "2026-11-03T00:00:00Z", "2026-11-03T06:00:00Z"
NODES = (1, 2, 3, 4)
TEAM = {1: "alpha", 2: "alpha", 3: "beta", 4: "gamma"}
CAP_MIB = 81920
RESERVED = 500


def pods():
    for n in NODES:
        for g in (0, 1):
            yield n, g, "p-%d-%d" % (n, g), 1000 * n + 100 * g


def device(n, g):
    return ('gpu="%d",UUID="GPU-%d-%d",pci_bus_id="00000000:%02X:00.0",device="nvidia%d",'
            'modelName="NVIDIA A100-SXM4-80GB",Hostname="n%d",'
            'DCGM_FI_DRIVER_VERSION="550.54.15"' % (g, n, g, 7 + g, g, n))


def openmetrics():
    lines = []
    series = {"DCGM_FI_DEV_FB_USED": [], "DCGM_FI_DEV_FB_FREE": [],
              "DCGM_FI_DEV_FB_RESERVED": [], "kube_pod_labels": [],
              "kube_pod_container_resource_requests": [], "kube_pod_status_phase": [],
              "kube_node_labels": []}
    for n, g, pod, mib in pods():
        podl = 'namespace="ns-%d",pod="%s"' % (n, pod)
        dl = device(n, g) + ',container="c",' + podl
        series["DCGM_FI_DEV_FB_USED"].append((dl, mib))
        series["DCGM_FI_DEV_FB_FREE"].append((dl, CAP_MIB - RESERVED - mib))
        series["DCGM_FI_DEV_FB_RESERVED"].append((dl, RESERVED))
        series["kube_pod_labels"].append((podl + ',uid="u-%s",label_team="%s"'
                                          % (pod, TEAM[n]), 1))
        series["kube_pod_container_resource_requests"].append(
            (podl + ',container="c",node="n%d",resource="nvidia_com_gpu",unit="integer"' % n, 1))
        series["kube_pod_status_phase"].append((podl + ',uid="u-%s",phase="Running"' % pod, 1))
    for n in NODES:
        for g in (2, 3):  # idle GPUs: dcgm-exporter series without a pod
            series["DCGM_FI_DEV_FB_USED"].append((device(n, g), 0))
            series["DCGM_FI_DEV_FB_FREE"].append((device(n, g), CAP_MIB - RESERVED))
            series["DCGM_FI_DEV_FB_RESERVED"].append((device(n, g), RESERVED))
    for n in NODES:
        series["kube_node_labels"].append(('node="n%d",label_pool="a100"' % n, 1))
    for name, ss in series.items():
        lines.append("# TYPE %s gauge" % name)
        for labels, value in ss:
            for t in range(T0, END, STEP):
                lines.append("%s{%s} %d %d" % (name, labels, value, t))
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def expected(nodes):
    """MiB*s per team of the pods on `nodes`, from the model."""
    want = {}
    for n, g, pod, mib in pods():
        if n in nodes:
            want[TEAM[n]] = want.get(TEAM[n], 0) + mib * STEP * (HOURS * 3600 // STEP)
    return want


def engine_query(name):
    """queries/NAME.promql as the engine sends it for one cluster without a
    selector (comment lines dropped, variables substituted)."""
    path = os.path.join(HERE, "..", "..", "queries", name + ".promql")
    text = " ".join(line for line in open(path).read().splitlines()
                    if line.strip() and not line.lstrip().startswith("#"))
    return (text.replace("${cluster_selector}", "").replace("${cluster_label}", "cluster")
            .replace("${gpu_resources}", "nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.*"))


class AdminPrometheus(harness.Prometheus):
    """A real Prometheus with the admin API (delete_series)."""

    def spawn(self, argv):
        super().spawn(argv + ["--web.enable-admin-api"])

    def delete(self, match):
        qs = urllib.parse.urlencode({"match[]": match, "start": str(T0 - 3600),
                                     "end": str(END + 3600)})
        req = urllib.request.Request(self.url() + "/api/v1/admin/tsdb/delete_series?" + qs,
                                     method="POST")
        with harness.NO_PROXY_OPENER.open(req, timeout=30) as r:
            if r.status not in (200, 204):
                raise RuntimeError("delete_series %s: HTTP %s" % (match, r.status))

    def range_size(self, promql, start, end):
        qs = urllib.parse.urlencode({"query": promql, "start": str(start),
                                     "end": str(end - STEP), "step": str(STEP)})
        with harness.NO_PROXY_OPENER.open(self.url() + "/api/v1/query_range?" + qs,
                                          timeout=30) as r:
            return len(r.read())


class Stall(harness.LoopbackServer):
    """Answers every query_range with an empty matrix, once `release` is set
    when stall: a writer waiting on it holds the database lock."""

    def __init__(self, stall=True):
        super().__init__()
        self.release = threading.Event()
        self.stall = stall
        self.hits = 0

    def handle(self, h, body):
        self.hits += 1
        if self.stall:
            self.release.wait(60)
        try:
            self.reply(h, 200,
                       b'{"status":"success","data":{"resultType":"matrix","result":[]}}')
        except OSError:
            pass  # the engine gave up on this request


def rows(db):
    """Everything collect stores, devices by identity (ids depend on the order
    in which devices were first stored)."""
    if not os.path.exists(db):
        return {"missing": db}
    if not ledger_db.has_usage_table(db):
        return {"no usage table": db}
    # a node's allocation pseudo-device is "seen" at the start of each
    # chunk that stores it (engine behaviour before splitting, never
    # shown: reports skip node: devices), so its seen times follow the
    # chunking; every real device's must not
    try:
        counts = ledger_db.query_counts(db)
    except ledger_db.Error:
        counts = None
    return {"usage": ledger_db.usage_by_device(db),
            "device": ledger_db.devices(db, node_seen=False),
            "collected_hour": ledger_db.collected_hours(db), "counts": counts}


class LedgerSuite(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = None
        self.stall = self.quick = None

    def cleanup(self):
        for srv in (self.stall, self.quick):
            if srv:
                srv.release.set()
                srv.close()
        if self.prom:
            self.prom.stop()

    def config(self, name, url=None, prometheus=None, collection=None, run=None):
        prom = {"url": url or self.prom.url()}
        prom.update(prometheus or {})
        cfg = {
            "prometheus": prom,
            "collection": dict({"step_seconds": STEP, "chunk_hours": 6}, **(collection or {})),
            "teams": {"rules": [{"pod_label": "team"}]},
            "prices": {"entries": [{"model_pattern": "^NVIDIA A100", "unit": "GB-Hours",
                                    "price": "0.05", "currency": "USD",
                                    "valid_from": "2026-01-01T00:00:00Z"}]},
            "idle_overhead": {"policy": "unbilled"},
            "billing": {"currency": "USD"},
        }
        if run is not None:
            cfg["run"] = dict({"start": FROM, "delay_minutes": 0, "repull_hours": HOURS,
                               "out_dir": self.path("out-" + name)}, **run)
        path = self.path(name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def collect(self, cfg, db, *extra):
        return self.engine.run(cfg, db, "collect", "--from", FROM, "--to", TO, *extra)

    def invoice(self, cfg, db):
        rc, out, err = self.engine.run(cfg, db, "invoice", "--period", "2026-11", "--format",
                                       "json")
        return out if rc == 0 else "invoice exit %s: %s" % (rc, harness.tail(err))

    def billed(self, cfg, db):
        text = self.invoice(cfg, db)
        try:
            doc = json.loads(text)
        except ValueError:
            return None, text
        got = {}
        for inv in doc["invoices"]:
            for line in inv["lines"]:
                if line["kind"] == "memory_used" and int(line["mib_seconds"]):
                    got[inv["team"]] = got.get(inv["team"], 0) + int(line["mib_seconds"])
        return got, None

    def figures(self, cfg, db, want):
        got, problem = self.billed(cfg, db)
        if problem:
            return [problem]
        return [] if got == want else ["MiB*s per team %s, expected %s" % (got, want)]

    # ------------------------------------------------------------ main
    def main(self):
        self.engine = harness.Engine(os.path.abspath(self.args.bin), self.work)
        self.schema_checks()
        self.lock_checks()
        om = self.path("fleet.om")
        with open(om, "w") as f:
            f.write(openmetrics())
        rc, err = harness.backfill(om, self.path("tsdb"))
        if rc != 0:
            self.tap.fail("promtool backfill", harness.tail(err))
            return
        self.prom = AdminPrometheus(self.work, self.path("tsdb"))
        self.prom.start()
        self.split_checks()
        self.shrink_checks()

    # ------------------------------------------------------------ schema
    def schema_checks(self):
        cfg = self.config("schema", url="http://127.0.0.1:9")
        for version, word in ((-1, "-1"), (-2147483648, "-2147483648"), (99, "99")):
            db = self.path("schema%d.db" % (version & 0xffff))
            ledger_db.make_foreign(db, version)
            p = []
            for cmd in (("collect", "--from", FROM, "--to", TO),
                        ("invoice", "--period", "2026-11")):
                rc, _, err = self.engine.run(cfg, db, *cmd)
                if rc != 1 or "schema version " + word not in err:
                    p.append("%s: exit %s (expected 1 naming schema version %s): %s"
                             % (cmd[0], rc, word, harness.tail(err, 300)))
            mode, tables, got_version = ledger_db.file_state(db)
            if mode != "delete" or tables != ["keep"] or got_version != version:
                p.append("the database was changed: journal_mode %s, tables %s, user_version %s"
                         % (mode, tables, got_version))
            self.tap.check("schema version %d is refused before any use of the database"
                           % version, p)

    # ------------------------------------------------------------ lock
    def lock_checks(self):
        self.stall = Stall()
        self.quick = Stall(stall=False)
        cfg = self.config("lock", url=self.stall.url(),
                          prometheus={"timeout_seconds": 60, "retries": 0})
        # the second writer's backend answers at once: were it not locked out,
        # it would finish (exit 0) instead of waiting for the first
        cfg2 = self.config("lock2", url=self.quick.url(), prometheus={"retries": 0})
        real = self.path("lock.db")
        link = self.path("lock-symlink.db")
        hard = self.path("lock-hardlink.db")
        # the database exists before the links to it do
        ledger_db.make_placeholder(real)
        os.symlink(real, link)
        os.link(real, hard)
        for holder, other, title in ((real, link, "a symlink"), (real, hard, "a hard link"),
                                     (link, real, "the real path while a symlink holds it"),
                                     (hard, link, "a symlink while a hard link holds it")):
            self.stall.release.clear()
            hits = self.stall.hits
            cmd = self.engine.cmd(cfg, holder, "collect", "--from", FROM, "--to",
                                  "2026-11-03T01:00:00Z")
            first = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=harness.CHILD_ENV,
                                     cwd=self.work)
            p = []
            deadline = time.time() + 30
            while self.stall.hits == hits and time.time() < deadline and first.poll() is None:
                time.sleep(0.05)
            if self.stall.hits == hits:
                p.append("the first writer never reached the backend (exit %s)" % first.poll())
            rc, _, err = self.engine.run(cfg2, other, "collect", "--from", FROM, "--to",
                                         "2026-11-03T01:00:00Z", timeout=30)
            if rc != 6:
                p.append("second writer through %s: exit %s, expected 6 (locked): %s"
                         % (title, rc, harness.tail(err, 300)))
            rc, _, err = self.engine.run(cfg2, other, "invoice", "--period", "2026-11",
                                         timeout=30)
            if rc == 6:
                p.append("a reader (invoice) was locked out: %s" % harness.tail(err, 200))
            self.stall.release.set()
            try:
                out, err = first.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                first.kill()
                out, err = first.communicate()
            if first.returncode != 0:
                p.append("first writer: exit %s: %s" % (first.returncode,
                                                        harness.tail(err.decode(), 300)))
            rc, _, err = self.engine.run(cfg2, other, "collect", "--from", FROM, "--to",
                                         "2026-11-03T01:00:00Z", timeout=60)
            if rc != 0:
                p.append("after the first writer ended, the second: exit %s: %s"
                         % (rc, harness.tail(err, 300)))
            self.tap.check("the writer lock holds through %s (second writer exits 6)" % title, p)

    # ------------------------------------------------------------ splitting
    def split_checks(self):
        full = expected(NODES)
        big_cfg = self.config("unsplit")
        big = self.path("unsplit.db")
        rc, _, err = self.collect(big_cfg, big)
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        p += self.figures(big_cfg, big, full)
        self.tap.check("unsplit collect (default cap) bills the model's MiB*s", p)

        # sizes of one hour's responses, measured on this Prometheus
        dcgm = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED")
        hour_all = max(self.prom.range_size("%s{}" % m, T0, T0 + 3600) for m in dcgm)
        hour_two = max(self.prom.range_size('%s{Hostname=~"n1|n2"}' % m, T0, T0 + 3600)
                       for m in dcgm)
        hour_two = max(hour_two, max(self.prom.range_size('%s{Hostname=~"n3|n4"}' % m, T0,
                                                           T0 + 3600) for m in dcgm))
        hour_one = min(self.prom.range_size('%s{Hostname="n%d"}' % (m, n), T0, T0 + 3600)
                       for m in dcgm for n in NODES)
        ksm = max(self.prom.range_size(engine_query(q), T0, T0 + 3600) for q in
                  ("pod_labels", "node_labels", "alloc_requests", "pod_phase"))
        cap = (hour_two + hour_all) // 2
        self.tap.note("one hour: all hosts %d bytes, two hosts %d, one host %d, kube-state "
                      "%d; cap %d" % (hour_all, hour_two, hour_one, ksm, cap))
        if not (hour_two < cap < hour_all and ksm < cap):
            self.tap.fail("split scenario", "sizes do not allow the test (cap %d)" % cap)
            return
        small_cfg = self.config("split", prometheus={"max_response_bytes": cap})
        small = self.path("split.db")
        rc, _, err = self.collect(small_cfg, small)
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        for want in ("splitting chunk start=2026-11-03T00:00:00Z hours=6 into 3-hour chunks",
                     "into 1-hour chunks", "splitting hour start=2026-11-03T00:00:00Z into 2 "
                     "shards"):
            if want not in err:
                p.append("no log line %r" % want)
        self.tap.check("a response over prometheus.max_response_bytes splits the chunk: 6 h -> "
                       "3 h -> 1 h, then hosts in shards, each split logged", p)
        a, b = rows(big), rows(small)
        p = []
        for k in sorted(set(a) | set(b)):
            x, y = a.get(k), b.get(k)
            if x != y:
                p.append("%s differs: unsplit %s, split %s; first difference %s"
                         % (k, harness.tail(str(x), 80), harness.tail(str(y), 80),
                            next((r for r in zip(x or [], y or []) if r[0] != r[1]), None)
                            if isinstance(x, list) and isinstance(y, list) else None))
        if not a.get("usage"):
            p.append("nothing stored")
        if self.invoice(big_cfg, big) != self.invoice(small_cfg, small):
            p.append("the invoices differ")
        p += self.figures(small_cfg, small, full)
        self.tap.check("split collect stores exactly what the unsplit one stores (every usage "
                       "row, device, hour and count; the invoice; the model's MiB*s)", p)

        # a re-collect of the split database with the default cap changes nothing
        rc, _, err = self.collect(big_cfg, small)
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        if rows(small) != a:
            p.append("rows changed")
        self.tap.check("re-collecting the split hours unsplit is accepted and changes nothing", p)

        tiny = max(1024, hour_one // 2)
        tiny_cfg = self.config("tiny", prometheus={"max_response_bytes": tiny})
        tdb = self.path("tiny.db")
        rc, _, err = self.collect(tiny_cfg, tdb)
        p = []
        if rc != 4:
            p.append("exit %s, expected 4" % rc)
        for want in ("prometheus.max_response_bytes", "(%d now)" % tiny, "even in 4 shards"):
            if want not in err:
                p.append("message lacks %r: %s" % (want, harness.tail(err, 400)))
        # the batch ends at the first response over the cap, so the query named
        # is whichever of the hour's queries passed it first
        if not re.search(r"\(query=(DCGM_FI_|kube_)\w+", err):
            p.append("message does not name the query: %s" % harness.tail(err, 400))
        if rows(tdb).get("usage"):
            p.append("usage stored")
        self.tap.check("a cap below one host's hour fails with exit 4, naming the query, the "
                       "limit and its config key; nothing stored", p)

    # ------------------------------------------------------------ shrink
    def shrink_checks(self):
        cfg = self.config("shrink")
        strict_cfg = self.config("strict", collection={"shrink_tolerance": 0.1})
        lenient_cfg = self.config("lenient", collection={"shrink_tolerance": 1})
        run_cfg = self.config("run", run={})
        run_allow_cfg = self.config("run-allow", run={"allow_shrink": True})
        db, strict, rdb = self.path("shrink.db"), self.path("strict.db"), self.path("run.db")
        rc, _, err = self.collect(cfg, db)
        p = [] if rc == 0 else ["collect: exit %s: %s" % (rc, harness.tail(err))]
        rc, _, err = self.engine.run(run_cfg, rdb, "run", "--now", TO)
        if rc != 0:
            p.append("run: exit %s: %s" % (rc, harness.tail(err)))
        for c, d in ((cfg, db), (run_cfg, rdb)):
            p += self.figures(c, d, expected(NODES))
        if not self.tap.check("baseline: collect and run store the whole fleet", p):
            return
        rc, _, err = self.collect(strict_cfg, strict)
        p = [] if rc == 0 else ["collect: exit %s: %s" % (rc, harness.tail(err))]
        self.tap.check("collection.shrink_tolerance 0.1 is accepted; baseline stored",
                       p + self.figures(strict_cfg, strict, expected(NODES)))

        # n1's pods lost: a quarter of the per-pod series go
        self.prom.delete('{pod=~"p-1-.*"}')
        rc, _, err = self.collect(lenient_cfg, db)
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        p += self.figures(cfg, db, expected((2, 3, 4)))
        self.tap.check("a quarter of the series gone: with collection.shrink_tolerance 1, "
                       "replaced", p)

        before, inv = rows(strict), self.invoice(strict_cfg, strict)
        rc, _, err = self.collect(strict_cfg, strict)
        p = [] if rc == 5 else ["exit %s, expected 5: %s" % (rc, harness.tail(err, 300))]
        for want in ("fb_used returned 14 series", "where 16 series", "shrink_tolerance 0.1"):
            if want not in err:
                p.append("message lacks %r: %s" % (want, harness.tail(err, 500)))
        if rows(strict) != before or self.invoice(strict_cfg, strict) != inv:
            p.append("stored rows or invoice changed")
        self.tap.check("the same quarter with collection.shrink_tolerance 0.1: refused (exit "
                       "5), nothing changed", p)

        # n2's and n3's pods go too: 2 of the 6 stored series remain
        self.prom.delete('{pod=~"p-[23]-.*"}')
        before, inv = rows(db), self.invoice(cfg, db)
        rc, _, err = self.collect(cfg, db)
        p = [] if rc == 5 else ["exit %s, expected 5: %s" % (rc, harness.tail(err, 300))]
        for want in ("cluster default", "hours 2026-11-03T00:00:00Z to 2026-11-03T06:00:00Z",
                     "query pod_labels returned 2 series, 120 samples",
                     "where 6 series, 360 samples are stored", "--allow-shrink",
                     "run.allow_shrink"):
            if want not in err:
                p.append("message lacks %r: %s" % (want, harness.tail(err, 600)))
        if rows(db) != before:
            p.append("stored rows changed")
        if self.invoice(cfg, db) != inv:
            p.append("the invoice changed")
        self.tap.check("fewer series than the tolerance allows: refused (exit 5) naming "
                       "cluster, hours, query and counts; stored rows and invoice identical", p)

        # the backend answers success with no data at all
        self.prom.delete('{__name__=~".+"}')
        for c, d, argv, what in ((cfg, db, ("collect", "--from", FROM, "--to", TO), "collect"),
                                 (run_cfg, rdb, ("run", "--now", TO), "run")):
            before, inv = rows(d), self.invoice(c, d)
            rc, _, err = self.engine.run(c, d, *argv)
            p = [] if rc == 5 else ["exit %s, expected 5: %s" % (rc, harness.tail(err, 300))]
            if "returned 0 series, 0 samples" not in err:
                p.append("message lacks the counts: %s" % harness.tail(err, 500))
            if rows(d) != before or self.invoice(c, d) != inv:
                p.append("stored rows or invoice changed")
            self.tap.check("%s of hours the backend lost entirely: refused (exit 5), stored "
                           "rows and invoice identical" % what, p)
        for c, d, argv, what in (
                (cfg, db, ("collect", "--from", FROM, "--to", TO, "--allow-shrink"),
                 "collect --allow-shrink"),
                (run_allow_cfg, rdb, ("run", "--now", TO), "run with run.allow_shrink")):
            rc, _, err = self.engine.run(c, d, *argv)
            p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err, 300))]
            if "replacing stored data with less, as allowed" not in err:
                p.append("no warning: %s" % harness.tail(err, 300))
            mem = [r for r in rows(d)["usage"] if r[7] == "memory_used"]
            if mem:
                p.append("%d memory_used rows remain" % len(mem))
            p += self.figures(c, d, {})
            self.tap.check("%s replaces them" % what, p)


def main():
    args = harness.arguments(__doc__).parse_args()
    tap = harness.Tap()
    return harness.run_driver(LedgerSuite, args, tap, "ledger_test", "gpuledger-ledger-")


if __name__ == "__main__":
    sys.exit(main())
