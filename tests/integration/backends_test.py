#!/usr/bin/env python3
"""gpuledger multi-cluster and second-backend tests.

Usage: python3 tests/integration/backends_test.py --bin build/gpuledger [--work DIR] [--keep]

Data: two small generated clusters, tests/integration/scenarios/cluster-eu.json
(cluster eu-1: A100s with a scrape gap, a per-process H100 shared by two
teams) and cluster-us.json (cluster us-1: A100s, an L4); one team (nlp) runs
in both, the price table is the same. Expected figures come from
tests/gen/gencluster.py's model of each scenario (never from the engine),
merged: a team's invoice holds the lines of both clusters.

  (a) two real Prometheus servers, one per cluster, series WITHOUT a cluster
      label; config "clusters" with two entries, each with its own
      prometheus.url, no top-level prometheus.
  (b) one Prometheus holding both clusters, every series labelled
      cluster="eu-1" / "us-1" (scenario cluster.emit); config "clusters"
      with selectors cluster="eu-1" / cluster="us-1" and one shared top-level
      prometheus; also collected one cluster at a time (collect --cluster);
      and the single-cluster config (no "clusters"), where the series'
      cluster label names the cluster.
  (c) VictoriaMetrics single node as a second real backend, the same labelled
      data imported through POST /api/v1/import/prometheus (Prometheus text,
      millisecond timestamps), GET /internal/force_flush, then (b)'s config
      (and `check`, whose instant queries VM also answers).
  (d) one Mimir-like endpoint (a loopback router in a thread) that picks the
      Prometheus of (a) by the X-Scope-OrgID header: config "clusters", each
      with the same URL and its own tenant in prometheus.headers.

Checks per setup: invoices of every team, every line (memory_used, idle_share,
overhead_share) exactly as expected; FOCUS export (full checks of run.py for
(a), byte-equal to (a) for the others) with x_Cluster and Tags.cluster on
every row; `summary` lists both clusters with the expected per-model and
per-device GB-hours. Plus, with the first cluster's Prometheus down: collect
exits 4 naming that URL and invoice still works on what was stored; run (the
CronJob) exits 5 (partial failure) with the second cluster stored and billed,
and the next run, the cluster back, completes with the full expected totals.

VictoriaMetrics staleness (observed with Debian's 1.79): with only
-retentionPeriod and -search.latencyOffset=0s, a query_range at a 60 s step
repeats the previous sample at the first step instant of a scrape gap and one
step after a series ends (its implicit lookback is somewhat longer than the
scrape interval it infers from the samples), where Prometheus with
--query.lookback-delta=59s returns nothing; over this data that bills 16
phantom points (ml-research's A100 line 4.55 instead of 4.52).
-search.maxStalenessInterval=59s caps the lookback like Prometheus's lookback
delta (60s gives the same values at a 60 s step; -search.minStalenessInterval
only widens it). With -search.maxStalenessInterval=59s and
-search.latencyOffset=0s every value at a 60 s step instant equals the raw
sample and gaps stay empty: the test verifies that for every series over all
the data before comparing totals, and prints what VM serves without the flag
(as "#" comments, not checks). VM's rollup-result cache is left on (data is
imported once, before any query).

Output: "ok - NAME" / "not ok - NAME: REASON" lines and "# ..." comments;
exit 1 when a check failed. A tool that is missing fails its checks under
CI=true and is skipped otherwise.
"""

import copy
import csv
import io
import json
import os
import shutil
import sys
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gen"))
import gencluster as gc  # noqa: E402
import harness  # noqa: E402
import run as it  # noqa: E402  (check_focus, helpers of the main suite)
from harness import start_all, tail  # noqa: E402

SCENARIOS = [os.path.join(HERE, "scenarios", "cluster-eu.json"),
             os.path.join(HERE, "scenarios", "cluster-us.json")]
ENGINE_TIMEOUT = 40
OPENER = harness.NO_PROXY_OPENER
VM_FLAGS = ["-retentionPeriod=100y", "-search.latencyOffset=0s",
            "-search.maxStalenessInterval=59s"]


# ---------------------------------------------------------------- servers

class TenantRouter(harness.LoopbackServer):
    """A Mimir-like front on 127.0.0.1 (thread): routes each request by its
    X-Scope-OrgID header to that tenant's Prometheus; no or an unknown
    tenant -> 401 "no org id" (what Mimir answers). Records (tenant, path)."""

    def __init__(self, upstreams):
        self.upstreams = dict(upstreams)
        self.log = []
        self.lock = threading.Lock()
        super().__init__()

    def handle(self, h, body):
        tenants = h.headers.get_all("X-Scope-OrgID") or []
        with self.lock:
            self.log.append((tenants, h.path))
        if len(tenants) != 1 or tenants[0] not in self.upstreams:
            self.reply(h, 401, b"no org id\n", "text/plain")
            return
        self.reply(h, *self.relay(h, self.upstreams[tenants[0]],
                                  headers={"Accept-Encoding": "identity"}))


