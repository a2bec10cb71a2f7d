#!/usr/bin/env python3
"""autoclose_test.py - month end without a person: `run` with close.auto.

Usage: python3 tests/integration/autoclose_test.py --bin build/gpuledger [--work DIR] [--keep]

Data: tests/integration/scenarios/run-month.json (November 2026, cluster
gpu-prod-eu), its data extended to 2026-12-06 (so that no run here finds its
cluster silent), from tests/gen/gencluster.py, backfilled into a
real Prometheus (promtool, --max-block-duration=768h; the admin API on, to
delete series). Every run is given its clock (--now). run.delay_minutes is
30 and close.settle_hours 48 (the default), so November is due once run
collects up to 2026-12-03T00:00Z: at --now 2026-12-03T00:30Z, not at
2026-12-03T00:00Z (worked out here, never read from the engine).

  default-off  without close.auto, a run past the settle delay leaves
               November open
  once         with close.auto: runs at 2026-12-02T12:00Z and 2026-12-03T00:00Z
               leave November open and report nothing; the run at 00:30Z
               closes it (closed_at = that run's clock), its invoices final
               with the generator's totals, its output folder FINAL; two
               later runs leave the one closed_period row and its closed_at
               as they were and log no second close
  blocked      run.start 2026-11-02: November lacks its first 24 h; two runs
               past the delay exit 0, leave it open, log an error naming
               the period and the range, and write
               gpuledger_period_close_blocked{cluster,period="2026-11"} 1 to
               the metrics textfile; once the hole is collected the next run
               closes it and the series is gone
  kill         20 runs SIGKILLed at random points (seeded) of the run that
               closes November (run.repull_hours 1: the close is most of
               it): after each, November is wholly open (no closed_period,
               frozen_* or closed_gap row) or wholly closed (closed_period,
               frozen invoices and rows), `invoice` prints it, and a run to
               the end leaves it closed once with the reference invoices
  refused      a re-pull by run of six hours deleted from Prometheus is
               refused by the shrink guard (exit 5): the hours are recorded
               as refused, and the due November is reported blocked naming
               them
  rules        promtool test rules of examples/monitoring (the
               GpuledgerPeriodCloseBlocked alert fires for the blocking
               cluster only)
"""

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gen"))
import gencluster as gc  # noqa: E402
import harness  # noqa: E402
import ledger_db  # noqa: E402
from period_test import AdminPrometheus  # noqa: E402

SCENARIO = os.path.join(HERE, "scenarios", "run-month.json")
MON = os.path.join(REPO, "examples", "monitoring")
CLUSTER = "gpu-prod-eu"
NOV = "2026-11"
BEFORE = "2026-12-03T00:00:00Z"  # collects up to 2026-12-02T23:00Z: not yet due
DUE = "2026-12-03T00:30:00Z"     # collects up to 2026-12-03T00:00Z = end + 48 h
KILLS = 20
DATA_END = "2026-12-06T00:00:00Z"
BLOCKED_RE = re.compile(r'^gpuledger_period_close_blocked\{cluster="([^"]*)",period="([^"]*)"\} '
                        r'(\S+)$', re.M)


def ts(s):
    return int(datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
               .timestamp())


