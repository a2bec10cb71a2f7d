#!/usr/bin/env python3
"""Retention and backup: `prune` and `backup` against a
database a concurrent `run` keeps writing, with a real Prometheus.

Usage: python3 tests/integration/maintain_test.py --bin build/gpuledger
                                                  [--work DIR] [--keep]

Data: tests/integration/scenarios/run-month.json (November 2026 and
December 1st). A run at T0 collects November and December 1st 00:00-05:00;
November is closed.

1. prune --dry-run --before 2026-12 lists November with as many usage rows
   as the database holds (counted here with sqlite3) and changes nothing;
   prune --before 2027-01 refuses the open December (exit 7) and deletes
   nothing.
2. Under a concurrent `run` loop (bounded: one run per hour of December 1st
   from 07:00), `backup` is taken repeatedly and `prune --before 2026-12`
   retried while the lock is held (exit 6) until it succeeds. Every backup
   opens, passes PRAGMA integrity_check and is one consistent state: for
   every collected hour it holds, its usage sums per (cluster, hour, kind)
   equal the source's after the loop (December: the final source; November:
   the source before pruning), and its watermark is not before its hours.
3. After the loop: a backup equals the source (every usage, collected hour,
   frozen row and invoice); November prints the same frozen invoices and
   FOCUS CSV as before pruning, has no usage rows left, prints the same
   summary (the daily aggregates keep its figures), and a collect of late
   data into November afterwards is refused (exit 7: new rows would count
   on top of the kept figures) and December carries no correction.
4. The database bytes per GPU-month before and after pruning (VACUUMed
   copies), printed as a note.
"""

import csv
import io
import json
import os
import shutil
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gen"))
import gencluster as gc  # noqa: E402
import harness  # noqa: E402
import ledger_db  # noqa: E402

SCENARIO = os.path.join(HERE, "scenarios", "run-month.json")
T0 = "2026-12-01T06:00:00Z"
LOOP_HOURS = range(7, 13)   # run --now 2026-12-01THH:00 for each
NOV_START, DEC_START = 1793491200, 1796083200  # 2026-11-01, 2026-12-01 (UTC)


def vacuumed_bytes(db, work, name):
    """The size of a VACUUMed copy of db (a backup taken with sqlite3)."""
    dst = os.path.join(work, name)
    if os.path.exists(dst):
        os.unlink(dst)
    ledger_db.vacuum_into(db, dst)
    return os.path.getsize(dst)