# ---------------------------------------------------------------- data

def series_of(cl, keep_cluster_label):
    """[(family, labels tuple, {t: value})] of a generated cluster, the
    cluster label dropped unless keep_cluster_label."""
    out = []
    for fam, _ in gc.DCGM_FAMILIES + gc.KSM_FAMILIES:
        for labels, samples in cl.series[fam].items():
            if not keep_cluster_label:
                labels = tuple(kv for kv in labels if kv[0] != cl.cluster_label)
            out.append((fam, labels, samples))
    return out


def head_of(fam, labels):
    return fam + "{" + ",".join('%s="%s"' % (k, gc.esc(v)) for k, v in labels) + "}"


def write_openmetrics(path, clusters, keep_cluster_label):
    """One OpenMetrics file for promtool: families grouped across clusters,
    each series in time order, # EOF last."""
    n = 0
    helps = dict(gc.DCGM_FAMILIES + gc.KSM_FAMILIES)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for fam, _ in gc.DCGM_FAMILIES + gc.KSM_FAMILIES:
            rows = [s for cl in clusters for s in series_of(cl, keep_cluster_label)
                    if s[0] == fam]
            if not rows:
                continue
            f.write("# HELP %s %s\n# TYPE %s gauge\n" % (fam, helps[fam], fam))
            for _, labels, samples in rows:
                h = head_of(fam, labels)
                for t in sorted(samples):
                    f.write("%s %s %d\n" % (h, gc.fmt_value(samples[t]), t))
                    n += 1
        f.write("# EOF\n")
    return n


def prometheus_text_ms(clusters):
    """Prometheus text exposition with millisecond timestamps (VM import)."""
    buf = io.StringIO()
    for cl in clusters:
        for fam, labels, samples in series_of(cl, True):
            h = head_of(fam, labels)
            for t in sorted(samples):
                buf.write("%s %s %d\n" % (h, gc.fmt_value(samples[t]), t * 1000))
    return buf.getvalue().encode()


def merge_expected(exps):
    """One expected document for several clusters: invoices of a team hold the
    lines of every cluster; fleet lines, summary rows concatenated."""
    base = copy.deepcopy(exps[0])
    minor = base["minor_units"]

    def key(l):
        return (l["cluster"], l["gpu_model"], l["kind"], l["price_valid_from"])

    for section in ("invoices", "teams"):
        merged = {}
        for e in exps:
            for team, inv in e[section].items():
                if team not in merged:
                    merged[team] = copy.deepcopy(inv)
                else:
                    merged[team]["lines"] += copy.deepcopy(inv["lines"])
        for team, m in merged.items():
            m["lines"].sort(key=key)
            m["total"] = gc.units_to_str(sum(gc.to_units(l["amount"], minor)
                                             for l in m["lines"]), minor)
        base[section] = merged
    base["fleet"] = sorted([l for e in exps for l in e["fleet"]], key=key)
    # the price entries either cluster used (one shared table)
    base["prices"] = {pid: pr for e in exps for pid, pr in e.get("prices", {}).items()}
    for what in ("models", "devices"):
        base["summary"][what] = [r for e in exps for r in e["summary"][what]]
    return base


# ---------------------------------------------------------------- checks

dec = it.dec


def invoice_problems(doc, exp):
    """Every team's invoice, every line of every kind, exactly."""
    p = []
    if not isinstance(doc, dict) or doc.get("period") != exp["period"]:
        return ["period %r, expected %r" % (doc.get("period") if isinstance(doc, dict) else doc,
                                            exp["period"])]
    got = it.invoices_by_team(doc)
    for team in sorted(set(got) - set(exp["invoices"]), key=str):
        p.append("unexpected invoice for %r" % team)
    for team, e in sorted(exp["invoices"].items()):
        inv = got.get(team)
        if inv is None:
            p.append("no invoice for %s" % team)
            continue
        p += it.line_order_problems(team, inv.get("lines", []))
        for k in ("invoice_id", "team_name", "cost_center"):
            if inv.get(k) != e[k]:
                p.append("%s %s %r, expected %r" % (team, k, inv.get(k), e[k]))
        gl = {}
        for l in inv.get("lines", []):
            k = (l.get("cluster"), l.get("gpu_model"), l.get("kind"), l.get("price_id"))
            if k in gl:
                p.append("%s: line %s twice" % (team, k))
            gl[k] = l
        el = {(l["cluster"], l["gpu_model"], l["kind"], l["price_id"]): l for l in e["lines"]}
        for k in sorted(set(gl) - set(el)):
            p.append("%s: unexpected line %s (%s MiB.s)" % (team, k, gl[k].get("mib_seconds")))
        for k in sorted(set(el) - set(gl)):
            p.append("%s: missing line %s (%s MiB.s)" % (team, k, el[k]["mib_seconds"]))
        for k in sorted(set(el) & set(gl)):
            g, w = gl[k], el[k]
            for f in ("mib_seconds", "gb_hours", "amount", "pricing_unit", "price_valid_from",
                      "price_valid_to"):
                if g.get(f) != w[f]:
                    p.append("%s %s %s: got %r, expected %r" % (team, k[:3], f, g.get(f), w[f]))
            try:
                if dec(g.get("unit_price")) != dec(w["unit_price"]):
                    p.append("%s %s unit_price %r, expected %s" % (team, k[:3],
                                                                   g.get("unit_price"),
                                                                   w["unit_price"]))
            except Exception:
                p.append("%s %s unit_price %r" % (team, k[:3], g.get("unit_price")))
        if inv.get("total") != e["total"]:
            p.append("%s total %r, expected %r" % (team, inv.get("total"), e["total"]))
    return p


