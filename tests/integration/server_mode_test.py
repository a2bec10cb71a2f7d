#!/usr/bin/env python3
"""server_mode_test.py - collection.mode "server" equals "raw".

Every chosen scenario of tests/integration/scenarios (the long ones with
--all) is generated, backfilled into a real Prometheus and collected twice,
with collection.mode "raw" and "server". Checks per (scenario, config): the
usage tables are equal row by row (hour, cluster, namespace, pod, device
identity, team, kind, MiB·s, estimated, first/last seen), the device tables
and the stored per-query counts too, the skipped samples are reported alike
(the "skipped samples query= chunk= reason= count=" lines, the summary's
bad_samples, collected_hour.bad_samples, some of them described), and the
invoices (JSON) are equal; busy-bound's skips (busy-bound.post.py) must be
those it wrote, in both modes; the
server mode's log lines say how many queries and series-hours came from the
backend's hourly figures, and the suite fails unless the server path carried
most series-hours of at least one scenario (so the comparison proves
something). On an engine without collection.mode every collect in server
mode fails as a config error.

VictoriaMetrics: each TSDB's samples are also imported
into a VictoriaMetrics 1.79 (VM_FLAGS, the flags raw mode needs there) and
every scenario/config collected from it in both modes: server equals raw
on VictoriaMetrics and raw on Prometheus row by row, and takes the same
device-hours from the sums as on Prometheus (which fails when the engine
sends VM `changes`: its changes() counts from before each hour's window).
Plus the reproduction of that difference (instant queries, no data), and a
Prometheus behind a front that hides its version: refused in server mode.
"""

import calendar
import decimal
import json
import re
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import harness  # noqa: E402
import ledger_db  # noqa: E402
from harness import tail  # noqa: E402

SCENARIOS = os.path.join(HERE, "scenarios")
# scenarios of server mode's own (hosts and series raw mode reads in ways
# the hourly sums cannot): NAME.json, and NAME.post.py to rewrite the
# generated data.om before the backfill
OWN = os.path.join(HERE, "scenarios-server")
# scenarios whose time range overlaps another's go to a second TSDB
SECOND = {"cluster-us", "hostname-mixed", "pod-twice", "busy-bound"}
# the largest data sets (days to a month of samples), left to --all so that
# ./tests/run.sh stays fast; sharing, with its eight configs, stays in
LONG = {"shared", "run-month"}
# what ./tests/run.sh collects (under a minute); --all takes every scenario
DEFAULT = {"fleet", "dra", "dra-process", "dra-plain", "hami", "cluster-eu", "hostname-mixed",
           "pod-twice", "busy-bound"}
# scenarios whose per-device summary rows must add up under every run
# (capacity + excess = memory used + reserved-unused billed + reserved +
# unattributed + idle, in exact decimals)
ADDS_UP = ("dra", "hami")
# dra-plain: 5 GPUs x 4 hours, every claim one pod's for whole hours (the
# harness's 59 s lookback ends batch-0's series at 03:00): all 20 from the
# hourly sums
DRA_PLAIN_HOURS = (20, 0)
# busy-bound.post.py's skipped samples, as raw mode must report them:
# (query, chunk, reason) -> count
BUSY_BOUND_SKIPS = {("gr_engine_active", "2026-11-05T00:00:00Z", "out_of_bounds"): 60,
                    ("gr_engine_active", "2026-11-05T00:00:00Z", "negative"): 1,
                    ("gpu_util", "2026-11-05T00:00:00Z", "out_of_bounds"): 60}
SKIP_LINE = re.compile(r"skipped samples query=(\S+) chunk=(\S+) reason=(\S+) count=(\d+)")
# bench/make_scenario.py's fleet (its own TSDB), where most hosts are plain
PLAIN = "bench-6h"
# VictoriaMetrics as the backend: what makes its raw query_range serve the
# samples as Prometheus does (backends_test.py's VM_FLAGS)
VM_FLAGS = ["-retentionPeriod=100y", "-search.latencyOffset=0s",
            "-search.maxStalenessInterval=59s"]
OPENER = harness.NO_PROXY_OPENER


def tsdb_of(n):
    return "c" if n == PLAIN else "b" if n in SECOND else "a"



