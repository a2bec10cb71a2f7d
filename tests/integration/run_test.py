#!/usr/bin/env python3
"""gpuledger `run` / `close` / corrections / SIGKILL / lock tests against a real Prometheus.

Usage: python3 tests/integration/run_test.py --bin build/gpuledger
                                             [--work DIR] [--keep] [--seed N] [--kills N]

Prints "ok - NAME" / "not ok - NAME: REASON" lines and "# ..." comments only;
exits 1 when a check failed.

Data: tests/integration/scenarios/run-month.json (2026-11-01 to 2026-12-02,
300 s step, 16 series), generated with tests/gen/gencluster.py. The same
scenario with gpu-node-2's dcgm samples of 2026-11-29 09:00-15:00 removed
(node "gaps") is the data "before the late samples arrive". The incomplete
data is backfilled into one TSDB; the late samples (exactly the difference
of the two OpenMetrics files) into a second block that is moved into the
TSDB before Prometheus is restarted on the same port. Prometheus runs with
--query.lookback-delta=299s so a missing 300 s sample is a hole.

1. Late data and close: `run --now` at 2026-11-15T00:00, 2026-11-29T20:00
   and 2026-12-01T02:00 on the incomplete data (each run's outputs compared
   with the generator's figures for the window collected so far), `close
   --period 2026-11 --now 2026-12-01T03:00`, closing twice / closing December
   (exit 7), then Prometheus restarted on the complete data and `run --now
   2026-12-01T06:00` (run.repull_hours 48 re-pulls 2026-11-29): November's
   export and invoices stay byte-identical to the frozen ones; December's
   FOCUS export holds, per FOCUS key (team, cluster, model, kind, price,
   day), a correction row = expected(complete) - frozen (BilledCost and
   quantity), ChargeClass=Correction, x_CorrectedPeriod=2026-11, the original
   ChargePeriod day, BillingPeriod December; frozen + corrections = the
   expected complete November total per team, to the cent; December's
   invoices carry the corrections as "charge_class": "Correction" lines.
   The FOCUS rule checker (focus_check.py) passes on the closed November
   and on December with its corrections, FOCUS 1.2 and 1.3, and on the
   FOCUS files `run` wrote.
2. SIGKILL: `run` on the complete data killed with SIGKILL at random delays
   (seeded) --kills times, `PRAGMA integrity_check` after each kill, then an
   uninterrupted run: invoices, FOCUS CSV and summary identical to a single
   uninterrupted run into a fresh database (which must match the generator).
3. Lock: while `flock DB.lock sleep` holds the lock, `run` (and `collect`,
   `close`) exit 6 naming the lock file and write nothing; a second `run`
   started while a real `run` holds the lock exits 6 too.
"""

import copy
import csv
import hashlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from decimal import Decimal, getcontext

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gen"))
import focus_check  # noqa: E402
import gencluster as gc  # noqa: E402
import harness  # noqa: E402
import ledger_db  # noqa: E402
from harness import CHILD_ENV  # noqa: E402

getcontext().prec = 100
SCENARIO = os.path.join(HERE, "scenarios", "run-month.json")
GAP_NODE = "gpu-node-2"
GAP = ("2026-11-29T09:00:00Z", "2026-11-29T15:00:00Z")
NOV, DEC = "2026-11", "2026-12"
ENGINE_TIMEOUT = 120
WORK_PREFIXES = ("full.om", "incomplete.om", "late.om", "prices.csv", "tsdb", "prometheus.",
                 "gpuledger.json", "engine.log", "late.db", "ref.db", "kill.db",
                 "concurrent.db", "out-")


def tail(text, n=500):
    return harness.tail(text, n)


def shown(cmd):
    """A command line for a failure message, paths shortened."""
    return " ".join(os.path.basename(c) if os.path.isabs(c) else c for c in cmd)


def run_accepted(rc, err):
    """(accepted, note): a run must exit 0."""
    return rc == 0, None


# ---------------------------------------------------------------- figures

def dec(s):
    return Decimal(str(s))


def day_after(day):
    return gc.fmt_day(gc.parse_time(day + "T00:00:00Z") + 86400)


def expected_for(cl, t_from, t_to, period):
    """gencluster's expected figures for [t_from, t_to) billed in `period`."""
    saved = cl.period
    cl.period = period
    try:
        return cl.expected(gc.parse_time(t_from), gc.parse_time(t_to))
    finally:
        cl.period = saved


def exp_day_rows(exp):
    """{(team, cluster, model, kind, price_id, day): (billed_cost, gb_hours)}."""
    out = {}
    for team, inv in exp["invoices"].items():
        for l in inv["lines"]:
            for d in l["days"]:
                k = (team, l["cluster"], l["gpu_model"], l["kind"], l["price_id"], d["day"])
                out[k] = (dec(d["billed_cost"]), dec(d["gb_hours"]))
    return out


# content-based SkuPriceId (gpu-memory/<model>|<pattern>@<valid_from>, issue
# 11) -> the generator's price id, for the scenarios in use (use_prices)
PRICE_IDS = {}


def use_prices(cl):
    PRICE_IDS.update({"%s@%s" % (p["pattern"], gc.fmt_time(p["valid_from"])): p["id"]
                      for p in cl.prices})


def parse_focus(text):
    rows = list(csv.DictReader(io.StringIO(text)))
    for r in rows:
        sku, _, key = r.get("SkuPriceId", "").partition("|")
        if key in PRICE_IDS and sku == r.get("SkuId"):
            r["SkuPriceId"] = PRICE_IDS[key]
    return rows


def row_key(r):
    return (r["SubAccountId"], r["x_Cluster"], r["x_GpuModel"], r["x_ChargeKind"],
            r["SkuPriceId"], r["ChargePeriodStart"][:10])


def is_correction(r):
    return r.get("ChargeClass") == "Correction"