def focus_cluster_problems(text, exp):
    """x_Cluster and Tags.cluster of every row; each (team, cluster, model,
    kind) of the expected invoices has rows, and no other does."""
    p = []
    try:
        rows = [dict(zip(it.FOCUS_COLUMNS, r))
                for r in list(csv.reader(io.StringIO(text, newline="")))[1:] if r]
    except Exception as e:
        return ["CSV does not parse: %s" % e]
    got = set()
    for i, d in enumerate(rows, start=2):
        try:
            tags = json.loads(d.get("Tags") or "{}")
        except ValueError:
            p.append("row %d Tags %r is not JSON" % (i, d.get("Tags")))
            continue
        if not isinstance(tags, dict) or tags.get("gpuledger/cluster") != d.get("x_Cluster"):
            p.append("row %d: Tags %r, x_Cluster %r" % (i, d.get("Tags"), d.get("x_Cluster")))
        if isinstance(tags, dict) and tags.get("gpuledger/team") != d.get("SubAccountId"):
            p.append("row %d: Tags team %r, SubAccountId %r" % (i, tags.get("gpuledger/team"),
                                                             d.get("SubAccountId")))
        got.add((d.get("SubAccountId"), d.get("x_Cluster"), d.get("x_GpuModel"),
                 d.get("x_ChargeKind")))
    want = {(team, l["cluster"], l["gpu_model"], l["kind"])
            for team, inv in exp["invoices"].items() for l in inv["lines"]
            if l["mib_seconds"] != "0"}
    for k in sorted(want - got):
        p.append("no rows for %s" % (k,))
    for k in sorted(got - want, key=str):
        p.append("unexpected rows for %s" % (k,))
    return p


def summary_problems(doc, exp):
    p = []
    if not isinstance(doc, dict):
        return ["summary is not an object"]
    fields = ("capacity", "memory_used", "reserved", "unattributed", "idle", "excess")
    for what, keyf in (("models", lambda m: (m.get("cluster"), m.get("gpu_model"))),
                       ("devices", lambda m: (m.get("cluster"), m.get("uuid"),
                                              m.get("gpu_i_id") or None))):
        got = {keyf(m): m for m in doc.get(what) or []}
        want = {keyf(m): m for m in exp["summary"][what]}
        for k in sorted(set(got) - set(want), key=str):
            p.append("%s: unexpected %s" % (what, k))
        for k in sorted(set(want) - set(got), key=str):
            p.append("%s: missing %s" % (what, k))
        for k in sorted(set(want) & set(got), key=str):
            for f in fields:
                try:
                    ok = dec(got[k].get(f)) == dec(want[k][f])
                except Exception:
                    ok = False
                if not ok:
                    p.append("%s %s %s: got %r, expected %s" % (what, k, f, got[k].get(f),
                                                                 want[k][f]))
    clusters = sorted({m.get("cluster") for m in doc.get("models") or []}, key=str)
    want_cl = sorted({m["cluster"] for m in exp["summary"]["models"]})
    if clusters != want_cl:
        p.append("clusters in the summary %s, expected %s" % (clusters, want_cl))
    return p