def later(s, hours):
    t = ts(s) + hours * 3600
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Autoclose(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = None
        self.eng = harness.Engine(args.bin, args.work)

    def cleanup(self):
        if self.prom:
            self.prom.stop()

    def config(self, name, **over):
        """A config file: the scenario's, close.auto on unless auto=None,
        the metrics textfile beside it; over deep-merged."""
        cfg = self.gen.run_config()
        cfg["prometheus"]["url"] = self.prom.url()
        cfg["prices"]["file"] = self.path("prices.csv")
        cfg.setdefault("collection", {})["queries_dir"] = os.path.join(REPO, "queries")
        auto = over.pop("auto", True)
        if auto is not None:
            cfg["close"] = {"auto": auto}
        cfg["metrics"] = {"textfile": self.path(name + ".prom")}
        gc.deep_merge(cfg, over)
        path = self.path(name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
        return path

    def run(self, cfg, db, now):
        return self.eng.run(cfg, db, "run", "--now", now, "--out", db + ".out")

    def closed(self, db):
        return ledger_db.closes(db)

    def blocked_series(self, cfg):
        try:
            with open(cfg[:-len(".json")] + ".prom") as f:
                return BLOCKED_RE.findall(f.read())
        except FileNotFoundError:
            return None

    def main(self):
        if not self.setup():
            return
        self.default_off()
        self.once()
        self.blocked()
        self.kill_loop()
        self.rules()
        self.refused()  # last: it deletes data from Prometheus

    def setup(self):
        tap = self.tap
        missing = [t for t in ("promtool", "prometheus") if not shutil.which(t)]
        if missing:
            tap.fail("autoclose tools", "missing %s" % ", ".join(missing))
            return False
        with open(SCENARIO, encoding="utf-8") as f:
            scn = json.load(f)
        # the same workloads a few days longer: every run here finds samples
        # in its new hours (run is loud when a cluster's data stop)
        scn["end"] = DATA_END
        self.gen = gc.Cluster(scn, os.path.dirname(SCENARIO))
        om = self.path("data.om")
        with open(om, "w", encoding="utf-8", newline="\n") as f:
            self.gen.write_openmetrics(f)
        with open(self.path("prices.csv"), "w", encoding="utf-8", newline="") as f:
            f.write(self.gen.prices_csv())
        tsdb = self.path("tsdb")
        rc, out = harness.backfill(om, tsdb, self.work, ["--max-block-duration=768h"])
        if rc != 0:
            tap.fail("promtool backfill", harness.tail(out))
            return False
        self.prom = AdminPrometheus(self.work, tsdb, lookback="299s")
        self.prom.start(attempts=4)
        self.exp = self.gen.expected()  # November, the generator's own figures
        tap.setup("Prometheus %s over the run-month data" % self.prom.url())
        return True

    def must_run(self, cfg, db, now, want_rc=0):
        rc, out, err = self.run(cfg, db, now)
        if rc != want_rc:
            raise RuntimeError("run --now %s: exit %d: %s" % (now, rc, harness.tail(err)))
        return err

    # ---- default off
    def default_off(self):
        cfg = self.config("off", auto=None)
        db = self.path("off.db")
        rc, _, err = self.run(cfg, db, DUE)
        p = [] if rc == 0 else ["exit %d: %s" % (rc, harness.tail(err))]
        if self.closed(db):
            p.append("closed: %s" % self.closed(db))
        self.tap.check("without close.auto (engine default off), run at %s leaves November open"
                       % DUE, p)

    # ---- exactly once, after the settle delay
    def invoices_final(self, db):
        """Problems of November's invoices: final, totals the generator's."""
        rc, out, err = self.eng.run(self.cfg, db, "invoice", "--period", NOV)
        if rc != 0:
            return ["invoice: exit %d: %s" % (rc, harness.tail(err))]
        got = {i["team"]: i for i in json.loads(out)["invoices"]}
        p = []
        want = {t: Decimal(i["total"]) for t, i in self.exp["invoices"].items()}
        if set(got) != set(want):
            p.append("teams %s, want %s" % (sorted(got), sorted(want)))
        for team, inv in got.items():
            if inv.get("status") != "final":
                p.append("%s: status %s" % (team, inv.get("status")))
            if team in want and Decimal(inv["total"]) != want[team]:
                p.append("%s: total %s, generator %s" % (team, inv["total"], want[team]))
        return p

    def once(self):
        tap = self.tap
        self.cfg = cfg = self.config("auto")
        db = self.path("auto.db")
        p = []
        for now in ("2026-12-02T12:00:00Z", BEFORE):
            err = self.must_run(cfg, db, now)
            if self.closed(db):
                p.append("closed at --now %s: %s" % (now, self.closed(db)))
            if "period due for closing" in err or self.blocked_series(cfg):
                p.append("reported blocked at --now %s: %s" % (now, harness.tail(err)))
        tap.check("close.auto: runs before the settle delay (%s and before) leave November "
                  "open and report nothing" % BEFORE, p)
        err = self.must_run(cfg, db, DUE)
        p = []
        if self.closed(db) != [(NOV, ts(DUE))]:
            p.append("closed periods %s, want [(%s, %d)]" % (self.closed(db), NOV, ts(DUE)))
        if "closed period=%s" % NOV not in err:
            p.append("no 'closed period=%s' line: %s" % (NOV, harness.tail(err)))
        p += self.invoices_final(db)
        tap.check("the run at %s closes November (closed_at its clock), final invoices with "
                  "the generator's totals" % DUE, p)
        p = []
        inv_dir = os.path.join(db + ".out", NOV, "invoices")
        try:
            files = [f for f in os.listdir(inv_dir) if f.endswith(".md")]
        except FileNotFoundError:
            files = []
        if not files:
            p.append("no Markdown invoices in %s" % inv_dir)
        for f in files:
            with open(os.path.join(inv_dir, f), encoding="utf-8") as h:
                text = h.read()
            if "FINAL" not in text or "DRAFT" in text:
                p.append("%s does not say FINAL only" % f)
        tap.check("the run that closed November rewrote its output folder: FINAL, not DRAFT", p)
        frozen = ledger_db.frozen_invoice_count(db, NOV)
        p = []
        for now in (later(DUE, 1), later(DUE, 24)):
            err = self.must_run(cfg, db, now)
            if self.closed(db) != [(NOV, ts(DUE))]:
                p.append("after --now %s: closed %s" % (now, self.closed(db)))
            if "closed period=" in err:
                p.append("--now %s logs a close again" % now)
        if ledger_db.frozen_invoice_count(db, NOV) != frozen:
            p.append("frozen invoices changed")
        tap.check("two later runs: November closed exactly once (one row, closed_at and frozen "
                  "invoices unchanged, no second close logged)", p)

    # ---- blocked: reported on every run, exit unchanged
    def blocked(self):
        tap = self.tap
        cfg = self.config("late", run={"start": "2026-11-02T00:00:00Z"})
        db = self.path("late.db")
        hole = "hours not collected 2026-11-01T00:00:00Z to 2026-11-02T00:00:00Z (24 h)"
        for k, now in enumerate((DUE, later(DUE, 1))):
            rc, _, err = self.run(cfg, db, now)
            p = [] if rc == 0 else ["exit %d, want 0 (a blocked month leaves it): %s"
                                    % (rc, harness.tail(err))]
            if self.closed(db):
                p.append("closed %s" % self.closed(db))
            lines = [ln for ln in err.splitlines() if "period due for closing" in ln]
            if not lines:
                p.append("no log line about the due month: %s" % harness.tail(err))
            for ln in lines:
                flat = " ".join(ln.split())
                for w in (" error period due", "period=%s" % NOV, "cluster %s" % CLUSTER, hole):
                    if w not in flat:
                        p.append("the line does not say %r: %s" % (w, harness.tail(flat, 500)))
            got = self.blocked_series(cfg)
            if got != [(CLUSTER, NOV, "1")]:
                p.append("textfile series %s, want %s" % (got, [(CLUSTER, NOV, "1")]))
            tap.check("run %d at %s with November's first day never collected: exit 0, not "
                      "closed, an error line naming the period and the 24 h, "
                      "gpuledger_period_close_blocked{cluster=%s,period=%s} 1"
                      % (k + 1, now, CLUSTER, NOV), p)
        rc, _, err = self.eng.run(cfg, db, "collect", "--from", "2026-11-01T00:00:00Z",
                                  "--to", "2026-11-02T00:00:00Z")
        if rc != 0:
            raise RuntimeError("collect of the hole: exit %d: %s" % (rc, harness.tail(err)))
        now = later(DUE, 2)
        rc, _, err = self.run(cfg, db, now)
        p = [] if rc == 0 else ["exit %d: %s" % (rc, harness.tail(err))]
        if self.closed(db) != [(NOV, ts(now))]:
            p.append("closed %s" % self.closed(db))
        if self.blocked_series(cfg):
            p.append("still blocked in the textfile: %s" % self.blocked_series(cfg))
        if "period due for closing" in err:
            p.append("still logged as blocked")
        tap.check("the hole collected: the next run closes November and the blocked series "
                  "is gone", p)

    # ---- kill loop
    def state(self, db):
        """'open' or 'closed' when November is wholly one, else a problem."""
        return ledger_db.close_state(db, NOV)

    def kill_loop(self):
        tap = self.tap
        cfg = self.config("kill", run={"repull_hours": 1})
        base = self.path("kill-base.db")
        self.must_run(cfg, base, BEFORE)
        ref = self.path("kill-ref.db")
        shutil.copy(base, ref)
        t0 = time.time()
        self.must_run(cfg, ref, DUE)
        span = time.time() - t0
        _, ref_inv, _ = self.eng.run(cfg, ref, "invoice", "--period", NOV)
        tap.setup("an uninterrupted closing run takes %.2f s" % span)
        rnd = random.Random(20261203)
        p, seen = [], {"open": 0, "closed": 0}
        for k in range(KILLS):
            db = self.path("kill-%d.db" % k)
            shutil.copy(base, db)
            for ext in ("-wal", "-shm"):
                if os.path.exists(base + ext):
                    shutil.copy(base + ext, db + ext)
            cmd = self.eng.cmd(cfg, db, "run", "--now", DUE, "--out", db + ".out")
            delay = rnd.uniform(0, span)
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    env=harness.CHILD_ENV)
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            self.eng.record(cmd, "SIGKILL after %.3fs" % delay, delay, "")
            st = self.state(db)
            if st not in seen:
                p.append("kill %d after %.3f s: %s" % (k, delay, st))
                continue
            seen[st] += 1
            rc, _, err = self.eng.run(cfg, db, "invoice", "--period", NOV)
            if rc != 0:
                p.append("kill %d (%s): invoice exit %d: %s" % (k, st, rc, harness.tail(err)))
            rc, _, err = self.run(cfg, db, DUE)
            if rc != 0:
                p.append("kill %d: the next run exits %d: %s" % (k, rc, harness.tail(err)))
            rc, inv, err = self.eng.run(cfg, db, "invoice", "--period", NOV)
            if self.state(db) != "closed" or len(self.closed(db)) != 1 or inv != ref_inv:
                p.append("kill %d: after the next run %s, closed %s, invoices %s the reference"
                         % (k, self.state(db), self.closed(db),
                            "equal to" if inv == ref_inv else "differ from"))
        tap.note("kills that left November open: %d, closed: %d" % (seen["open"],
                                                                     seen["closed"]))
        tap.check("%d SIGKILLs during the closing run: November open or closed, never half; "
                  "the next run closes it once, invoices as without the kill" % KILLS, p)

    # ---- the alert
    def rules(self):
        with open(os.path.join(MON, "gpuledger-rules-test.yaml")) as f:
            tests = f.read()
        p = [] if "alertname: GpuledgerPeriodCloseBlocked" in tests else \
            ["no test of GpuledgerPeriodCloseBlocked in gpuledger-rules-test.yaml"]
        rc, out, err = harness.run_cmd(["promtool", "test", "rules",
                                        "gpuledger-rules-test.yaml"], cwd=MON)
        if rc != 0:
            p.append("promtool test rules: exit %d: %s" % (rc, harness.tail(out + err)))
        self.tap.check("promtool test rules: GpuledgerPeriodCloseBlocked fires for the "
                       "blocking cluster, not before", p)

    # ---- refused chunks of run
    def refused(self):
        tap = self.tap
        cfg = self.config("refused")
        db = self.path("refused.db")
        self.must_run(cfg, db, "2026-12-01T06:30:00Z")  # watermark 2026-12-01T06:00Z
        a, b = "2026-11-30T00:00:00Z", "2026-11-30T06:00:00Z"
        self.prom.delete(ts(a), ts(b) - 1)
        tap.setup("deleted %s to %s from Prometheus" % (a, b))
        rc, _, err = self.run(cfg, db, DUE)  # re-pulls from 2026-11-29T06:00Z
        flat = " ".join(err.split())
        p = [] if rc == 5 else ["exit %d, want 5 (the shrink guard): %s" % (rc,
                                                                            harness.tail(err))]
        hours = ledger_db.refused_hours(db, CLUSTER)
        want = list(range(ts(a), ts(b), 3600))
        if hours != want:
            p.append("refused_hour %s, want the six hours from %s" % (hours, a))
        w = "hours whose last collection was refused or failed %s to %s (6 h)" % (a, b)
        if "period due for closing" not in flat or w not in flat:
            p.append("the blocked line does not name %r: %s" % (w, harness.tail(flat, 800)))
        if self.closed(db):
            p.append("closed %s" % self.closed(db))
        if self.blocked_series(cfg) != [(CLUSTER, NOV, "1")]:
            p.append("textfile series %s" % self.blocked_series(cfg))
        tap.check("run's re-pull refused by the shrink guard: exit 5, the six hours recorded "
                  "as refused, November reported blocked naming them", p)


def main():
    ap = harness.arguments(__doc__)
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    tap = harness.Tap()
    return harness.run_driver(lambda a, t: Autoclose(a, t), args, tap, "autoclose",
                              "gl-autoclose-")


if __name__ == "__main__":
    sys.exit(main())