def usage_problems(rows, exp, period):
    """Non-correction FOCUS rows vs the generator, key by key."""
    p = []
    want = exp_day_rows(exp)
    p0, p1 = gc.month_bounds(period)
    got = {}
    for r in rows:
        if is_correction(r):
            continue
        k = row_key(r)
        if k in got:
            p.append("duplicate FOCUS row %s" % (k,))
        got[k] = r
        if r["BillingPeriodStart"] != gc.fmt_time(p0) or r["BillingPeriodEnd"] != gc.fmt_time(p1):
            p.append("%s: BillingPeriod %s..%s, expected %s..%s" % (
                k, r["BillingPeriodStart"], r["BillingPeriodEnd"], gc.fmt_time(p0),
                gc.fmt_time(p1)))
        if r.get("x_CorrectedPeriod"):
            p.append("%s: usage row with x_CorrectedPeriod %r" % (k, r["x_CorrectedPeriod"]))
    for k in sorted(set(want) - set(got)):
        p.append("missing FOCUS row %s (expected BilledCost %s)" % (k, want[k][0]))
    for k in sorted(set(got) - set(want)):
        p.append("unexpected FOCUS row %s (BilledCost %s)" % (k, got[k]["BilledCost"]))
    for k in sorted(set(got) & set(want)):
        r, (cost, gbh) = got[k], want[k]
        if dec(r["BilledCost"]) != cost:
            p.append("%s BilledCost %s, expected %s" % (k, r["BilledCost"], cost))
        if dec(r["ConsumedQuantity"]) != gbh:
            p.append("%s ConsumedQuantity %s, expected %s" % (k, r["ConsumedQuantity"], gbh))
    return p


def invoice_problems(invoices, exp, corrections_allowed=False):
    """Engine invoices {team: INVOICE} vs the generator's (lines other than
    corrections keyed by cluster, model, kind, price; totals)."""
    p = []
    want = exp["invoices"]
    for team in sorted(set(want) - set(invoices)):
        p.append("no invoice for %s (expected total %s)" % (team, want[team]["total"]))
    for team in sorted(set(invoices) - set(want)):
        if not corrections_allowed or any(l.get("charge_class") != "Correction"
                                          for l in invoices[team].get("lines", [])):
            p.append("unexpected invoice for %s (total %s)" % (team, invoices[team].get("total")))
    for team in sorted(set(want) & set(invoices)):
        inv, exp_inv = invoices[team], want[team]
        lines = [l for l in inv.get("lines", []) if l.get("charge_class") != "Correction"]
        corr = [l for l in inv.get("lines", []) if l.get("charge_class") == "Correction"]
        if corr and not corrections_allowed:
            p.append("%s: %d correction lines in an invoice that should have none"
                     % (team, len(corr)))
        lk = lambda l: (l["cluster"], l["gpu_model"], l["kind"], l["price_id"])  # noqa: E731
        got = {}
        for l in lines:
            if lk(l) in got:
                p.append("%s: duplicate line %s" % (team, lk(l)))
            got[lk(l)] = l
        exp_lines = {lk(l): l for l in exp_inv["lines"]}
        for k in sorted(set(exp_lines) - set(got)):
            p.append("%s: missing line %s (amount %s)" % (team, k, exp_lines[k]["amount"]))
        for k in sorted(set(got) - set(exp_lines)):
            p.append("%s: unexpected line %s (amount %s)" % (team, k, got[k].get("amount")))
        for k in sorted(set(got) & set(exp_lines)):
            for f in ("mib_seconds", "amount", "gb_hours"):
                if str(got[k].get(f)) != exp_lines[k][f]:
                    p.append("%s %s %s: got %s, expected %s" % (team, k, f, got[k].get(f),
                                                               exp_lines[k][f]))
        want_total = dec(exp_inv["total"]) + sum((dec(l["amount"]) for l in corr), Decimal(0))
        if dec(inv.get("total", "nan")) != want_total:
            p.append("%s: total %s, expected %s%s" % (
                team, inv.get("total"), want_total,
                " (generator %s + corrections)" % exp_inv["total"] if corr else ""))
    return p


def invoices_of_doc(doc):
    return {i["team"]: i for i in doc.get("invoices", [])}


def invoices_of_dir(d, period):
    out = {}
    if not os.path.isdir(d):
        return out
    for f in sorted(os.listdir(d)):
        pre = "invoice-%s-" % period
        if f.startswith(pre) and f.endswith(".json"):
            with open(os.path.join(d, f)) as fh:
                out[f[len(pre):-5]] = json.load(fh)
    return out


def tree_digest(d, skip=()):
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            path = os.path.join(root, f)
            rel = os.path.relpath(path, d)
            if any(rel.startswith(s) for s in skip):
                continue
            with open(path, "rb") as fh:
                out[rel] = hashlib.sha256(fh.read()).hexdigest()
    return out


def file_digest(path):
    if not os.path.exists(path):
        return None
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def lock_held(path):
    """True when /proc/locks lists a FLOCK write lock on path's inode (read
    without taking the lock)."""
    try:
        ino = os.stat(path).st_ino
        with open("/proc/locks") as f:
            for line in f:
                parts = line.split()
                if "FLOCK" in parts and "WRITE" in parts:
                    for x in parts:
                        if x.count(":") == 2 and x.rsplit(":", 1)[1] == str(ino):
                            return True
    except OSError:
        return False
    return False


def integrity(db):
    try:
        return ledger_db.integrity(db)
    except ledger_db.Error as e:
        return "integrity_check failed: %s" % e


def watermark(db):
    try:
        v = "\n".join(str(to) for _, to in ledger_db.watermarks(db))
        return gc.fmt_time(int(v)) if v.isdigit() else (v or "none")
    except (ledger_db.Error, ValueError):
        return "?"


# ---------------------------------------------------------------- the test