def served_problems(base_url, clusters, keep_cluster_label, t_from, t_to, step, extra=""):
    """query_range of every generated family over [t_from, t_to) at the step:
    each served point equals the generated sample at that instant, and no
    point is served where no sample exists (gaps, ends of series)."""
    want = {}
    for cl in clusters:
        for fam, labels, samples in series_of(cl, keep_cluster_label):
            key = (fam, frozenset(labels))
            for t, v in samples.items():
                if t_from <= t < t_to:
                    want.setdefault(key, {})[t] = float(gc.fmt_value(v))
    qs = urllib.parse.urlencode({"query": '{__name__=~"DCGM_FI_.*|kube_.*"}',
                                 "start": str(t_from), "end": str(t_to - step),
                                 "step": str(step)}) + extra
    try:
        doc = harness.http_get_json(base_url + "/api/v1/query_range?" + qs, timeout=60)
    except Exception as e:
        return ["query_range: %s" % e]
    if doc.get("status") != "success":
        return ["query_range: %s" % str(doc)[:300]]
    got = {}
    for r in doc["data"]["result"]:
        m = dict(r["metric"])
        fam = m.pop("__name__", None)
        got[(fam, frozenset(m.items()))] = {int(float(t)): float(v) for t, v in r["values"]}
    p = []
    miss = [k for k in want if k not in got]
    extra_s = [k for k in got if k not in want]
    if miss:
        p.append("%d series not served (e.g. %s)" % (len(miss), dict(miss[0][1]).get("pod",
                                                                                    miss[0][0])))
    if extra_s:
        p.append("%d unexpected series (e.g. %s %s)" % (len(extra_s), extra_s[0][0],
                                                       sorted(extra_s[0][1])[:3]))
    carried, differ = [], []
    for k in set(want) & set(got):
        for t, v in got[k].items():
            if t not in want[k]:
                carried.append((k[0], gc.fmt_time(t)))
            elif want[k][t] != v:
                differ.append((k[0], gc.fmt_time(t), v, want[k][t]))
        for t in want[k]:
            if t not in got[k]:
                differ.append((k[0], gc.fmt_time(t), None, want[k][t]))
    if carried:
        carried.sort()
        p.append("%d points served where no sample exists (lookback carries a value into a "
                 "gap or past a series' end), e.g. %s" % (len(carried), carried[:3]))
    if differ:
        differ.sort(key=str)
        p.append("%d points differ (family, time, served, generated), e.g. %s"
                 % (len(differ), differ[:3]))
    return p


# ---------------------------------------------------------------- the test