def om_to_vm(om, out):
    """OpenMetrics (seconds) -> Prometheus text with millisecond timestamps
    (what /api/v1/import/prometheus reads); returns (samples, first, last)."""
    n, lo, hi = 0, None, None
    with open(om, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as g:
        for line in f:
            if line.startswith("#"):
                continue
            head, value, ts = line.rsplit(" ", 2)
            t = int(ts)
            lo = t if lo is None or t < lo else lo
            hi = t if hi is None or t > hi else hi
            g.write("%s %s %d\n" % (head, value, t * 1000))
            n += 1
    return n, lo, hi


def vm_import(url, path, piece=8 << 20):
    """POSTs path to url's /api/v1/import/prometheus in pieces of whole lines."""
    with open(path, "rb") as f:
        while True:
            body = f.read(piece)
            if not body:
                break
            body += f.readline()
            req = urllib.request.Request(url + "/api/v1/import/prometheus", data=body,
                                         method="POST")
            with OPENER.open(req, timeout=120) as r:
                if r.status not in (200, 204):
                    raise RuntimeError("import answered %s" % r.status)
    with OPENER.open(url + "/internal/force_flush", timeout=60) as r:
        r.read()


def vm_samples(url, lo, hi):
    """The samples VM serves between lo and hi (seconds, both included)."""
    doc = harness.http_get_json(url + "/api/v1/query?" + urllib.parse.urlencode({
        "query": 'sum(count_over_time({__name__=~".+"}[%ds]))' % (hi - lo + 1),
        "time": str(hi), "nocache": "1"}))
    r = doc["data"]["result"]
    return int(float(r[0]["value"][1])) if r else 0


class Versionless(harness.LoopbackServer):
    """A front on 127.0.0.1 for the backend on upstream port: buildinfo
    answered with no version (as VictoriaMetrics before 1.96 does), or with
    `version` (VictoriaMetrics from 1.96 answers "2.24.0"), the rest passed
    on. Records the paths asked."""

    def __init__(self, upstream, version=None, refuse=None):
        self.upstream = upstream
        self.version = version
        self.refuse = refuse  # a query text answered 400 (as Prometheus would)
        self.paths = []
        super().__init__(post=True)

    def handle(self, h, body):
        self.paths.append(h.path)
        if h.path.startswith("/api/v1/status/buildinfo"):
            data = {"version": self.version} if self.version else {}
            self.reply(h, 200, json.dumps({"status": "success", "data": data}).encode())
            return
        asked = urllib.parse.unquote_plus(h.path + "&" + (body or b"").decode(errors="replace"))
        if self.refuse and self.refuse in asked:
            self.reply(h, 400, json.dumps({"status": "error", "errorType": "bad_data",
                                           "error": "unknown function"}).encode())
            return
        hdr = {"Accept-Encoding": "identity"}
        if h.command == "POST":
            hdr["Content-Type"] = h.headers.get("Content-Type", "")
        self.reply(h, *self.relay(h, self.upstream, body, hdr))


def usage_rows(db):
    return (sorted(ledger_db.usage_by_device(db, device_cluster=True)),
            sorted(ledger_db.devices(db)), sorted(ledger_db.query_counts(db)))


def skip_counters(err, db):
    """What a collect said of the samples it skipped: the per-reason lines
    {(query, chunk, reason): count}, the summary's bad_samples, the stored
    collected_hour.bad_samples by hour, and the number of described
    samples (lines "skipped sample ... <description>")."""
    lines = {}
    for m in SKIP_LINE.finditer(err):
        k = m.group(1, 2, 3)
        lines[k] = lines.get(k, 0) + int(m.group(4))
    summary = [int(x) for x in re.findall(r"collected cluster=\S+ .* bad_samples=(\d+)", err)]
    described = len([ln for ln in err.splitlines()
                     if re.search(r"skipped sample query=\S+ chunk=\S+ \S", ln)])
    hours = ledger_db.bad_sample_hours(db)
    return {"lines": lines, "summary": summary, "hours": hours, "described": described}


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
        self.vms = {}
        self.hours = {}

    def main(self):
        tap = self.tap
        self.engine = harness.Engine(os.path.abspath(self.args.bin), self.work)
        dirs = {f[:-5]: d for d in (SCENARIOS, OWN) for f in os.listdir(d) if f.endswith(".json")}
        names = sorted(dirs)
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
        paths = {n: os.path.join(dirs[n], n + ".json") for n in names}
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
        for n in list(gens):
            post = os.path.join(OWN, n + ".post.py")
            if os.path.exists(post):
                r = subprocess.run([sys.executable, post, self.path("gen-" + n)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                if r.returncode != 0:
                    tap.fail("%s: %s" % (n, os.path.basename(post)),
                             tail(r.stdout.decode(errors="replace")))
                    gens.remove(n)
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
        tap.setup("%d scenarios generated and backfilled (%.1fs)" % (len(gens), time.time() - t0))
        for which in ("a", "b", "c"):
            if not any(tsdb_of(n) == which for n in gens) or self.args.backend == "victoria":
                continue
            prom = harness.Prometheus(self.path("prom-" + which), self.path("tsdb-" + which))
            os.makedirs(prom.work, exist_ok=True)
            prom.start()
            self.proms[which] = prom
        self.vms = {}
        self.vm_flags = VM_FLAGS if self.args.vm_flags is None else self.args.vm_flags.split()
        if self.args.backend in ("victoria", "both"):
            self.start_victoria(gens)
        self.shares = {}
        for n in gens:
            self.scenario(n)
        if self.args.backend != "victoria":
            share = self.shares.get("prometheus:" + PLAIN + "/base", 0.0)
            tap.check("%s: the hourly sums carried most device-hours (%.0f %%)"
                      % (PLAIN, 100 * share),
                      [] if share > 0.5 else ["most device-hours were fetched raw"])
        if self.vms:
            share = self.shares.get("victoria:" + PLAIN + "/base", 0.0)
            tap.check("%s: VictoriaMetrics: the hourly sums carried most device-hours (%.0f %%)"
                      % (PLAIN, 100 * share),
                      [] if share > 0.5 else ["most device-hours were fetched raw"])
        if "dra-plain" in gens and self.proms.get(tsdb_of("dra-plain")):
            got = self.hours.get("prometheus:dra-plain/base")
            self.tap.check("dra-plain: the DRA nodes (one pod per claimed whole GPU) come from the "
                           "hourly sums: %s device-hours from the sums and raw, expected %s"
                           % (got, DRA_PLAIN_HOURS),
                           [] if got == DRA_PLAIN_HOURS else ["got %s" % (got,)])
            self.claims_check()
        if "hami" in gens and self.proms.get(tsdb_of("hami")):
            self.device_query()
        if "fleet" in gens and self.proms.get(tsdb_of("fleet")):
            self.short_step()
        self.changes_semantics()
        self.versionless()
        self.versioned_vm()
        self.disguised_vm()

    def short_step(self):
        """Below a 4 s step an hour has 1000 steps or more, and the hourly
        figure count + 1000 x changes is ambiguous (1 s: 2600 steps with one
        change reads as 3600 and none): server mode then takes nothing from
        the hourly figures, label queries included, and equals raw."""
        gen = self.path("gen-fleet")
        with open(os.path.join(gen, "expected.json")) as f:
            exp = json.load(f)
        wf = exp["window"]["from"]
        t0 = calendar.timegm(time.strptime(wf, "%Y-%m-%dT%H:%M:%SZ"))
        exp = dict(exp, window={"from": wf, "to": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + 3600))})
        with open(os.path.join(gen, "config.json")) as f:
            cfg = json.load(f)
        cfg.setdefault("collection", {}).update(step_seconds=2, chunk_hours=1)
        with open(os.path.join(gen, "config-step2.json"), "w") as f:
            json.dump(cfg, f)
        url = self.proms[tsdb_of("fleet")].url()
        res = {m: self.collect("fleet", "step2", gen, "config-step2.json", exp, "prometheus",
                               url, m) for m in ("raw", "server")}
        p = self.compare(res["raw"], res["server"], "raw", "server")
        log = self.last_server_log
        m = re.search(r"label_queries_server=(\d+)", log)
        if not m or int(m.group(1)) != 0:
            p.append("label queries rebuilt from the hourly figures at a 2 s step: %s"
                     % (m.group(0) if m else "no server mode log line"))
        self.tap.check("fleet at a 2 s step (1800 steps an hour): server mode takes no label "
                       "query from the hourly figures and equals raw", p)

    def start_victoria(self, gens):
        """One VictoriaMetrics per TSDB, each scenario's samples imported."""
        tap = self.tap
        vm = shutil.which("victoria-metrics") or shutil.which("victoria-metrics-prod")
        if not vm:
            tap.skip("VictoriaMetrics backend", "victoria-metrics not on PATH")
            return
        for which in ("a", "b", "c"):
            mine = [n for n in gens if tsdb_of(n) == which]
            if not mine:
                continue
            srv = harness.Server("victoria-metrics-" + which, self.work)
            data = self.path("vm-data-" + which)
            errors = harness.start_all([(srv, lambda port: [
                vm, "-storageDataPath=" + data, "-httpListenAddr=127.0.0.1:%d" % port] +
                self.vm_flags, "/health")])
            if errors:
                tap.fail("victoria-metrics %s starts" % which, sorted(errors.values()))
                continue
            self.vms[which] = srv
            t0 = time.time()
            total, lo, hi, p = 0, None, None, []
            try:
                for n in mine:
                    txt = self.path("vm-%s.txt" % n)
                    k, a, b = om_to_vm(os.path.join(self.path("gen-" + n), "data.om"), txt)
                    total += k
                    lo = a if lo is None or a < lo else lo
                    hi = b if hi is None or b > hi else hi
                    vm_import(srv.url(), txt)
                    os.remove(txt)
                # the import is asynchronous: wait until every sample is served
                deadline, got = time.time() + 60, -1
                while time.time() < deadline:
                    got = vm_samples(srv.url(), lo, hi)
                    if got >= total:
                        break
                    time.sleep(0.5)
                if got != total:
                    p.append("VM serves %d samples of the %d imported" % (got, total))
            except Exception as e:
                p.append("import: %s" % e)
            if not tap.check("victoria-metrics %s (%s): imported %d samples of %s (%.1fs)" % (
                    which, " ".join(self.vm_flags), total, ", ".join(mine), time.time() - t0), p):
                srv.stop()
                del self.vms[which]

    def collect(self, n, run, gen, cf, exp, backend, url, mode):
        """(usage, devices, counts, invoice) of one collect, or why not."""
        wf, wt = exp["window"]["from"], exp["window"]["to"]
        with open(os.path.join(gen, cf)) as f:
            cfg = json.load(f)
        cfg["prometheus"]["url"] = url
        cfg["prices"]["file"] = os.path.join(gen, "prices.csv")
        cfg.setdefault("collection", {})["mode"] = mode
        tag = "%s-%s-%s-%s" % (n, run, backend, mode)
        path = self.path("cfg", tag + ".json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(cfg, f, indent=1)
        db = self.path("db", tag + ".db")
        os.makedirs(os.path.dirname(db), exist_ok=True)
        rc, out, err = self.engine.run(path, db, "collect", "--from", wf, "--to", wt,
                                       timeout=300)
        if rc != 0:
            return "collect exit %s: %s" % (rc, tail(err))
        if mode == "server":
            self.last_server_log = err
            self.count_log(backend, n, run, err)
        skips = skip_counters(err, db)
        rc, out, err = self.engine.run(path, db, "invoice", "--period", exp["period"],
                                       "--format", "json")
        if rc != 0:
            return "invoice exit %s: %s" % (rc, tail(err))
        return usage_rows(db) + (out, skips)

    def compare(self, a, b, na, nb):
        bad = ["%s: %s" % (k, r) for k, r in ((na, a), (nb, b)) if isinstance(r, str)]
        if bad:
            return bad
        (ua, da, ca, ia, sa), (ub, dbv, cb, ib, sb) = a, b
        bad = diff(ua, ub) + ["devices: " + p for p in diff(da, dbv)] + \
            ["query counts: " + p for p in diff(ca, cb)]
        if ia != ib:
            bad.append("the invoices differ")
        if not ua:
            bad.append("no usage rows at all")
        # the skipped samples: the same counts by query, chunk and reason,
        # the same bad_samples, each count followed by described samples
        for k, what in (("lines", "skipped samples by query, chunk and reason"),
                        ("summary", "the collect summary's bad_samples"),
                        ("hours", "collected_hour.bad_samples")):
            if sa[k] != sb[k]:
                bad.append("%s: %s %s, %s %s" % (what, na, sa[k], nb, sb[k]))
        for name, sk in ((na, sa), (nb, sb)):
            if sk["lines"] and not sk["described"]:
                bad.append("%s: skipped samples counted but none described" % name)
        return bad

    def scenario(self, n):
        tap = self.tap
        gen = self.path("gen-" + n)
        configs = sorted(f for f in os.listdir(gen) if f.startswith("config") and
                         f.endswith(".json"))
        prom, vm = self.proms.get(tsdb_of(n)), self.vms.get(tsdb_of(n))
        for cf in configs:
            run = cf[len("config"):-len(".json")].lstrip("-") or "base"
            exp_file = os.path.join(gen, "expected%s.json" % ("" if run == "base" else "-" + run))
            with open(exp_file) as f:
                exp = json.load(f)
            res = {}
            for backend, srv in (("prometheus", prom), ("victoria", vm)):
                if srv is None:
                    continue
                for mode in ("raw", "server"):
                    res[backend, mode] = self.collect(n, run, gen, cf, exp, backend, srv.url(),
                                                      mode)
            def rows(k):
                r = res.get(k)
                return len(r[0]) if r is not None and not isinstance(r, str) else "?"
            if prom is not None:
                tap.check("%s/%s: usage, device rows, query counts, skipped-sample counters and "
                          "invoices collected in server mode equal raw mode's, to the MiB·s "
                          "(%s rows)" % (n, run, rows(("prometheus", "raw"))),
                          self.compare(res["prometheus", "raw"], res["prometheus", "server"],
                                       "raw", "server"))
            if n.startswith(ADDS_UP) and prom is not None:
                self.adds_up(n, run, exp)
            if n == "busy-bound" and run == "base":
                self.busy_bound(res)
            if vm is not None:
                tap.check("%s/%s: VictoriaMetrics: server mode's tables and invoices equal raw "
                          "mode's on VictoriaMetrics, to the MiB·s (%s rows)" % (
                              n, run, rows(("victoria", "raw"))),
                          self.compare(res["victoria", "raw"], res["victoria", "server"],
                                       "raw", "server"))
            hp, hv = (self.hours.get("%s:%s/%s" % (b, n, run)) for b in ("prometheus",
                                                                           "victoria"))
            if hp is not None and hv is not None:
                # the same plain host-hours: VM's changes() would leave hours raw
                tap.check("%s/%s: VictoriaMetrics: server mode takes the same device-hours from "
                          "the hourly sums as on Prometheus (%d, %d raw)" % (n, run, hp[0], hp[1]),
                          [] if hp == hv else ["VictoriaMetrics: %d from the sums, %d raw" % hv])
            if vm is not None and prom is not None:
                tap.check("%s/%s: VictoriaMetrics: server mode's tables and invoices equal raw "
                          "mode's on Prometheus, to the MiB·s" % (n, run),
                          self.compare(res["prometheus", "raw"], res["victoria", "server"],
                                       "Prometheus raw", "VictoriaMetrics server"))

    def adds_up(self, n, run, exp):
        """The summary's device rows of the raw collect add up, in exact
        decimals computed here (not the engine's own "reconciles")."""
        tag = "%s-%s-prometheus-raw" % (n, run)
        rc, out, err = self.engine.run(self.path("cfg", tag + ".json"), self.path("db", tag + ".db"),
                                       "summary", "--period", exp["period"], "--format", "json")
        p, rows = [], []
        if rc != 0:
            p.append("summary exit %s: %s" % (rc, tail(err)))
        else:
            rows = json.loads(out)["devices"]
            if not rows:
                p.append("no device row")
        for d in rows:
            v = {k: decimal.Decimal(d[k]) for k in ("capacity", "excess", "memory_used",
                                                    "reserved_unused_billed", "reserved",
                                                    "unattributed", "idle")}
            left = v["capacity"] + v["excess"]
            right = (v["memory_used"] + v["reserved_unused_billed"] + v["reserved"] +
                     v["unattributed"] + v["idle"])
            if left != right:
                p.append("%s %s: capacity + excess %s, billed + reserved + unattributed + idle %s"
                         % (d["uuid"], d["gpu_i_id"], left, right))
        self.tap.check("%s/%s: every per-device summary row adds up (capacity + excess = billed + "
                       "reserved + unattributed + idle; %d devices)" % (n, run, len(rows)), p)

    def claims_check(self):
        """`check` on dra-plain through Prometheus: the claim dcgm-exporter
        names but kube_pod_resourceclaim_info does not (batch-0), the claim
        kube-state-metrics lists on no GPU series (ghost-0), and another
        driver's claim (nic-0's nic-port) in neither list."""
        tag = "dra-plain-base-prometheus-raw"
        rc, out, err = self.engine.run(self.path("cfg", tag + ".json"), self.path("db", tag + ".db"),
                                       "check", "--at", "2026-10-24T02:00:00Z")
        text = out + err
        want = ["DRA: pod team-c/batch-0 claim team-c/batch-gpu on device "
                "GPU-df000000-0000-4000-8000-000000000000 (pl-2/gpu-0): seen on dcgm-exporter "
                "series but not in kube_pod_resourceclaim_info",
                "DRA: pod team-e/ghost-0 claim team-e/ghost-gpu: in kube_pod_resourceclaim_info "
                "but on no dcgm-exporter series",
                "DRA: 3 claim(s) of gpu.nvidia.com on dcgm-exporter series, 3 in "
                "kube_pod_resourceclaim_info, 1 only on dcgm-exporter, 1 only in kube-state-metrics"]
        p = ["missing: %s" % w for w in want if w not in text]
        p += ["another driver's claim listed"] if "nic-port" in text else []
        p += ["check exit %s: %s" % (rc, tail(text))] if rc not in (0, 1) or p else []
        self.tap.check("dra-plain: check compares the claims on dcgm-exporter series with "
                       "kube_pod_resourceclaim_info through Prometheus (one only on each side, "
                       "another driver's claim in neither)", p)

    def device_query(self):
        """memory_source.device_query through Prometheus on hami: `check`
        counts the exporter's device series (one per GPU: hami-1's two and
        hami-2's one); with a device query that has no series, `check` says
        so and the collect falls back to the HAMi pods' sums: the figures of
        the run without a device query, marked estimated on every GPU with
        pods (all three)."""
        gen = self.path("gen-hami")
        with open(os.path.join(gen, "expected.json")) as f:
            exp = json.load(f)
        qdir = self.path("queries-absent")
        shutil.copytree(os.path.join(REPO, "queries"), qdir, dirs_exist_ok=True)
        with open(os.path.join(qdir, "fb_used_absent.promql"), "w") as f:
            f.write("DCGM_FI_DEV_FB_USED_ABSENT{${cluster_selector}}\n")
        rows = {}
        for run, dq in (("preset", None), ("absent", "fb_used_absent")):
            with open(self.path("cfg", "hami-%s-prometheus-raw.json" % (
                    "preset" if run == "preset" else "base"))) as f:
                cfg = json.load(f)
            if dq:
                cfg["memory_source"]["device_query"] = dq
                cfg["collection"]["queries_dir"] = qdir
            path = self.path("cfg", "hami-dq-%s.json" % run)
            with open(path, "w") as f:
                json.dump(cfg, f)
            db = self.path("db", "hami-dq-%s.db" % run)
            rc, out, err = self.engine.run(path, db, "check", "--at", "2026-10-17T02:00:00Z")
            want = ("memory_source.device_query fb_used: 3 device series, one for every device "
                    "of the memory source" if run == "preset" else
                    "memory_source.device_query fb_used_absent: no series at the probe time")
            self.tap.check("hami: check with memory_source.device_query %s says \"%s\""
                           % (dq or "fb_used (preset)", want),
                           [] if want in out + err else ["exit %s: %s" % (rc, tail(out + err))])
            if run == "absent":
                rc, out, err = self.engine.run(path, db, "collect", "--from", exp["window"]["from"],
                                               "--to", exp["window"]["to"], timeout=300)
                rows = usage_rows(db)[0] if rc == 0 else "collect exit %s: %s" % (rc, tail(err))
        base = usage_rows(self.path("db", "hami-base-prometheus-raw.db"))[0]
        p = [rows] if isinstance(rows, str) else []
        if not p:
            strip = lambda rs: sorted(r[:10] + r[11:] for r in rs)  # without estimated
            p += ["rows: " + d for d in diff(strip(base), strip(rows))]
            est = sorted({r[5] for r in rows if r[10]})
            want = ["GPU-ea000000-0000-4000-8000-000000000000",
                    "GPU-ea000000-0000-4000-8000-000000000001",
                    "GPU-eb000000-0000-4000-8000-000000000000"]
            if est != want:
                p.append("estimated on %s, expected %s" % (est, want))
        self.tap.check("hami: with a device query that has no series the collect takes the HAMi "
                       "pods' sums (the figures without a device query) marked estimated on "
                       "every GPU with pods", p)

    def busy_bound(self, res):
        """busy-bound's skips as busy-bound.post.py wrote them, reported by
        both modes on every backend, on a fleet whose other hours the
        server mode took from the sums (so its figures were in play)."""
        for (backend, mode), r in sorted(res.items()):
            if isinstance(r, str):
                continue
            lines = r[4]["lines"]
            p = ["%s %s: %s" % (k, lines.get(k), want)
                 for k, want in sorted(BUSY_BOUND_SKIPS.items()) if lines.get(k) != want]
            p += ["unexpected %s: %d" % (k, v) for k, v in sorted(lines.items())
                  if k not in BUSY_BOUND_SKIPS]
            want_total = sum(BUSY_BOUND_SKIPS.values())
            if r[4]["summary"] != [want_total]:
                p.append("bad_samples %s, expected [%d]" % (r[4]["summary"], want_total))
            if mode == "server":
                sv = self.hours.get("%s:busy-bound/base" % backend, (0, 0))[0]
                if not sv:
                    p.append("no device-hour from the hourly sums: the case tests nothing")
            self.tap.check("busy-bound: %s %s mode skips and logs GR_ENGINE_ACTIVE 1.0000001 "
                           "(60, out_of_bounds) and -0.25 (1, negative) of an idle GPU and "
                           "GPU_UTIL 150 (60, out_of_bounds): bad_samples=%d" % (
                               backend, mode, sum(BUSY_BOUND_SKIPS.values())), p)

    def count_log(self, backend, n, run, err):
        """Sums the server mode's per-chunk log lines."""
        sv = raw = 0
        for m in re.finditer(r"device_hours_server=(\d+) device_hours_raw=(\d+)", err):
            sv += int(m.group(1))
            raw += int(m.group(2))
        self.shares["%s:%s/%s" % (backend, n, run)] = sv / (sv + raw) if sv + raw else 0.0
        self.hours["%s:%s/%s" % (backend, n, run)] = (sv, raw)
        self.tap.ok("%s/%s: %s: server mode took %d device-hours from the hourly sums, %d raw"
                    % (n, run, backend, sv, raw))

    def changes_semantics(self):
        """Why server mode sends changes_prometheus to VictoriaMetrics: its
        changes() over an hour's subquery of a constant is 1, not 0 (it
        counts from before the window's first step); changes_prometheus is
        Prometheus's changes(). A VM that answers 0 is noticed here."""
        tap = self.tap
        vm = next(iter(self.vms.values()), None)
        prom = next(iter(self.proms.values()), None)
        if vm is None:
            return
        t = 1790002740
        def ask(srv, q):
            try:
                doc = harness.http_get_json(srv.url() + "/api/v1/query?" + urllib.parse.urlencode(
                    {"query": q, "time": str(t)}))
                r = doc["data"]["result"]
                return r[0]["value"][1] if r else "empty"
            except urllib.error.HTTPError as e:
                return "HTTP %d" % e.code
            except Exception as e:
                return str(e)
        q = "changes(vector(1)[3450s:300s])"
        cp = "changes_prometheus(vector(1)[3450s:300s])"
        got = {"victoria " + q: ask(vm, q), "victoria " + cp: ask(vm, cp)}
        want = {"victoria " + cp: "0"}
        # with -search.maxStalenessInterval=59s (VM_FLAGS) the step before the
        # window is out of VM's reach and its changes() counts the first point
        if self.vm_flags == VM_FLAGS:
            want["victoria " + q] = "1"
        if prom is not None:
            got["prometheus " + q] = ask(prom, q)
            want["prometheus " + q] = "0"
            got["prometheus " + cp] = ask(prom, cp)
            want["prometheus " + cp] = "HTTP 400"
        tap.note("VictoriaMetrics (%s): %s = %s" % (" ".join(self.vm_flags), q,
                                                    got["victoria " + q]))
        tap.check("%s: VictoriaMetrics' changes_prometheus() is 0 as Prometheus's changes() "
                  "(Prometheus refuses the name)%s: server mode sends changes_prometheus to it"
                  % (q, ", its changes() 1" if "victoria " + q in want else ""), [
                      "%s gave %s, expected %s%s" % (k, got[k], want[k],
                                                     " (VM's changes() now matches Prometheus's)"
                                                     if k == "victoria " + q else "")
                      for k in sorted(want) if got[k] != want[k]])

    def versionless(self):
        """A backend without a version at buildinfo and without MetricsQL
        (Prometheus behind a front that hides its version) is refused in
        server mode before any range query."""
        tap = self.tap
        prom = self.proms.get("c")
        if prom is None:
            return
        front = Versionless(prom.port)
        try:
            gen = self.path("gen-" + PLAIN)
            with open(os.path.join(gen, "config.json")) as f:
                cfg = json.load(f)
            cfg["prometheus"]["url"] = front.url()
            cfg["prices"]["file"] = os.path.join(gen, "prices.csv")
            cfg.setdefault("collection", {})["mode"] = "server"
            path = self.path("cfg", "versionless-server.json")
            with open(path, "w") as f:
                json.dump(cfg, f)
            db = self.path("db", "versionless.db")
            rc, out, err = self.engine.run(path, db, "collect", "--from",
                                           "2026-10-05T00:00:00Z", "--to", "2026-10-05T01:00:00Z")
            ranged = [p for p in front.paths if p.startswith("/api/v1/query_range")]
            p = [] if rc == 4 and all(w in err for w in (
                "buildinfo", "changes_prometheus", "collection.mode")) else [
                    "exit %s: %s" % (rc, tail(err))]
            if ranged:
                p.append("%d range queries sent first" % len(ranged))
            tap.check("server mode refuses a backend with no version at buildinfo that does not "
                      "answer changes_prometheus (Prometheus behind a front): exit 4 naming "
                      "both, before any range query", p)
        finally:
            front.close()

    def plain_server(self, front, run, backend):
        """A server-mode collect of the plain fleet through front."""
        gen = self.path("gen-" + PLAIN)
        with open(os.path.join(gen, "expected.json")) as f:
            exp = json.load(f)
        return self.collect(PLAIN, run, gen, "config.json", exp, backend, front.url(), "server")

    def versioned_vm(self):
        """VictoriaMetrics from 1.96 reports Prometheus's version 2.24.0 at
        buildinfo: server mode still finds MetricsQL by the probe, sends it
        changes_prometheus and takes as many device-hours from the hourly
        sums as on Prometheus (with changes, VM's extra count sends hours raw)."""
        vm, want = self.vms.get(tsdb_of(PLAIN)), self.hours.get("prometheus:%s/base" % PLAIN)
        if vm is None or want is None:
            return
        front = Versionless(vm.port, version="2.24.0")
        try:
            got = self.plain_server(front, "versioned", "victoria-2.24")
            p = [got] if isinstance(got, str) else []
            if "engine=metricsql" not in self.last_server_log:
                p.append("not taken for MetricsQL: %s" % tail(self.last_server_log, 300))
            hv = self.hours.get("victoria-2.24:%s/versioned" % PLAIN)
            if hv != want:
                p.append("%s device-hours from the sums and raw, Prometheus %s" % (hv, want))
            self.tap.check("VictoriaMetrics reporting version 2.24.0 (as from 1.96): server mode "
                           "finds MetricsQL by the probe and takes the same device-hours from the "
                           "sums as on Prometheus (%s)" % (want,), p)
        finally:
            front.close()

    def disguised_vm(self):
        """VictoriaMetrics disguised as Prometheus (a version, changes_prometheus
        refused): server mode sends it changes, whose count over an hour's
        steps is one too many, and the per-hour probe refuses server mode
        (exit 4) instead of going on with another function's semantics."""
        vm = self.vms.get(tsdb_of(PLAIN))
        if vm is None:
            return
        front = Versionless(vm.port, version="2.42.0", refuse="changes_prometheus(")
        try:
            got = self.plain_server(front, "disguised", "victoria-disguised")
            p = []
            if not isinstance(got, str) or "exit 4" not in got or \
                    "changes(timestamp(vector(1))" not in got:
                p.append("expected exit 4 naming the changes probe, got %s" % (
                    got if isinstance(got, str) else "exit 0"))
            self.tap.check("a backend whose changes() counts one change too many over an hour's "
                           "steps (VictoriaMetrics passed off as Prometheus) is refused in server "
                           "mode by the per-hour probe (exit 4)", p)
        finally:
            front.close()

    def cleanup(self):
        for p in list(self.proms.values()) + list(self.vms.values()):
            p.stop()


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--only", help="scenario names, comma-separated")
    ap.add_argument("--backend", choices=("prometheus", "victoria", "both"), default="both",
                    help="the backends each scenario is collected from (default both)")
    ap.add_argument("--vm-flags", help="VictoriaMetrics' flags, space-separated (default: %s)"
                    % " ".join(VM_FLAGS))
    ap.add_argument("--all", action="store_true",
                    help="every scenario, not only %s" % ", ".join(sorted(DEFAULT)))
    args = ap.parse_args()
    tap = harness.Tap()
    return harness.run_driver(lambda a, t: ServerMode(a, t), args, tap,
                              "server_mode_test", "gl-server-mode-")


if __name__ == "__main__":
    sys.exit(main())