class RunTest(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.a = args
        self.prom = None
        self.held = []   # processes started here that must be stopped at exit

    def cleanup(self):
        for p in self.held:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()
        if self.prom:
            self.prom.stop()

    # ---- setup
    def generate(self):
        tap = self.tap
        t0 = time.time()
        with open(SCENARIO, encoding="utf-8") as f:
            scn = json.load(f)
        self.full = gc.Cluster(scn, os.path.dirname(SCENARIO))
        use_prices(self.full)
        inc_scn = copy.deepcopy(scn)
        for n in inc_scn["nodes"]:
            if n["name"] == GAP_NODE:
                n.setdefault("gaps", []).append({"from": GAP[0], "to": GAP[1]})
        self.inc = gc.Cluster(inc_scn, os.path.dirname(SCENARIO))
        full_om, inc_om = self.path("full.om"), self.path("incomplete.om")
        with open(full_om, "w", encoding="utf-8", newline="\n") as f:
            nfull = self.full.write_openmetrics(f)
        with open(inc_om, "w", encoding="utf-8", newline="\n") as f:
            ninc = self.inc.write_openmetrics(f)
        series = sum(len(s) for s in self.full.series.values())
        self.exp_full_nov = self.full.expected()
        self.exp_inc_nov = self.inc.expected()
        p = gc.self_check(self.full, self.exp_full_nov) + gc.self_check(self.inc, self.exp_inc_nov)
        # the late samples = complete minus incomplete, exactly the gap's dcgm samples
        with open(full_om, encoding="utf-8") as f:
            full_lines = f.read().splitlines()
        with open(inc_om, encoding="utf-8") as f:
            inc_lines = f.read().splitlines()
        inc_set = set(inc_lines)
        if not inc_set <= set(full_lines):
            p.append("the incomplete data has samples the complete data lacks")
        late = [ln for ln in full_lines if ln.startswith("#") or ln not in inc_set]
        late_samples = [ln for ln in late if not ln.startswith("#")]
        g0, g1 = gc.parse_time(GAP[0]), gc.parse_time(GAP[1])
        for ln in late_samples:
            ts = int(ln.rsplit(" ", 1)[1])
            if 'Hostname="%s"' % GAP_NODE not in ln or not g0 <= ts < g1 or \
                    not ln.startswith("DCGM_FI_DEV_FB_"):
                p.append("late sample outside the gap: %s" % ln[:120])
                break
        want_late = (g1 - g0) // self.full.step * 3   # USED, FREE, RESERVED of one series set
        if len(late_samples) != want_late:
            p.append("%d late samples, expected %d" % (len(late_samples), want_late))
        with open(self.path("late.om"), "w", encoding="utf-8", newline="\n") as f:
            f.write("\n".join(late) + "\n")
        with open(self.path("prices.csv"), "w", encoding="utf-8", newline="") as f:
            f.write(self.full.prices_csv())
        if series > 20:
            p.append("%d series (test budget: about 20)" % series)
        ok = tap.check("generator: %d series, %d lines complete / %d incomplete, %d late samples "
                       "(%s %s..%s) (%.1fs)" % (series, nfull, ninc, len(late_samples), GAP_NODE,
                                                GAP[0][11:16], GAP[1][11:16], time.time() - t0), p)
        tap.note("expected November totals: complete %s; incomplete %s" % (
            {t: i["total"] for t, i in sorted(self.exp_full_nov["invoices"].items())},
            {t: i["total"] for t, i in sorted(self.exp_inc_nov["invoices"].items())}))
        return ok

    def backfill(self):
        t0 = time.time()
        self.tsdb = self.path("tsdb")
        procs = []
        for om, out in (("incomplete.om", "tsdb"), ("late.om", "tsdb-late")):
            procs.append(harness.backfill_start(self.path(om), self.path(out), self.work,
                                                ["--max-block-duration=768h"]))
        p = []
        for pr in procs:
            rc, out = harness.backfill_wait(pr)
            if rc != 0:
                p.append("%s: exit %s: %s" % (" ".join(pr.args[-2:]), rc, tail(out)))
        return self.tap.check("promtool backfill: incomplete TSDB and the late block (%.1fs)"
                              % (time.time() - t0), p)

    def write_config(self):
        # November is closed at 2026-12-01T03:00Z, before its late samples
        # arrive (every hour collected): no settle delay
        cfg = self.full.run_config({"close": {"settle_hours": 0}})
        cfg["prometheus"]["url"] = self.prom.url()
        cfg["prices"]["file"] = self.path("prices.csv")
        cfg.setdefault("collection", {})["queries_dir"] = os.path.join(REPO, "queries")
        self.cfg = self.path("gpuledger.json")
        with open(self.cfg, "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
        self.run_cfg = cfg.get("run", {})

    def served(self, complete):
        """The gap hour is a hole before the late samples, filled after."""
        q = 'DCGM_FI_DEV_FB_USED{Hostname="%s"}' % GAP_NODE
        at_gap = gc.parse_time(GAP[0]) + 3600
        before = gc.parse_time(GAP[0]) - 300
        p = []
        try:
            n_gap = len(self.prom.query(q, at_gap))
            n_gap0 = len(self.prom.query(q, gc.parse_time(GAP[0])))
            n_before = len(self.prom.query(q, before))
        except (OSError, RuntimeError, ValueError) as e:
            return self.tap.check("prometheus serves the %s data" % (
                "complete" if complete else "incomplete"), ["query failed: %s" % e])
        if n_before != 1:
            p.append("%d series at %s, expected 1" % (n_before, gc.fmt_time(before)))
        want = 1 if complete else 0
        if n_gap != want or n_gap0 != want:
            p.append("%d / %d series at %s / %s, expected %d (lookback 299s)" % (
                n_gap0, n_gap, GAP[0], gc.fmt_time(at_gap), want))
        return self.tap.check("prometheus serves the %s data (%s at %s: %s)" % (
            "complete" if complete else "incomplete", GAP_NODE,
            GAP[0][:16], "present" if complete else "a hole"), p)

    # ---- helpers around the engine
    def eng(self, *args, db=None):
        return self.engine.run(self.cfg, db or self.db, *args)

    def run_step(self, name, now, db=None, out=None):
        db = db or self.db
        out = out or self.out
        cmd = self.engine.cmd(self.cfg, db, "run", "--out", out, "--now", now)
        rc, _, err = self.eng("run", "--out", out, "--now", now, db=db)
        ok, note = run_accepted(rc, err)
        if not ok:
            self.tap.fail(name, "%s: exit %s, expected 0: %s" % (shown(cmd), rc, tail(err)))
            return False
        if note:
            self.tap.note("%s: %s" % (name, note))
        self.tap.ok(name)
        return True

    def export(self, period, db=None):
        rc, out, err = self.eng("export", "--period", period, db=db)
        if rc != 0:
            raise RuntimeError("export --period %s: exit %s: %s" % (period, rc, tail(err)))
        return out

    def invoice_json(self, period, db=None):
        rc, out, err = self.eng("invoice", "--period", period, "--format", "json", db=db)
        if rc != 0:
            raise RuntimeError("invoice --period %s: exit %s: %s" % (period, rc, tail(err)))
        return out

    def outputs_problems(self, out, period, exp):
        """A run's DIR/<period>/ outputs vs the generator."""
        d = os.path.join(out, period)
        p = []
        for f in ("invoices", "focus-%s.csv" % period, "summary-%s.json" % period,
                  "anomalies-%s.json" % period, "reports"):
            if not os.path.exists(os.path.join(d, f)):
                p.append("%s/%s missing" % (period, f))
        focus = os.path.join(d, "focus-%s.csv" % period)
        if os.path.isfile(focus):
            with open(focus, encoding="utf-8", newline="") as f:
                p += ["focus: " + x for x in usage_problems(parse_focus(f.read()), exp, period)]
        p += ["invoices: " + x for x in
              invoice_problems(invoices_of_dir(os.path.join(d, "invoices"), period), exp)]
        return p

    # ---- 1. late data, close, corrections
    def late_data(self):
        tap = self.tap
        self.db = self.path("late.db")
        self.out = self.path("out-late")
        full, inc = self.full, self.inc
        nov0 = "2026-11-01T00:00:00Z"
        delay = int(self.run_cfg.get("delay_minutes", 10))
        tap.note("run config: %s" % json.dumps(self.run_cfg, sort_keys=True))

        def to_of(now):
            t = gc.parse_time(now) - delay * 60
            return gc.fmt_time(t - t % 3600)

        # three runs on the incomplete data
        for i, now in enumerate(("2026-11-15T00:00:00Z", "2026-11-29T20:00:00Z",
                                 "2026-12-01T02:00:00Z"), 1):
            to = to_of(now)
            if not self.run_step("late: run %d --now %s on the incomplete data" % (i, now), now):
                return
            if to <= "2026-12-01T00:00:00Z":
                exp = expected_for(inc, nov0, to, NOV)
                p = self.outputs_problems(self.out, NOV, exp)
                if os.path.exists(os.path.join(self.out, DEC)):
                    p.append("%s/%s written before December started" % (
                        os.path.basename(self.out), DEC))
                tap.check("late: run %d outputs in DIR/%s = generator for %s..%s" % (
                    i, NOV, nov0[:16], to[:16]), p)
            else:
                p = self.outputs_problems(self.out, NOV, self.exp_inc_nov)
                exp_dec = expected_for(inc, "2026-12-01T00:00:00Z", to, DEC)
                p += self.outputs_problems(self.out, DEC, exp_dec)
                tap.check("late: run %d outputs = generator (November whole, December to %s)"
                          % (i, to[:16]), p)
        nov_open = self.export(NOV)
        nov_open_inv = self.invoice_json(NOV)
        p = usage_problems(parse_focus(nov_open), self.exp_inc_nov, NOV)
        p += invoice_problems(invoices_of_doc(json.loads(nov_open_inv)), self.exp_inc_nov)
        with open(os.path.join(self.out, NOV, "focus-%s.csv" % NOV), encoding="utf-8",
                  newline="") as f:
            if f.read() != nov_open:
                p.append("DIR/%s/focus-%s.csv differs from `export --period %s`" % (NOV, NOV, NOV))
        tap.check("late: export / invoice --period %s before the close = generator "
                  "(incomplete data)" % NOV, p)
        out_nov_digest = tree_digest(os.path.join(self.out, NOV), skip=("reports",))

        # close: first at an instant inside the month (refused), then after it
        early = ("close", "--period", NOV, "--now", "2026-11-30T23:00:00Z")
        rc, _, err = self.eng(*early)
        p = [] if rc == 7 and err.strip() else \
            ["%s: exit %s, expected 7: %s" % (" ".join(early), rc, tail(err))]
        if self.export(NOV) != nov_open:
            p.append("export --period %s changed after the refused close" % NOV)
        tap.check("late: closing %s before its end (--now 2026-11-30T23:00:00Z) -> exit 7, "
                  "nothing frozen" % NOV, p)
        close_cmd = ("close", "--period", NOV, "--now", "2026-12-01T03:00:00Z")
        rc, _, err = self.eng(*close_cmd)
        if rc != 0:
            tap.fail("late: close --period %s --now 2026-12-01T03:00:00Z" % NOV,
                     "exit %s, expected 0: %s" % (rc, tail(err)))
            return
        tap.ok("late: close --period %s --now 2026-12-01T03:00:00Z" % NOV)
        frozen = self.export(NOV)
        frozen_inv = self.invoice_json(NOV)
        p = []
        if frozen != nov_open:
            p.append("export --period %s after the close differs from before" % NOV)
        # the same figures; only the status says the month is final now
        def figures(text, status):
            d = json.loads(text)
            for i in d["invoices"]:
                if i.pop("status", None) != status or (i.pop("closed_at", None) is None) == (
                        status == "final"):
                    p.append("invoice %s: not %s" % (i.get("invoice_id"), status))
            return d
        if figures(frozen_inv, "final") != figures(nov_open_inv, "draft"):
            p.append("invoice --period %s --format json after the close differs from before"
                     % NOV)
        tap.check("late: the frozen %s prints the figures shown before the close" % NOV, p)
        rc, _, err = self.eng(*close_cmd)
        tap.check("late: closing %s twice -> exit 7 with a message" % NOV,
                  [] if rc == 7 and err.strip() else
                  ["%s: exit %s, expected 7: %s" % (" ".join(close_cmd), rc, tail(err))])
        c2 = ("close", "--period", DEC, "--now", "2026-12-01T03:00:00Z")
        rc, _, err = self.eng(*c2)
        tap.check("late: closing %s (in progress at --now) -> exit 7 with a message" % DEC,
                  [] if rc == 7 and err.strip() else
                  ["%s: exit %s, expected 7: %s" % (" ".join(c2), rc, tail(err))])
        if frozen != self.export(NOV):
            tap.fail("late: failed closes change nothing", "export --period %s changed" % NOV)

        # the late samples arrive: Prometheus restarted on the complete TSDB
        port = self.prom.port
        self.prom.stop()
        late_dir = self.path("tsdb-late")
        for b in os.listdir(late_dir):
            if os.path.isfile(os.path.join(late_dir, b, "meta.json")):
                os.rename(os.path.join(late_dir, b), os.path.join(self.tsdb, b))
        try:
            self.prom.start(port, attempts=4)
        except RuntimeError as e:
            tap.fail("late: prometheus restarted on the complete TSDB", e)
            return
        if self.prom.port != port:
            tap.note("port %d was not free again: prometheus moved to %d (config rewritten)"
                     % (port, self.prom.port))
            self.write_config()
        if not self.served(True):
            return
        now4 = "2026-12-01T06:00:00Z"
        if not self.run_step("late: run 4 --now %s on the complete data (repull_hours %s)"
                             % (now4, self.run_cfg.get("repull_hours")), now4):
            return
        nov_after = self.export(NOV)
        nov_after_inv = self.invoice_json(NOV)
        p = []
        if nov_after != frozen:
            p.append("export --period %s changed after the late data (%d vs %d bytes)" % (
                NOV, len(nov_after), len(frozen)))
        if nov_after_inv != frozen_inv:
            p.append("invoice --period %s --format json changed after the late data" % NOV)
        tap.check("late: %s export and invoices byte-identical to the frozen ones after "
                  "the late data" % NOV, p)
        if tree_digest(os.path.join(self.out, NOV), skip=("reports",)) != out_nov_digest:
            tap.fail("late: run leaves the closed %s outputs alone" % NOV,
                     "DIR/%s/ (invoices, FOCUS, summary) changed after the close" % NOV)
        else:
            tap.ok("late: run leaves the closed %s outputs alone" % NOV)

        dec_text = self.export(DEC)
        dec_rows = parse_focus(dec_text)
        exp_dec = expected_for(full, "2026-12-01T00:00:00Z", to_of(now4), DEC)
        tap.check("late: %s usage rows = generator (complete data, to %s)" % (
            DEC, to_of(now4)[:16]), usage_problems(dec_rows, exp_dec, DEC))
        corr_sum = self.correction_checks(frozen, dec_rows)
        self.dec_invoice_checks(exp_dec, dec_rows, corr_sum)
        self.focus_conformance()
        with open(os.path.join(self.out, DEC, "focus-%s.csv" % DEC), encoding="utf-8",
                  newline="") as f:
            tap.check("late: DIR/%s/focus-%s.csv = export --period %s (corrections included)"
                      % (DEC, DEC, DEC), [] if f.read() == dec_text else
                      ["run's FOCUS file differs from the export"])
        p = []
        try:
            doc = invoices_of_doc(json.loads(self.invoice_json(DEC)))
        except (RuntimeError, ValueError) as e:
            doc = {}
            p.append(str(e))
        files = invoices_of_dir(os.path.join(self.out, DEC, "invoices"), DEC)
        strip = lambda i: {k: v for k, v in i.items() if k != "generator"}  # noqa: E731
        for team in sorted(set(doc) | set(files)):
            if team not in files:
                p.append("DIR/%s/invoices has no invoice for %s" % (DEC, team))
            elif team not in doc:
                p.append("DIR/%s/invoices has an invoice for %s that `invoice` does not print"
                         % (DEC, team))
            elif strip(files[team]) != strip(doc[team]):
                p.append("DIR/%s/invoices/invoice-%s-%s.json differs from `invoice --period %s "
                         "--format json` (total %s vs %s)" % (DEC, DEC, team, DEC,
                                                              files[team].get("total"),
                                                              doc[team].get("total")))
        tap.check("late: DIR/%s/invoices/*.json = invoice --period %s (correction lines "
                  "included)" % (DEC, DEC), p)
        # a re-run must not add the corrections again
        if self.run_step("late: run 5 --now %s again" % now4, now4):
            tap.check("late: a re-run leaves the %s export (and its corrections) unchanged" % DEC,
                      [] if self.export(DEC) == dec_text else
                      ["export --period %s changed after an identical re-run" % DEC])

    def correction_checks(self, frozen_text, dec_rows):
        """Per FOCUS key: correction = expected(complete) - frozen."""
        tap = self.tap
        frozen = {}
        for r in parse_focus(frozen_text):
            frozen[row_key(r)] = (dec(r["BilledCost"]), dec(r["ConsumedQuantity"]))
        want_full = exp_day_rows(self.exp_full_nov)
        zero = (Decimal(0), Decimal(0))
        diff = {}
        for k in set(frozen) | set(want_full):
            (c1, q1), (c0, q0) = want_full.get(k, zero), frozen.get(k, zero)
            if c1 != c0 or q1 != q0:
                diff[k] = (c1 - c0, q1 - q0)
        corr = [r for r in dec_rows if is_correction(r)]
        p, got = [], {}
        nov0, nov1 = gc.month_bounds(NOV)
        d0, d1 = gc.month_bounds(DEC)
        for r in corr:
            k = row_key(r)
            if k in got:
                p.append("two correction rows for %s" % (k,))
            got[k] = r
            day = k[5]
            if not (nov0 <= gc.parse_time(r["ChargePeriodStart"]) < nov1):
                p.append("%s: ChargePeriodStart %s not in %s" % (k, r["ChargePeriodStart"], NOV))
            if r["ChargePeriodStart"] != day + "T00:00:00Z" or \
                    r["ChargePeriodEnd"] != day_after(day) + "T00:00:00Z":
                p.append("%s: ChargePeriod %s..%s, expected the original day" % (
                    k, r["ChargePeriodStart"], r["ChargePeriodEnd"]))
            if r["BillingPeriodStart"] != gc.fmt_time(d0) or \
                    r["BillingPeriodEnd"] != gc.fmt_time(d1):
                p.append("%s: BillingPeriod %s..%s, expected %s..%s" % (
                    k, r["BillingPeriodStart"], r["BillingPeriodEnd"], gc.fmt_time(d0),
                    gc.fmt_time(d1)))
            if r["x_CorrectedPeriod"] != NOV:
                p.append("%s: x_CorrectedPeriod %r" % (k, r["x_CorrectedPeriod"]))
            if r["ChargeCategory"] != "Usage":
                p.append("%s: ChargeCategory %r, expected the original's \"Usage\""
                         % (k, r["ChargeCategory"]))
            if r["InvoiceId"] != "GL-%s-%s" % (DEC, k[0]):
                p.append("%s: InvoiceId %r" % (k, r["InvoiceId"]))
            if dec(r["EffectiveCost"]) != dec(r["BilledCost"]):
                p.append("%s: EffectiveCost %s != BilledCost %s" % (k, r["EffectiveCost"],
                                                                     r["BilledCost"]))
            if r["ListUnitPrice"] and r["ListCost"] and \
                    dec(r["ListCost"]) != dec(r["ListUnitPrice"]) * dec(r["PricingQuantity"]):
                p.append("%s: ListCost %s != ListUnitPrice %s x PricingQuantity %s" % (
                    k, r["ListCost"], r["ListUnitPrice"], r["PricingQuantity"]))
            if r["PricingUnit"] == "GB-Hours" and r["ConsumedQuantity"] != r["PricingQuantity"]:
                p.append("%s: ConsumedQuantity %s != PricingQuantity %s" % (
                    k, r["ConsumedQuantity"], r["PricingQuantity"]))
        for k in sorted(set(diff) - set(got)):
            p.append("missing correction %s: BilledCost %s, quantity %s (expected %s - frozen %s)"
                     % (k, diff[k][0], diff[k][1], want_full.get(k, zero)[0],
                        frozen.get(k, zero)[0]))
        for k in sorted(set(got) - set(diff)):
            p.append("correction row for an unchanged key %s (BilledCost %s)" % (
                k, got[k]["BilledCost"]))
        qp = []
        for k in sorted(set(got) & set(diff)):
            r = got[k]
            if dec(r["BilledCost"]) != diff[k][0]:
                p.append("%s BilledCost %s, expected %s (= %s - frozen %s)" % (
                    k, r["BilledCost"], diff[k][0], want_full.get(k, zero)[0],
                    frozen.get(k, zero)[0]))
            if dec(r["ConsumedQuantity"]) != diff[k][1]:
                qp.append("%s ConsumedQuantity %s, expected %s (= recomputed %s - frozen %s, "
                          "both rounded to 9 decimals)" % (
                              k, r["ConsumedQuantity"], diff[k][1], want_full.get(k, zero)[1],
                              frozen.get(k, zero)[1]))
        cost_keys = sum(1 for v in diff.values() if v[0] != 0)
        tap.check("late: %d correction rows in %s: BilledCost = expected(complete) - frozen per "
                  "FOCUS key (%d keys changed, %d of them in cost), ChargeClass=Correction, "
                  "x_CorrectedPeriod=%s, November ChargePeriod, December BillingPeriod"
                  % (len(corr), DEC, len(diff), cost_keys, NOV), p)
        tap.check("late: correction ConsumedQuantity (GB-hours) = recomputed - frozen (specification: Arithmetic "
                  "\"recomputed - frozen, both rounded\": frozen + corrections = recomputed)", qp)
        if not corr:
            tap.note("the engine wrote no correction rows at all")
        # per team: frozen + corrections = expected complete November
        p = []
        fz, cs = {}, {}
        for k, (c, _) in frozen.items():
            fz[k[0]] = fz.get(k[0], Decimal(0)) + c
        for r in corr:
            cs[r["SubAccountId"]] = cs.get(r["SubAccountId"], Decimal(0)) + dec(r["BilledCost"])
        summary = []
        for team in sorted(set(fz) | set(cs) | set(self.exp_full_nov["invoices"])):
            want = dec(self.exp_full_nov["invoices"].get(team, {}).get("total", "0"))
            got_t = fz.get(team, Decimal(0)) + cs.get(team, Decimal(0))
            summary.append("%s %s + %s = %s" % (team, fz.get(team, 0), cs.get(team, 0), got_t))
            if got_t != want:
                p.append("%s: frozen %s + corrections %s = %s, expected complete total %s" % (
                    team, fz.get(team, 0), cs.get(team, 0), got_t, want))
        tap.check("late: frozen %s + corrections = expected complete %s total per team, to the "
                  "cent (%s)" % (NOV, NOV, ", ".join(summary)), p)
        return cs

    def focus_conformance(self):
        """The FinOps Foundation's FOCUS rules (focus_check.py) on the closed
        November (the CSV it was closed with, 1.2; asked for 1.3 it is
        rendered from its frozen figures) and on December with its correction rows, FOCUS 1.2
        and 1.3, each with its metadata; and on the files `run` wrote
        (DIR/<period>/focus-*.csv)."""
        tap = self.tap
        d = self.path("out-focus")
        os.makedirs(d, exist_ok=True)
        focus_check.export_and_check(tap, self.engine, self.cfg, self.db, NOV,
                                     os.path.join(d, NOV), "run-month closed " + NOV,
                                     versions=("1.2",), closed_version="1.2")
        rc, out, err = self.eng("export", "--period", NOV, "--focus-version", "1.3")
        rc0, out0, _ = self.eng("export", "--period", NOV)
        tap.check("FOCUS 1.3 of the closed %s (frozen as 1.2): rendered from its figures, "
                  "the 1.3 header, as many rows as 1.2" % NOV,
                  [] if rc == 0 and rc0 == 0 and
                  "ServiceProviderName" in out.split("\n", 1)[0] and
                  out.count("\n") == out0.count("\n") > 1
                  else ["exit %s, %d lines (1.2: %d): %s" % (rc, out.count("\n"),
                                                             out0.count("\n"), tail(err))])
        texts = focus_check.export_and_check(tap, self.engine, self.cfg, self.db, DEC,
                                             os.path.join(d, DEC),
                                             "run-month %s (corrections)" % DEC)
        for period in (NOV, DEC):
            f = os.path.join(self.out, period, "focus-%s.csv" % period)
            if os.path.isfile(f):
                focus_check.check_file(tap, "run-month run output", f, "1.2")
            else:
                tap.fail("FOCUS conformance: run-month run output", "no %s" % f)
        p = []
        for v, text in sorted(texts.items()):
            if text is not None and not any(is_correction(r) for r in parse_focus(text)):
                p.append("the %s FOCUS %s export has no correction rows" % (DEC, v))
        tap.check("late: the FOCUS-checked %s exports (1.2, 1.3) hold correction rows" % DEC, p)

    def dec_invoice_checks(self, exp_dec, dec_rows, corr_sum):
        tap = self.tap
        try:
            doc = json.loads(self.invoice_json(DEC))
        except (RuntimeError, ValueError) as e:
            tap.fail("late: %s invoices" % DEC, e)
            return
        invs = invoices_of_doc(doc)
        p = invoice_problems(invs, exp_dec, corrections_allowed=True)
        # correction lines: per line = the sum of its FOCUS correction rows
        rows_by_line = {}
        for r in dec_rows:
            if is_correction(r):
                lk = row_key(r)[:5]
                rows_by_line[lk] = rows_by_line.get(lk, Decimal(0)) + dec(r["BilledCost"])
        seen = set()
        for team, inv in invs.items():
            tot = Decimal(0)
            for l in inv.get("lines", []):
                if l.get("charge_class") != "Correction":
                    continue
                lk = (team, l["cluster"], l["gpu_model"], l["kind"], l["price_id"])
                seen.add(lk)
                tot += dec(l["amount"])
                if l.get("corrected_period") != NOV:
                    p.append("%s: correction line corrected_period %r" % (
                        lk, l.get("corrected_period")))
                if dec(l["amount"]) != rows_by_line.get(lk, Decimal(0)):
                    p.append("%s: correction line amount %s, its FOCUS rows sum to %s" % (
                        lk, l["amount"], rows_by_line.get(lk, Decimal(0))))
            if tot != corr_sum.get(team, Decimal(0)):
                p.append("%s: correction lines sum to %s, FOCUS correction rows to %s" % (
                    team, tot, corr_sum.get(team, Decimal(0))))
        for lk in sorted(set(rows_by_line) - seen):
            p.append("FOCUS correction rows of %s have no \"charge_class\": \"Correction\" "
                     "invoice line" % (lk,))
        totals = ", ".join("%s %s" % (t, i.get("total")) for t, i in sorted(invs.items()))
        tap.check("late: %s invoices = generator + \"charge_class\": \"Correction\" lines "
                  "matching the correction rows (%s)" % (DEC, totals), p)

    # ---- 2. SIGKILL
    def sigkill(self):
        tap, a = self.tap, self.a
        now = "2026-12-01T06:00:00Z"
        ref_db, ref_out = self.path("ref.db"), self.path("out-ref")
        t0 = time.time()
        if not self.run_step("sigkill: uninterrupted reference run --now %s into a fresh "
                             "database" % now, now, db=ref_db, out=ref_out):
            return
        d_ref = time.time() - t0
        exp_dec = expected_for(self.full, "2026-12-01T00:00:00Z", "2026-12-01T05:00:00Z", DEC)
        p = self.outputs_problems(ref_out, NOV, self.exp_full_nov)
        p += self.outputs_problems(ref_out, DEC, exp_dec)
        tap.check("sigkill: the reference run's outputs = generator (complete data; %.2fs)"
                  % d_ref, p)
        self.ref_db = ref_db

        db, out = self.path("kill.db"), self.path("out-kill")
        rng = random.Random(a.seed)
        kills = finished = attempts = 0
        est = max(d_ref / 2, 0.2)   # most early kills land inside the first collection
        bad_integrity, bad_exit, points = [], [], []
        cmd = self.engine.cmd(self.cfg, db, "run", "--out", out, "--now", now)
        while kills < a.kills and attempts < 3 * a.kills:
            attempts += 1
            delay = rng.uniform(0.0, est)
            t1 = time.time()
            proc = subprocess.Popen(cmd, cwd=self.work, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    env=CHILD_ENV)
            try:
                _, err = proc.communicate(timeout=delay)
                finished += 1
                err = err.decode("utf-8", "replace")
                self.engine.record(cmd, proc.returncode, time.time() - t1, err)
                ok, _ = run_accepted(proc.returncode, err)
                if not ok:
                    bad_exit.append("attempt %d: exit %s: %s" % (attempts, proc.returncode,
                                                                  tail(err, 200)))
                est = max(time.time() - t1, 0.05)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.communicate()
                kills += 1
                self.engine.record(cmd, "SIGKILL", time.time() - t1, "(killed after %.3fs)"
                                   % delay)
                res = integrity(db) if os.path.exists(db) else "ok (no database yet)"
                if not res.startswith("ok"):
                    bad_integrity.append("kill %d at %.3fs: %s" % (kills, delay, tail(res, 200)))
                points.append("%.2fs->%s" % (delay, watermark(db)[5:16]
                                             if os.path.exists(db) else "no db"))
        tap.note("sigkill: %d kills, %d runs finished before their kill time (seed %d); "
                 "kill delay -> watermark: %s" % (kills, finished, a.seed, " ".join(points)))
        p = list(bad_integrity)
        if kills < a.kills:
            p.append("only %d kills landed in %d attempts" % (kills, attempts))
        tap.check("sigkill: PRAGMA integrity_check = ok after each of %d SIGKILLs" % kills, p)
        if bad_exit:
            tap.check("sigkill: runs that finished before their kill succeeded", bad_exit)
        if not self.run_step("sigkill: final uninterrupted run after the kills", now,
                             db=db, out=out):
            return
        res = integrity(db)
        p = [] if res == "ok" else ["integrity_check: %s" % tail(res, 200)]
        for period in (NOV, DEC):
            try:
                if self.export(period, db=db) != self.export(period, db=ref_db):
                    p.append("export --period %s differs from the reference" % period)
                ki = json.loads(self.invoice_json(period, db=db))
                ri = json.loads(self.invoice_json(period, db=ref_db))
                if ki != ri:
                    kt = {i["team"]: i["total"] for i in ki.get("invoices", [])}
                    rt = {i["team"]: i["total"] for i in ri.get("invoices", [])}
                    p.append("invoice --period %s --format json differs from the reference "
                             "(totals %s vs %s)" % (period, kt, rt))
            except (RuntimeError, ValueError) as e:
                p.append(str(e))
        ref_files = tree_digest(ref_out, skip=("%s/reports" % NOV, "%s/reports" % DEC))
        kill_files = tree_digest(out, skip=("%s/reports" % NOV, "%s/reports" % DEC))
        for f in sorted(ref_files):
            if f not in kill_files:
                p.append("output %s missing after the kills" % f)
            elif kill_files[f] != ref_files[f]:
                p.append("output %s differs from the reference" % f)
        extra = sorted(set(kill_files) - set(ref_files))
        if extra:
            tap.note("sigkill: files left in the output folder by killed runs: %s"
                     % ", ".join(extra[:10]))
        tap.check("sigkill: after %d kills, invoices (JSON), FOCUS exports, summaries and "
                  "output files are identical to the uninterrupted run's" % kills, p)

    # ---- 3. lock
    def lock(self):
        tap = self.tap
        db = getattr(self, "ref_db", None) or self.db
        lockf = db + ".lock"
        now = "2026-12-01T06:00:00Z"
        holder = subprocess.Popen(["flock", lockf, "sleep", "60"], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        self.held.append(holder)
        deadline = time.time() + 10
        while time.time() < deadline and not lock_held(lockf):
            time.sleep(0.02)
        if not lock_held(lockf):
            tap.fail("lock: flock %s holds the lock" % os.path.basename(lockf),
                     "/proc/locks shows no lock on it")
            return
        dbdir = os.path.dirname(db)

        def db_state():
            return ({f: file_digest(os.path.join(dbdir, f)) for f in os.listdir(dbdir)
                     if f.startswith(os.path.basename(db)) and not f.endswith(".lock")},
                    sorted(os.listdir(dbdir)))
        before = db_state()
        lock_out = self.path("out-locked")
        cases = [("run", ("run", "--out", lock_out, "--now", now)),
                 ("collect", ("collect", "--from", "2026-11-30T00:00:00Z",
                              "--to", "2026-11-30T06:00:00Z")),
                 ("close", ("close", "--period", NOV, "--now", "2026-12-01T03:00:00Z"))]
        for name, args in cases:
            rc, _, err = self.eng(*args, db=db)
            p = []
            if rc != 6:
                p.append("%s: exit %s, expected 6: %s" % (
                    shown(self.engine.cmd(self.cfg, db, *args)), rc, tail(err)))
            if lockf not in err:
                p.append("stderr does not name the lock file %s: %s" % (lockf, tail(err, 300)))
            if os.path.exists(lock_out):
                p.append("the output folder %s was created" % lock_out)
            after = db_state()
            if after != before:
                p.append("the database files changed: %s -> %s" % (before, after))
                before = after
            tap.check("lock: `%s` while `flock DB.lock sleep` holds the lock -> exit 6 naming "
                      "the lock file, nothing written" % name, p)
        os.killpg(holder.pid, signal.SIGTERM)
        holder.wait()
        self.run_step("lock: `run` succeeds once the lock is released", now, db=db,
                      out=self.path("out-after-lock"))

        # a real run holding the lock
        cdb = self.path("concurrent.db")
        cmd_a = self.engine.cmd(self.cfg, cdb, "run", "--out", self.path("out-conc-a"),
                                "--now", now)
        t1 = time.time()
        pa = subprocess.Popen(cmd_a, cwd=self.work, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=CHILD_ENV,
                              start_new_session=True)
        self.held.append(pa)
        deadline = time.time() + 10
        while time.time() < deadline and pa.poll() is None and not lock_held(cdb + ".lock"):
            time.sleep(0.005)
        p = []
        if pa.poll() is not None or not lock_held(cdb + ".lock"):
            p.append("the first run never held the lock (exit %s)" % pa.poll())
        else:
            out_b = self.path("out-conc-b")
            rc, _, err = self.eng("run", "--out", out_b, "--now", now, db=cdb)
            still = pa.poll() is None
            if rc != 6:
                p.append("second run: exit %s, expected 6: %s" % (rc, tail(err)))
            if cdb + ".lock" not in err:
                p.append("second run's message does not name %s.lock: %s" % (cdb, tail(err, 300)))
            if os.path.exists(out_b):
                p.append("second run created its output folder")
            if not still and rc != 6:
                p.append("(the first run had already finished)")
        _, err_a = pa.communicate()
        err_a = err_a.decode("utf-8", "replace")
        self.engine.record(cmd_a, pa.returncode, time.time() - t1, err_a)
        ok, _ = run_accepted(pa.returncode, err_a)
        if not ok:
            p.append("first run: exit %s: %s" % (pa.returncode, tail(err_a)))
        tap.check("lock: a second `run` while a real `run` holds the lock -> exit 6, nothing "
                  "written; the first completes", p)

    def main(self):
        tap, a = self.tap, self.a
        # a reused --work directory starts clean (only what this script writes)
        for f in os.listdir(self.work):
            if f.startswith(WORK_PREFIXES):
                path = self.path(f)
                if os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
        if not (os.path.isfile(a.bin) and os.access(a.bin, os.X_OK)):
            tap.fail("engine binary present", "%s is missing or not executable" % a.bin)
            return
        missing = [t for t in ("promtool", "prometheus", "flock")
                   if not shutil.which(t)]
        if missing:
            tap.fail("tools present", "%s not found on PATH" % ", ".join(missing))
            return
        self.engine = harness.Engine(os.path.abspath(a.bin), self.work, timeout=ENGINE_TIMEOUT)
        if not self.generate() or not self.backfill():
            return
        self.prom = harness.Prometheus(self.work, self.tsdb, lookback="299s")
        t0 = time.time()
        try:
            self.prom.start(attempts=4)
        except RuntimeError as e:
            tap.fail("prometheus ready", e)
            return
        tap.note("prometheus ready on %s (%.1fs)" % (self.prom.url(), time.time() - t0))
        self.write_config()
        if not self.served(False):
            return
        for name, step in (("late data and close", self.late_data),
                           ("SIGKILL", self.sigkill), ("lock", self.lock)):
            t0 = time.time()
            try:
                step()
            except (RuntimeError, OSError, ValueError, KeyError) as e:
                import traceback
                tap.fail("%s: driver" % name, "%s: %s" % (type(e).__name__, e))
                for line in traceback.format_exc().splitlines()[-6:]:
                    tap.note(line)
            tap.note("%s: %.1fs" % (name, time.time() - t0))


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--seed", type=int, default=4, help="seed of the SIGKILL delays")
    ap.add_argument("--kills", type=int, default=15, help="number of SIGKILLs")
    return harness.run_driver(RunTest, ap.parse_args(), harness.Tap(), "run test",
                              "gpuledger-runtest-", fresh=False)


if __name__ == "__main__":
    sys.exit(main())