class Test(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.servers = []
        self.exp = None
        self.results = {}
        self.proms = {}

    def write_config(self, name, mutate):
        cfg = copy.deepcopy(self.base_config)
        mutate(cfg)
        path = self.path("cfg", name)
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
        return path

    def main(self):
        tap, a = self.tap, self.args
        for d in ("cfg", "db", "out"):
            os.makedirs(self.path(d), exist_ok=True)
        self.bin = os.path.abspath(a.bin)
        if not (os.path.isfile(self.bin) and os.access(self.bin, os.X_OK)):
            tap.fail("engine binary present", "%s is missing or not executable" % a.bin)
            return
        self.engine = harness.Engine(self.bin, self.work, timeout=ENGINE_TIMEOUT)
        # ---- data and expected figures
        t0 = time.time()
        try:
            self.cls = [gc.load_scenario(s) for s in SCENARIOS]
            exps = [cl.expected() for cl in self.cls]
        except Exception as e:
            tap.fail("generator: both cluster scenarios", "%s: %s" % (type(e).__name__, e))
            return
        p = []
        for cl, e in zip(self.cls, exps):
            p += ["%s: %s" % (cl.name, x) for x in gc.self_check(cl, e)]
        names = [cl.cluster_name for cl in self.cls]
        if len(set(names)) != 2 or not all(cl.cluster_emit for cl in self.cls):
            p.append("scenarios must name two clusters and emit the cluster label: %s" % names)
        if len({cl.prices_csv() for cl in self.cls}) != 1:
            p.append("the two scenarios must share one price table")
        if len({(e["period"], e["window"]["from"], e["window"]["to"]) for e in exps}) != 1:
            p.append("the two scenarios must share period and window")
        shared = set(exps[0]["teams"]) & set(exps[1]["teams"])
        if not shared:
            p.append("no team runs in both clusters")
        if not tap.check("generator: two clusters (%s), expected figures self-check, shared "
                         "team(s) %s (%.1fs)" % (", ".join(names), sorted(shared),
                                                 time.time() - t0), p):
            return
        self.exp = merge_expected(exps)
        self.names = names
        with open(self.path("expected-merged.json"), "w") as f:
            json.dump(self.exp, f, indent=1)
        with open(self.path("prices.csv"), "w", newline="") as f:
            f.write(self.cls[0].prices_csv())
        cfg = self.cls[0].run_config()
        cfg.pop("prometheus", None)
        cfg["prices"]["file"] = self.path("prices.csv")
        qdir = os.path.join(REPO, "queries")
        if os.path.isdir(qdir):
            cfg.setdefault("collection", {})["queries_dir"] = qdir
        cfg["cluster"] = {"label": self.cls[0].cluster_label}
        self.base_config = cfg
        self.wf, self.wt = self.exp["window"]["from"], self.exp["window"]["to"]

        # ---- backends
        have_prom = all(shutil.which(t) for t in ("prometheus", "promtool"))
        vm_bin = shutil.which("victoria-metrics") or shutil.which("victoriametrics") or \
            shutil.which("victoria-metrics-prod")
        if not have_prom:
            tap.skip("two Prometheus servers / one shared Prometheus",
                     "prometheus or promtool not on PATH")
        else:
            self.start_prometheus()
        if not vm_bin:
            tap.skip("VictoriaMetrics single node", "victoria-metrics not on PATH "
                     "(Debian package victoria-metrics)")
        else:
            self.vm_bin = vm_bin
        if have_prom and self.proms:
            self.setup_a()
            self.setup_b()
            self.setup_d()
            self.down_cluster()
        if vm_bin:
            self.setup_c()

    # ---- Prometheus: backfill three TSDBs, serve them
    def start_prometheus(self):
        tap = self.tap
        self.proms = {}
        t0 = time.time()
        jobs = {}
        files = {"eu": ([self.cls[0]], False), "us": ([self.cls[1]], False),
                 "both": (self.cls, True)}
        for name, (cls, keep) in files.items():
            om = self.path("%s.om" % name)
            write_openmetrics(om, cls, keep)
            jobs[name] = harness.backfill_start(om, self.path("tsdb-" + name), self.work)
        bad = []
        for name, j in jobs.items():
            rc, out = harness.backfill_wait(j)
            if rc != 0:
                bad.append("%s: %s" % (name, tail(out, 300)))
        if not tap.check("promtool backfills eu-1 and us-1 (no cluster label) and both "
                         "(cluster label) (%.1fs)" % (time.time() - t0), bad):
            return
        specs = []
        for name in files:
            srv = harness.Server("prometheus-" + name, self.work)
            tsdb = self.path("tsdb-" + name)
            specs.append((srv, lambda port, tsdb=tsdb: harness.prometheus_argv(self.work, tsdb,
                                                                               port),
                          "/-/ready"))
            self.servers.append(srv)
        t0 = time.time()
        errors = start_all(specs)
        if not tap.check("three Prometheus servers ready (%.1fs)" % (time.time() - t0),
                         sorted(errors.values())):
            return
        self.proms = {name: srv for (srv, _, _), name in zip(specs, files)}
        w0, w1 = gc.parse_time(self.wf), gc.parse_time(self.wt)
        step = self.exp["step_seconds"]
        for name, cls, keep in (("eu", [self.cls[0]], False), ("us", [self.cls[1]], False),
                                ("both", self.cls, True)):
            tap.check("prometheus-%s serves the generated samples at every step instant" % name,
                      served_problems(self.proms[name].url(), cls, keep, w0, w1, step))

    def outputs(self, label, cfg, db, collect_args=None):
        """collect, invoice, export, summary; returns dict or None."""
        res = {}
        t0 = time.time()
        for args in collect_args or [()]:
            rc, _, err = self.engine.run(cfg, db, "collect", "--from", self.wf, "--to", self.wt,
                                     *args)
            if rc != 0:
                self.tap.fail("%s: collect %s" % (label, " ".join(args)),
                              "exit %s: %s" % (rc, tail(err)))
                return None
        res["collect_s"] = time.time() - t0
        per = self.exp["period"]
        rc, out, err = self.engine.run(cfg, db, "invoice", "--period", per, "--format", "json")
        try:
            res["doc"] = json.loads(out) if rc == 0 else None
        except ValueError:
            res["doc"] = None
        if res["doc"] is None:
            self.tap.fail("%s: invoice --format json" % label, "exit %s: %s %s" % (
                rc, tail(err, 300), tail(out, 200)))
            return None
        csvp = self.path("out", label.replace(" ", "-") + ".csv")
        rc, out, err = self.engine.run(cfg, db, "export", "--period", per, "--out", csvp)
        res["csv"] = open(csvp, newline="").read() if rc == 0 and os.path.isfile(csvp) else None
        if res["csv"] is None:
            self.tap.fail("%s: export" % label, "exit %s: %s" % (rc, tail(err, 300)))
        rc, out, err = self.engine.run(cfg, db, "summary", "--period", per, "--format", "json")
        try:
            res["summary"] = json.loads(out) if rc == 0 else None
        except ValueError:
            res["summary"] = None
        if res["summary"] is None:
            self.tap.fail("%s: summary --format json" % label,
                          "exit %s: %s" % (rc, tail(err, 300)))
        with open(self.path("out", label.replace(" ", "-") + ".json"), "w") as f:
            json.dump(res["doc"], f, indent=1)
        return res

    def compare(self, label, res, full_focus=False, same_as=None):
        tap, exp = self.tap, self.exp
        tap.check("%s: every team's invoice (memory, idle and overhead lines of both clusters) "
                  "equals the generator's figures" % label, invoice_problems(res["doc"], exp))
        if res.get("csv") is not None:
            if full_focus:
                it.check_focus(tap, label, res["csv"], res["doc"], exp)
            tap.check("%s: FOCUS x_Cluster and Tags.cluster on every row, rows for each "
                      "(team, cluster, model, kind)" % label,
                      focus_cluster_problems(res["csv"], exp))
            if same_as is not None and same_as.get("csv") is not None:
                p = []
                if sorted(res["csv"].splitlines()) != sorted(same_as["csv"].splitlines()):
                    a = set(res["csv"].splitlines())
                    b = set(same_as["csv"].splitlines())
                    p.append("FOCUS CSV differs from two-servers' (%d rows only here, %d only "
                             "there; e.g. %s)" % (len(a - b), len(b - a),
                                                  tail(sorted(a - b)[0], 200) if a - b else ""))
                tap.check("%s: FOCUS export identical to the two-servers run" % label, p)
        if res.get("summary") is not None:
            tap.check("%s: summary lists both clusters, per model and device as expected"
                      % label, summary_problems(res["summary"], exp))

    # ---- (a) two Prometheus servers, one per cluster
    def setup_a(self):
        urls = {self.names[0]: self.proms["eu"].url(), self.names[1]: self.proms["us"].url()}

        def mutate(c):
            c["clusters"] = [{"name": n, "prometheus": {"url": u, "timeout_seconds": 30,
                                                        "retries": 1}}
                             for n, u in urls.items()]
        cfg = self.write_config("two-servers.json", mutate)
        res = self.outputs("two servers", cfg, self.path("db", "a.db"))
        if res is None:
            return
        self.tap.ok("two servers: collect both clusters from their own Prometheus (%.1fs)"
                    % res["collect_s"])
        self.compare("two servers", res, full_focus=True)
        self.results["a"] = res

    # ---- (b) one Prometheus, both clusters, selectors
    def selector_config(self, name, url):
        lab = self.cls[0].cluster_label

        def mutate(c):
            c["prometheus"] = {"url": url, "timeout_seconds": 30, "retries": 1}
            c["clusters"] = [{"name": n, "selector": '%s="%s"' % (lab, n)} for n in self.names]
        return self.write_config(name, mutate)

    def setup_b(self):
        tap = self.tap
        url = self.proms["both"].url()
        cfg = self.selector_config("shared-selectors.json", url)
        res = self.outputs("one server with selectors", cfg, self.path("db", "b.db"))
        if res is not None:
            tap.ok("one server with selectors: collect both clusters from a shared Prometheus "
                   "(%.1fs)" % res["collect_s"])
            self.compare("one server with selectors", res, same_as=self.results.get("a"))
            a = self.results.get("a")
            if a is not None:
                tap.check("one server with selectors: invoice JSON identical to the two-servers "
                          "run", [] if a["doc"] == res["doc"] else ["invoice JSON differs"])
        # cluster by cluster into one database
        res2 = self.outputs("collect --cluster one at a time", cfg, self.path("db", "b2.db"),
                            collect_args=[("--cluster", n) for n in self.names])
        if res2 is not None:
            tap.check("collect --cluster %s then --cluster %s into one database: same invoices"
                      % tuple(self.names), invoice_problems(res2["doc"], self.exp))
        # the single-cluster config: the series' cluster label names the cluster
        def mutate(c):
            c["prometheus"] = {"url": url, "timeout_seconds": 30, "retries": 1}
            c["cluster"] = {"name": "default", "label": self.cls[0].cluster_label}
        cfg3 = self.write_config("shared-single.json", mutate)
        res3 = self.outputs("single-cluster config over labelled data", cfg3,
                            self.path("db", "b3.db"))
        if res3 is not None:
            p = invoice_problems(res3["doc"], self.exp)
            if res3.get("summary") is not None:
                p += summary_problems(res3["summary"], self.exp)
            tap.check("single-cluster config (no \"clusters\") over one Prometheus holding both: "
                      "the series' cluster label names the cluster in invoices and summary", p)

    # ---- (d) one Mimir-like endpoint, a tenant per cluster
    def setup_d(self):
        tenants = {"tenant-" + self.names[0]: self.proms["eu"].port,
                   "tenant-" + self.names[1]: self.proms["us"].port}
        router = TenantRouter(tenants)
        try:
            def mutate(c):
                c["clusters"] = [{"name": n, "prometheus": {
                    "url": router.url(), "headers": {"X-Scope-OrgID": "tenant-" + n},
                    "timeout_seconds": 30, "retries": 1}} for n in self.names]
            cfg = self.write_config("tenants.json", mutate)
            label = "one endpoint, a tenant per cluster"
            res = self.outputs(label, cfg, self.path("db", "d.db"))
            if res is None:
                return
            self.compare(label, res, same_as=self.results.get("a"))
            p = []
            seen = {}
            for ts, path in router.log:
                seen[tuple(ts)] = seen.get(tuple(ts), 0) + 1
            if set(seen) != {(t,) for t in tenants}:
                p.append("tenant headers seen %s, expected one of %s on each request"
                         % (seen, sorted(tenants)))
            self.tap.check("%s: every request carries exactly one X-Scope-OrgID, each cluster's "
                           "own (%s)" % (label, ", ".join("%s x%d" % (k[0] if k else None, v)
                                                          for k, v in sorted(seen.items()))), p)
        finally:
            router.close()

    # ---- a cluster whose Prometheus is down
    def down_cluster(self):
        """The first cluster's Prometheus is down, the second's is up.
        collect: fails (exit 4) naming the dead URL. run (the CronJob): exit 5
        (partial failure), the up cluster stored and billed; the next run, with
        the first cluster back, completes with the full expected totals."""
        tap = self.tap
        dead = "http://127.0.0.1:%d" % harness.free_port()
        up = self.names[1]

        def clusters(first_url):
            def mutate(c):
                c["clusters"] = [{"name": n, "prometheus": {"url": u, "timeout_seconds": 5,
                                                            "retries": 0}}
                                 for n, u in ((self.names[0], first_url),
                                              (up, self.proms["us"].url()))]
                c["run"] = {"start": self.wf, "delay_minutes": 0, "repull_hours": 2,
                            "out_dir": self.path("run-out")}
            return mutate
        cfg = self.write_config("one-down.json", clusters(dead))
        db = self.path("db", "down.db")
        rc, out, err = self.engine.run(cfg, db, "collect", "--from", self.wf, "--to", self.wt)
        p = [] if rc == 5 else ["exit %s, expected 5 (partial: the other cluster collected)" % rc]
        if dead not in err:
            p.append("stderr does not name %s: %s" % (dead, tail(err, 300)))
        tap.check("collect with cluster %s's Prometheus down: exit 5 naming its URL, the other "
                  "cluster still collected" % self.names[0], p)
        doc, q = self.invoice_doc(cfg, db)
        stored = sorted({l.get("cluster") for inv in (doc or {}).get("invoices", [])
                         for l in inv.get("lines", [])})
        if doc is not None and stored != [self.names[1]]:
            q.append("the database holds lines of clusters %s, expected only %s"
                     % (stored, [self.names[1]]))
        tap.check("invoice after that failed collect (over whatever it stored, possibly "
                  "nothing): exit 0 and valid JSON", q)

        # run, the CronJob: partial failure
        db = self.path("db", "run-down.db")
        rc, out, err = self.engine.run(cfg, db, "run", "--now", self.wt)
        p = [] if rc == 5 else ["exit %s, expected 5 (partial failure)" % rc]
        if dead not in err:
            p.append("stderr does not name %s: %s" % (dead, tail(err, 300)))
        doc, q = self.invoice_doc(cfg, db)
        p += q
        want = {t: {(l["gpu_model"], l["kind"], l["price_id"]): l["mib_seconds"]
                    for l in inv["lines"] if l["cluster"] == up}
                for t, inv in self.exp["invoices"].items()}
        want = {t: w for t, w in want.items() if w}
        got = {}
        for inv in (doc or {}).get("invoices", []):
            for l in inv.get("lines", []):
                if l.get("cluster") != up:
                    p.append("%s has a %s line of cluster %s" % (inv.get("team"), l.get("kind"),
                                                                  l.get("cluster")))
                    continue
                got.setdefault(inv.get("team"), {})[
                    (l.get("gpu_model"), l.get("kind"), l.get("price_id"))] = l.get("mib_seconds")
        for t in sorted(set(want) | set(got)):
            if got.get(t) != want.get(t):
                p.append("%s's %s lines %s, expected %s" % (t, up, got.get(t), want.get(t)))
        tap.check("run with cluster %s's Prometheus down: exit 5 (partial failure) naming its "
                  "URL; %s is collected and billed as expected" % (self.names[0], up), p)
        # the next run, the cluster back: everything
        cfg2 = self.write_config("one-back.json", clusters(self.proms["eu"].url()))
        rc, out, err = self.engine.run(cfg2, db, "run", "--now", self.wt)
        p = [] if rc == 0 else ["exit %s: %s" % (rc, tail(err, 300))]
        doc, q = self.invoice_doc(cfg2, db)
        p += q + (invoice_problems(doc, self.exp) if doc is not None else [])
        tap.check("the next run with %s back: exit 0, every invoice of both clusters equals the "
                  "generator's figures (%s not counted twice)" % (self.names[0], up), p)

    def invoice_doc(self, cfg, db):
        rc, out, err = self.engine.run(cfg, db, "invoice", "--period", self.exp["period"],
                                   "--format", "json")
        try:
            doc = json.loads(out)
            if rc == 0 and isinstance(doc, dict) and isinstance(doc.get("invoices"), list):
                return doc, []
        except ValueError:
            pass
        return None, ["invoice exit %s: %s %s" % (rc, tail(out, 100), tail(err, 300))]

    # ---- (c) VictoriaMetrics
    def setup_c(self):
        tap = self.tap
        data = self.path("vm-data")
        shutil.rmtree(data, ignore_errors=True)
        srv = harness.Server("victoria-metrics", self.work)
        self.servers.append(srv)
        t0 = time.time()
        errors = start_all([(srv, lambda port: [self.vm_bin, "-storageDataPath=" + data,
                                                "-httpListenAddr=127.0.0.1:%d" % port] +
                             VM_FLAGS, "/health")])
        if not tap.check("victoria-metrics ready with %s (%.1fs)" % (" ".join(VM_FLAGS),
                                                                  time.time() - t0),
                         sorted(errors.values())):
            return
        body = prometheus_text_ms(self.cls)
        nlines = body.count(b"\n")
        p = []
        try:
            req = urllib.request.Request(srv.url() + "/api/v1/import/prometheus", data=body,
                                         method="POST")
            with OPENER.open(req, timeout=60) as r:
                if r.status not in (200, 204):
                    p.append("import answered %s" % r.status)
            with OPENER.open(srv.url() + "/internal/force_flush", timeout=60) as r:
                if r.status != 200:
                    p.append("force_flush answered %s" % r.status)
        except Exception as e:
            p.append("import: %s" % e)
        # the import is asynchronous: wait until every series is searchable
        nseries = sum(len(fam) for cl in self.cls for fam in cl.series.values())
        deadline = time.time() + 15
        while not p and time.time() < deadline:
            try:
                doc = harness.http_get_json(srv.url() + "/api/v1/series?" + urllib.parse.urlencode(
                    {"match[]": '{__name__=~"DCGM_FI_.*|kube_.*"}',
                     "start": str(self.cls[0].start), "end": str(self.cls[0].end)}))
                if len(doc.get("data") or []) >= nseries:
                    break
            except Exception:
                pass
            time.sleep(0.2)
        if not tap.check("victoria-metrics imports %d samples of %d series (Prometheus text, "
                         "ms timestamps) and flushes" % (nlines, nseries), p):
            return
        w0, w1 = gc.parse_time(self.wf), gc.parse_time(self.wt)
        step = self.exp["step_seconds"]
        # all the data (an hour either side of the window): the scrape gap and
        # the instants after a series ends must stay empty
        tap.check("victoria-metrics (-search.maxStalenessInterval=59s) serves every generated "
                  "sample at each 60 s step instant, nothing in gaps or after a series ends",
                  served_problems(srv.url(), self.cls, True, self.cls[0].start,
                                  self.cls[0].end, step))
        cfg = self.selector_config("vm-selectors.json", srv.url())
        res = self.outputs("victoria-metrics", cfg, self.path("db", "c.db"))
        if res is None:
            return
        tap.ok("victoria-metrics: collect both clusters through its Prometheus API (%.1fs)"
               % res["collect_s"])
        self.compare("victoria-metrics", res, same_as=self.results.get("a"))
        at = gc.fmt_time(gc.parse_time(self.wt) - 60)
        rc, out, err = self.engine.run(cfg, self.path("db", "c.db"), "check", "--at", at)
        tap.check("victoria-metrics: check --at %s (instant queries) exits 0" % at,
                  [] if rc == 0 else ["exit %s: %s %s" % (rc, tail(out, 300), tail(err, 300))])
        a = self.results.get("a")
        if a is not None:
            tap.check("victoria-metrics: invoice JSON identical to the two-Prometheus run",
                      [] if a["doc"] == res["doc"] else ["invoice JSON differs"])
        self.vm_default_probe()

    def vm_default_probe(self):
        """Documents (as comments) what VictoriaMetrics serves without
        -search.maxStalenessInterval: not a check of the engine."""
        data = self.path("vm-data-default")
        shutil.rmtree(data, ignore_errors=True)
        srv = harness.Server("victoria-metrics-default", self.work)
        self.servers.append(srv)
        flags = [f for f in VM_FLAGS if "StalenessInterval" not in f]
        errors = start_all([(srv, lambda port: [self.vm_bin, "-storageDataPath=" + data,
                                                "-httpListenAddr=127.0.0.1:%d" % port] + flags,
                             "/health")])
        if errors:
            self.tap.note("victoria-metrics without -search.maxStalenessInterval did not start")
            return
        try:
            req = urllib.request.Request(srv.url() + "/api/v1/import/prometheus",
                                         data=prometheus_text_ms(self.cls), method="POST")
            OPENER.open(req, timeout=60).close()
            OPENER.open(srv.url() + "/internal/force_flush", timeout=60).close()
            time.sleep(0.5)
            p = served_problems(srv.url(), self.cls, True, self.cls[0].start, self.cls[0].end,
                                self.exp["step_seconds"])
            self.tap.note("victoria-metrics with only %s (its default lookback): %s"
                          % (" ".join(flags), "; ".join(p) or "step values equal the samples"))
            cfg = self.selector_config("vm-default.json", srv.url())
            rc, out, err = self.engine.run(cfg, self.path("db", "vm-default.db"), "collect",
                                       "--from", self.wf, "--to", self.wt)
            if rc == 0:
                rc, out, err = self.engine.run(cfg, self.path("db", "vm-default.db"), "invoice",
                                           "--period", self.exp["period"], "--format", "json")
            if rc == 0:
                q = invoice_problems(json.loads(out), self.exp)
                self.tap.note("  and the engine's invoices over it: %s" % (
                    "; ".join(q[:3]) or "as expected"))
        except Exception as e:
            self.tap.note("victoria-metrics default-lookback probe: %s" % e)
        finally:
            srv.stop()

    def cleanup(self):
        for s in self.servers:
            s.stop()


def main():
    ap = harness.arguments(__doc__)
    return harness.run_driver(Test, ap.parse_args(), harness.Tap(), "backends test",
                              "gpuledger-backends-")


if __name__ == "__main__":
    sys.exit(main())