class MaintainTest(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = None
        self.engine = harness.Engine(args.bin, args.work)

    def cleanup(self):
        if self.prom:
            self.prom.stop()

    def gl(self, *args, db=None, cfg=None):
        return self.engine.run(cfg or self.cfg, db or self.db, *args)

    def setup(self):
        tap = self.tap
        with open(SCENARIO, encoding="utf-8") as f:
            scn = json.load(f)
        gen = gc.Cluster(scn, os.path.dirname(SCENARIO))
        om = self.path("data.om")
        with open(om, "w", encoding="utf-8", newline="\n") as f:
            gen.write_openmetrics(f)
        with open(self.path("prices.csv"), "w", encoding="utf-8", newline="") as f:
            f.write(gen.prices_csv())
        tsdb = self.path("tsdb")
        rc, out = harness.backfill(om, tsdb, self.work, ["--max-block-duration=768h"])
        if not tap.check("promtool backfill", [] if rc == 0 else [harness.tail(out)]):
            return False
        self.prom = harness.Prometheus(self.work, tsdb, lookback="299s")
        self.prom.start(attempts=4)
        # November, collected whole by the run at T0, closes at T0 (6 hours
        # after its end): no settle delay
        cfg = gen.run_config({"run": {"repull_hours": 2, "start": "2026-11-01T00:00:00Z"},
                              "close": {"settle_hours": 0}})
        cfg["prometheus"]["url"] = self.prom.url()
        cfg["prices"]["file"] = self.path("prices.csv")
        cfg.setdefault("collection", {})["queries_dir"] = os.path.join(REPO, "queries")
        self.cfg = self.path("gpuledger.json")
        self.cfg_doc = cfg
        with open(self.cfg, "w") as f:
            json.dump(cfg, f, indent=2)
        self.db = self.path("gpuledger.db")
        self.out = self.path("out")
        rc, _, err = self.gl("run", "--out", self.out, "--now", T0)
        rc2, _, err2 = self.gl("close", "--period", "2026-11", "--now", T0)
        return tap.check("run --now %s, close --period 2026-11" % T0,
                         ([] if rc == 0 else ["run exit %s: %s" % (rc, harness.tail(err))]) +
                         ([] if rc2 == 0 else ["close exit %s: %s" % (rc2, harness.tail(err2))]))

    def conventions(self):
        """--version, the completion file, the LICENSE against the labels."""
        tap = self.tap
        rc, out, _ = harness.run_cmd([self.args.bin, "--version"], 30)
        tap.check("--version prints the version and the git commit",
                  [] if rc == 0 and __import__("re").match(
                      r"^gpuledger \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\)$",
                      out.strip()) else ["exit %s: %r" % (rc, out)])
        rc, out, _ = harness.run_cmd([self.args.bin, "--completion", "bash"], 30)
        path = os.path.join(REPO, "examples", "completion", "gpuledger.bash")
        with open(path, encoding="utf-8") as f:
            committed = f.read()
        p = [] if rc == 0 else ["exit %s" % rc]
        if committed != out:
            p.append("%s differs from `gpuledger --completion bash` (regenerate it)" % path)
        for cmd in ("prune", "backup", "run", "collect"):
            if " %s" % cmd not in out:
                p.append("no command %s" % cmd)
        tap.check("the bash completion file is the command table's", p)
        p = []
        with open(os.path.join(REPO, "LICENSE"), encoding="utf-8") as f:
            lic = f.read()
        if "Apache License" not in lic or "Version 2.0, January 2004" not in lic:
            p.append("LICENSE is not the Apache License 2.0 text")
        for rel, want in (("examples/Dockerfile", 'org.opencontainers.image.licenses="Apache-2.0"'),
                          ("charts/gpuledger/Chart.yaml", "licenses: Apache-2.0"),
                          ("meson.build", "license: 'Apache-2.0'")):
            with open(os.path.join(REPO, rel), encoding="utf-8") as f:
                if want not in f.read():
                    p.append("%s does not say %s" % (rel, want))
        tap.check("LICENSE matches the image label, the chart and meson.build (Apache-2.0)", p)

    def env_rule(self):
        """GPULEDGER_PROMETHEUS_URL fills prometheus.url when the file leaves
        it out; the file's value wins when both are given."""
        tap = self.tap
        doc = json.loads(json.dumps(self.cfg_doc))
        del doc["prometheus"]["url"]
        bare = self.path("no-url.json")
        with open(bare, "w") as f:
            json.dump(doc, f)
        doc["prometheus"]["url"] = "http://127.0.0.1:%d" % harness.free_port()
        other = self.path("other-url.json")
        with open(other, "w") as f:
            json.dump(doc, f)
        env = dict(harness.CHILD_ENV, GPULEDGER_PROMETHEUS_URL=self.prom.url())
        p = []
        rc, _, err = harness.run_cmd([self.args.bin, "--config", bare, "--db", self.db, "check",
                                      "--at", T0], 120)
        if rc != 3 or "prometheus.url" not in err:
            p.append("without the variable: exit %s, not 3 naming prometheus.url: %s" % (
                rc, harness.tail(err, 200)))
        rc, out, err = harness.run_cmd([self.args.bin, "--config", bare, "--db", self.db,
                                        "check", "--at", T0], 120, env=env)
        if rc != 0 or self.prom.url() not in out:
            p.append("with it: exit %s (%s)" % (rc, harness.tail(err or out, 200)))
        rc, out, err = harness.run_cmd([self.args.bin, "--config", other, "--db", self.db,
                                        "check", "--at", T0], 120, env=env)
        if rc == 0 or doc["prometheus"]["url"] not in out + err:
            p.append("file and variable: exit %s, the file's URL not used: %s" % (
                rc, harness.tail(out + err, 200)))
        tap.check("GPULEDGER_PROMETHEUS_URL fills a missing prometheus.url; the file wins", p)

    def main(self):
        tap = self.tap
        self.conventions()
        if not self.setup():
            return
        self.env_rule()
        db = self.db
        nov = (NOV_START, DEC_START)
        nov_rows = ledger_db.usage_count(db, *nov)
        nov_sums = ledger_db.usage_sums(db, *nov)
        gpus = ledger_db.whole_gpus(db)
        rc, inv_before, _ = self.gl("invoice", "--period", "2026-11")
        rc2, csv_before, _ = self.gl("export", "--period", "2026-11")
        _, sum_before, _ = self.gl("summary", "--period", "2026-11", "--format", "json")
        bytes_before = vacuumed_bytes(db, self.work, "before.db")
        # 1. dry run, open period refused
        all_rows = ledger_db.usage_count(db)
        rc, out, err = self.gl("prune", "--before", "2026-12", "--dry-run")
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        if "period 2026-11: %d usage rows" % nov_rows not in out:
            p.append("does not list 2026-11 with %d rows: %s" % (nov_rows, harness.tail(out)))
        if ledger_db.usage_count(db) != all_rows:
            p.append("the dry run deleted rows")
        tap.check("prune --dry-run lists November (%d usage rows) and changes nothing" % nov_rows,
                  p)
        rc, out, err = self.gl("prune", "--before", "2027-01")
        p = [] if rc == 7 else ["exit %s, not 7" % rc]
        if "2026-12 is not closed" not in err:
            p.append("stderr: %s" % harness.tail(err, 300))
        if ledger_db.usage_count(db) != all_rows:
            p.append("rows were deleted")
        tap.check("prune --before 2027-01 refuses the open December and deletes nothing", p)
        # 2. under a concurrent run loop
        runs, stop = [], threading.Event()
        self.locked_runs = 0

        def loop():
            for h in LOOP_HOURS:
                for _ in range(50):   # locked by prune (exit 6): the next CronJob tick
                    r = self.gl("run", "--out", self.out, "--now", "2026-12-01T%02d:00:00Z" % h)
                    if r[0] != 6:
                        break
                    self.locked_runs += 1
                    time.sleep(0.1)
                runs.append(r[0])
            stop.set()

        t = threading.Thread(target=loop)
        t.start()
        backups, prune_tries, pruned = [], 0, False
        while not stop.is_set() or not pruned:
            if len(backups) < 8:
                b = self.path("backup-%d.db" % len(backups))
                rc, _, err = self.gl("backup", "--to", b)
                backups.append((b, rc, err, bool(pruned)))
            if not pruned and prune_tries < 200:
                prune_tries += 1
                rc, out, err = self.gl("prune", "--before", "2026-12")
                if rc == 0:
                    pruned = out
                elif rc != 6:
                    pruned = "prune exit %s: %s" % (rc, harness.tail(err))
            if prune_tries >= 200 and not pruned:
                break
            time.sleep(0.05)
        t.join()
        p = ["run exit %s" % r for r in runs if r != 0]
        if not isinstance(pruned, str) or not pruned.startswith("pruned period 2026-11"):
            p.append("prune did not succeed: %r" % pruned)
        tap.check("%d runs (%d retried after exit 6 while prune held the lock), prune (after %d "
                  "tries) and %d backups concurrently" % (len(runs), self.locked_runs,
                                                          prune_tries, len(backups)), p)
        final = ledger_db.usage_sums(db)
        p = []
        for b, rc, err, after_prune in backups:
            if rc != 0:
                p.append("%s: exit %s: %s" % (os.path.basename(b), rc, harness.tail(err, 200)))
                continue
            if ledger_db.integrity(b) != "ok":
                p.append("%s: integrity_check fails" % b)
            got = ledger_db.usage_sums(b)
            for (c, h, k), q in got.items():
                ref = nov_sums if h < DEC_START else final
                if ref.get((c, h, k)) != q:
                    p.append("%s: %s %s %s = %s, the source's %s" % (
                        os.path.basename(b), c, h, k, q, ref.get((c, h, k))))
                    break
            wm = ledger_db.lowest_watermark(b)
            last = ledger_db.last_usage_hour(b)
            if wm is None or (last is not None and last >= wm):
                p.append("%s: usage at %s beyond the watermark %s" % (os.path.basename(b), last,
                                                                      wm))
        tap.check("every backup taken during the runs opens and is one consistent state "
                  "(%d backups)" % len(backups), p)
        # 3. after the loop
        b = self.path("backup-final.db")
        rc, _, err = self.gl("backup", "--to", b)
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        if rc == 0:
            got, want = ledger_db.backup_tables(b), ledger_db.backup_tables(db)
            p += ["table %s differs" % t for t in want if got[t] != want[t]]
        tap.check("a backup equals its source (usage, hours, frozen rows and invoices)", p)
        rc, inv_after, _ = self.gl("invoice", "--period", "2026-11")
        rc2, csv_after, _ = self.gl("export", "--period", "2026-11")
        p = []
        if inv_after != inv_before or rc != 0:
            p.append("invoices of 2026-11 changed (exit %s)" % rc)
        if csv_after != csv_before or rc2 != 0:
            p.append("FOCUS CSV of 2026-11 changed (exit %s)" % rc2)
        left = ledger_db.usage_count(db, *nov)
        if left:
            p.append("%d November usage rows left" % left)
        rc, sum_after, err = self.gl("summary", "--period", "2026-11", "--format", "json")
        if rc != 0 or sum_after != sum_before:
            p.append("summary of the pruned period differs from before pruning (exit %s): %s"
                     % (rc, harness.tail(err, 200)))
        tap.check("pruned November prints its frozen invoices and CSV, and the same summary "
                  "(from the daily aggregates)", p)
        # late data for a pruned hour: refused (its old rows are gone, so new
        # rows would count on top of the figures kept), nothing changes
        rc, _, err = self.gl("collect", "--from", "2026-11-30T20:00:00Z", "--to",
                             "2026-11-30T22:00:00Z")
        rc2, csv_dec, err2 = self.gl("export", "--period", "2026-12")
        p = [] if rc == 7 and "pruned" in err else [
            "collect into pruned November: exit %s, not 7 naming the pruned hour: %s"
            % (rc, harness.tail(err))]
        p += [] if rc2 == 0 else ["export exit %s: %s" % (rc2, harness.tail(err2))]
        corrections = [r for r in csv.DictReader(io.StringIO(csv_dec))
                       if r.get("x_CorrectedPeriod") == "2026-11"]
        if rc2 == 0 and "x_CorrectedPeriod" not in csv_dec.splitlines()[0]:
            p.append("the December export has no x_CorrectedPeriod column")
        if corrections:
            p.append("December carries %d correction rows of pruned November: %s"
                     % (len(corrections), corrections[0].get("ChargeDescription")))
        _, sum_again, _ = self.gl("summary", "--period", "2026-11", "--format", "json")
        if sum_again != sum_before:
            p.append("November's summary changed after the refused collect")
        tap.check("late data into pruned November is refused and carries no correction", p)
        # 4. bytes per GPU-month
        bytes_after = vacuumed_bytes(db, self.work, "after.db")
        months = 1 + 12 / (30 * 24)   # November and December 1st's hours
        tap.note("database bytes per GPU-month (%d GPUs, VACUUMed): before prune %.0f "
                 "(%d bytes), after pruning November %.0f (%d bytes)" % (
                     gpus, bytes_before / gpus / months, bytes_before,
                     bytes_after / gpus / months, bytes_after))
        tap.check("pruning shrinks the database", [] if bytes_after < bytes_before else
                  ["%d bytes after, %d before" % (bytes_after, bytes_before)])


def main():
    args = harness.arguments(__doc__).parse_args()
    tap = harness.Tap()
    return harness.run_driver(lambda a, t: MaintainTest(a, t), args, tap, "maintain driver",
                              "gl-maintain-")


if __name__ == "__main__":
    sys.exit(main())
