#!/usr/bin/env python3
"""gpuledger `run` outputs that are always complete (a killed run leaves
no partial file) against a real Prometheus.

Usage: python3 tests/integration/outputs_test.py --bin build/gpuledger
                                                 [--work DIR] [--keep] [--seed N] [--kills N]

Prints "ok - NAME" / "not ok - NAME: REASON" lines and "# ..." comments only;
exits 1 when a check failed.

Data: tests/integration/scenarios/run-month.json (2026-11-01 to 2026-12-02,
300 s step, 16 series, generated with tests/gen/gencluster.py), served
complete. The config is the scenario's with run.repull_hours 2, so a run
at --now 2026-12-01T20:00 (window to 19:00) backfills across the month end
and the next run (--now 2026-12-01T20:00 again, or 23:00) re-pulls only
December 1st 17:00 on: November is not re-collected by it.

1. Killed runs: into a fresh database and output folder, `run --now
   2026-12-01T20:00` is SIGKILLed (a) as soon as the first output file
   appears after the "collected cluster=" line, (b) halfway through the
   output stage (its duration measured on an uninterrupted run); then
   `run --now 2026-12-01T23:00`. November's outputs must be complete: the
   file list the generator's teams give (invoices, FOCUS CSV and metadata,
   summary, anomalies, reports), FOCUS rows and invoices equal to the
   generator's November figures, and every file byte-identical to an
   uninterrupted run's. (The engine before this change left November
   without FOCUS CSV or reports and exited 0.)
2. The output state: an up-to-date period is left alone (and the log says
   why), a deleted file, a changed price table, a changed config, a closed
   period before it and a new output folder make `run` rewrite it; a
   leftover temporary folder of a killed run is removed.
3. Kill loop: SIGKILLs at seeded instants of `run --now
   2026-12-01T20:00`, from a snapshot (database + output folder after an
   uninterrupted `run --now 2026-11-29T00:00`, so the run crosses the
   month end and its successor does not re-pull November) or from an
   empty database (the whole backfill). The instants cover every stage of
   the run, told apart by the log line that starts it (the collection;
   "collected cluster="; "writing outputs period=" for each period;
   "outputs dir=", the end of the output stage) and timed on the
   uninterrupted runs: from the snapshot, --kills (default 10) at a uniform
   instant inside each of as many equal parts of the run, and --stage-kills
   (default 2) at a uniform instant inside each stage after the collection;
   from an empty database, two over the run and one inside each stage
   after the collection. A stage no kill landed in (the log of the killed
   run shows the stage it reached) is aimed at again, killed as soon as its
   line shows; a check fails when one is still missed. Each kill is
   followed by `run --now 2026-12-01T20:00` to completion; then the
   database and the output tree must equal the uninterrupted run's from the same start (snapshot + one
   run, or one run into an empty database), compared as follows.
   Database: every table, every row, except columns that hold the wall
   clock (names ending in "_at": collected_at, updated_at, closed_at,
   written_at) and the chunk counters (data_version.version,
   output_state.data_version: they count stored chunks, and a killed run's
   committed chunks are stored again by the next); device rows without
   their id (and, for a node's pseudo-device, without first/last seen: it
   has no samples, so collect stores chunk starts there, which depend on
   where runs started and which no output reads), usage rows with the
   device's (cluster, uuid, gpu_i_id) in place of device_id. Instead of the counters' values: every output_state row
   must carry its period's current data version (the outputs are up to
   date) in both databases. Output tree: the same file list, every file
   byte-identical, no temporary folder left.
"""

import json
import hashlib
import os
import random
import shutil
import signal
import subprocess
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
import run_test as rt  # noqa: E402  (figure checks shared with the run-mode test)
from harness import CHILD_ENV  # noqa: E402

SCENARIO = os.path.join(HERE, "scenarios", "run-month.json")
NOV, DEC = "2026-11", "2026-12"
T_SNAP = "2026-11-29T00:00:00Z"   # the kill loop's starting point
T1 = "2026-12-01T20:00:00Z"       # backfill across the month end (window to 19:00)
T2 = "2026-12-01T23:00:00Z"       # a later run: re-pulls December only
REPULL_HOURS = 2
ENGINE_TIMEOUT = 120
COLLECTED = "collected cluster="
# the shortest stage a kill is required to land in (seconds of the
# uninterrupted run): a shorter one has no instant to aim at
MIN_STAGE = 0.005


def tail(text, n=500):
    return harness.tail(text, n)


# ---------------------------------------------------------------- comparisons

def tree_files(d):
    """{relative path: sha256} of every file under d (dot entries too)."""
    out = {}
    for root, dirs, files in os.walk(d):
        for f in files:
            path = os.path.join(root, f)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, d)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def tree_problems(got_dir, ref):
    """The output tree under got_dir vs ref ({path: sha256})."""
    p = []
    got = tree_files(got_dir)
    for f in sorted(set(ref) - set(got)):
        p.append("output %s missing" % f)
    for f in sorted(set(got) - set(ref)):
        p.append("output %s not in the uninterrupted run's tree" % f)
    for f in sorted(set(got) & set(ref)):
        if got[f] != ref[f]:
            p.append("output %s differs from the uninterrupted run's" % f)
    if os.path.isdir(got_dir):
        left = [e for e in os.listdir(got_dir) if e.startswith(".")]
        if left:
            p.append("temporary entries left in the output folder: %s" % ", ".join(left))
    return p


def db_figures(db):
    """{table: sorted rows} as described in the docstring, plus the output
    state's freshness problems."""
    out, versions = ledger_db.comparable_figures(db)
    fresh = ["output_state of %s records data version %s, the period is at %s" % (period, got, want)
             for period, got, want in versions if got != want]
    return out, fresh


def db_problems(db, ref):
    got, fresh = db_figures(db)
    p = list(fresh)
    for t in sorted(set(ref) | set(got)):
        if t not in got:
            p.append("table %s missing" % t)
            continue
        if t not in ref:
            p.append("table %s not in the reference" % t)
            continue
        (cols, rows), (_, rrows) = got[t], ref[t]
        if rows != rrows:
            extra = [r for r in rows if r not in set(rrows)]
            gone = [r for r in rrows if r not in set(rows)]
            p.append("table %s: %d rows vs %d in the uninterrupted run's (columns %s; "
                     "first differing: %s / %s)" % (t, len(rows), len(rrows), ",".join(cols),
                                                   extra[:1], gone[:1]))
    return p


def copy_state(db, out, dst_db, dst_out):
    """Copies a database (with its -wal/-shm, no process has it open) and an
    output folder."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(dst_db + suffix):
            os.unlink(dst_db + suffix)
        if os.path.exists(db + suffix):
            shutil.copy2(db + suffix, dst_db + suffix)
    shutil.rmtree(dst_out, ignore_errors=True)
    if os.path.isdir(out):
        shutil.copytree(out, dst_out, symlinks=True)


def expected_files(exp, period):
    """The files run writes for a period, from the generator's teams."""
    teams = sorted(exp["invoices"])
    f = ["focus-%s.csv" % period, "focus-%s.csv.metadata.json" % period,
         "summary-%s.json" % period, "summary-%s.md" % period, "anomalies-%s.json" % period,
         "reports/fleet-%s.html" % period, "reports/fleet-%s.md" % period]
    for t in teams:
        f += ["invoices/invoice-%s-%s.json" % (period, t), "invoices/invoice-%s-%s.md" % (period, t),
              "reports/report-%s-%s.html" % (period, t), "reports/report-%s-%s.md" % (period, t)]
    return sorted(f)


# The stages of a run, by the log line that starts each: the collection
# (from the start), then per period written the time before its first file
# and the files ("writing outputs period=P"), the time after its reports
# ("wrote reports period=P": the folder's rename, the output state), and
# what follows the output stage ("outputs dir=": retention, the exit).
def stage_of(line):
    """The stage a log line starts, or None."""
    if COLLECTED in line:
        return "collected"
    for word, name in (("writing outputs period=", "writing"),
                       ("wrote reports period=", "wrote")):
        if word in line:
            return "%s %s" % (name, line.split(word, 1)[1].split()[0])
    if "outputs dir=" in line:
        return "outputs done"
    return None


def stage_marks(lines, total):
    """[(stage, start second, length)] of a run's timed log lines
    [(second, line)], the collection first."""
    marks = [("collect", 0.0)] + [(stage_of(ln), t) for t, ln in lines if stage_of(ln)]
    return [(m, t, (marks[i + 1][1] if i + 1 < len(marks) else total) - t)
            for i, (m, t) in enumerate(marks)]


def stage_reached(text):
    """The last stage a killed run's log shows it started."""
    got = [stage_of(ln) for ln in text.splitlines() if stage_of(ln)]
    return got[-1] if got else "collect"


# ---------------------------------------------------------------- the test

class OutputsTest(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.a = args
        self.prom = None

    def cleanup(self):
        if self.prom:
            self.prom.stop()

    # ---- setup
    def setup(self):
        tap = self.tap
        t0 = time.time()
        with open(SCENARIO, encoding="utf-8") as f:
            scn = json.load(f)
        self.gen = gc.Cluster(scn, os.path.dirname(SCENARIO))
        rt.use_prices(self.gen)
        om = self.path("data.om")
        with open(om, "w", encoding="utf-8", newline="\n") as f:
            nlines = self.gen.write_openmetrics(f)
        series = sum(len(s) for s in self.gen.series.values())
        self.exp_nov = self.gen.expected()
        p = gc.self_check(self.gen, self.exp_nov)
        if series > 20:
            p.append("%d series (test budget: about 20)" % series)
        with open(self.path("prices.csv"), "w", encoding="utf-8", newline="") as f:
            f.write(self.gen.prices_csv())
        if not tap.check("generator: %d series, %d lines (%.1fs)" % (series, nlines,
                                                                    time.time() - t0), p):
            return False
        t0 = time.time()
        self.tsdb = self.path("tsdb")
        rc, out = harness.backfill(om, self.tsdb, self.work, ["--max-block-duration=768h"])
        if not tap.check("promtool backfill (%.1fs)" % (time.time() - t0),
                         [] if rc == 0 else ["exit %s: %s" % (rc, tail(out))]):
            return False
        self.prom = harness.Prometheus(self.work, self.tsdb, lookback="299s")
        try:
            self.prom.start(attempts=4)
        except RuntimeError as e:
            tap.fail("prometheus ready", e)
            return False
        # November closes right after its end (the state steps close it at
        # T2, with every hour collected): no settle delay
        cfg = self.gen.run_config({"run": {"repull_hours": REPULL_HOURS},
                                   "close": {"settle_hours": 0}})
        cfg["prometheus"]["url"] = self.prom.url()
        cfg["prices"]["file"] = self.path("prices.csv")
        cfg.setdefault("collection", {})["queries_dir"] = os.path.join(REPO, "queries")
        self.cfg_doc = cfg
        self.cfg = self.path("gpuledger.json")
        self.write_config(cfg)
        tap.note("prometheus on %s; run config %s" % (self.prom.url(),
                                                     json.dumps(cfg["run"], sort_keys=True)))
        # December 1st 00:00..19:00, billed in December
        self.exp_dec = rt.expected_for(self.gen, "2026-12-01T00:00:00Z", "2026-12-01T19:00:00Z",
                                       DEC)
        return True

    def write_config(self, cfg, path=None):
        with open(path or self.cfg, "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")

    # ---- the engine
    def cmd(self, db, out, now, cfg=None):
        return self.engine.cmd(cfg or self.cfg, db, "run", "--out", out, "--now", now)

    def run(self, db, out, now, cfg=None):
        """An uninterrupted run: (exit, stderr, seconds, output-stage seconds);
        self.last_stages: the stage marks of its log (stage_marks)."""
        cmd = self.cmd(db, out, now, cfg)
        t0 = time.time()
        proc = subprocess.Popen(cmd, cwd=self.work, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=CHILD_ENV)
        lines, seen = [], [None]

        def reader():
            for raw in proc.stderr:
                line = raw.decode("utf-8", "replace")
                lines.append((time.time() - t0, line))
                if COLLECTED in line and seen[0] is None:
                    seen[0] = time.time()
        th = threading.Thread(target=reader)
        th.start()
        try:
            proc.wait(timeout=ENGINE_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        th.join()
        t1 = time.time()
        err = "".join(ln for _, ln in lines)
        self.last_stages = stage_marks(lines, t1 - t0)
        self.engine.record(cmd, proc.returncode, t1 - t0, err)
        return proc.returncode, err, t1 - t0, (t1 - seen[0]) if seen[0] else None

    def killed(self, db, out, now, mode, delay, mark=None):
        """A run SIGKILLed: mode "start" (delay after the start), "collected"
        (delay after the collect line), "mark" (delay after the first log
        line starting the stage `mark`, stage_marks) or "file" (the first
        output file after the collect line). Returns (killed, exit, stderr,
        seconds)."""
        cmd = self.cmd(db, out, now)
        t0 = time.time()
        proc = subprocess.Popen(cmd, cwd=self.work, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=CHILD_ENV)
        seen = threading.Event()
        lines = []

        def reader():
            for raw in proc.stderr:
                line = raw.decode("utf-8", "replace")
                lines.append(line)
                if (stage_of(line) == mark) if mode == "mark" else (COLLECTED in line):
                    seen.set()
            seen.set()   # exited
        th = threading.Thread(target=reader)
        th.start()
        before = set(tree_files(out)) if mode == "file" else None
        if mode == "start":
            deadline = t0 + delay
        else:
            seen.wait(ENGINE_TIMEOUT)
            deadline = time.time() + delay
        # the kill instant: Popen.wait sleeps in steps of at most the time
        # left, so it wakes at the deadline (or at the exit)
        try:
            proc.wait(timeout=max(0.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            pass
        if mode == "file":
            while proc.poll() is None:
                now_files = set()
                for root, dirs, files in os.walk(out):
                    now_files.update(os.path.join(root, f) for f in files)
                if any(os.path.relpath(f, out) not in before for f in now_files):
                    break
                time.sleep(0.0005)
        was_killed = proc.poll() is None
        if was_killed:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        th.join()
        secs = time.time() - t0
        self.engine.record(cmd, "SIGKILL" if was_killed else proc.returncode, secs,
                           "".join(lines) + ("(killed, mode %s%s, %.3fs)" % (
                               mode, " " + mark if mark else "", delay)))
        return was_killed, proc.returncode, "".join(lines), secs

    # ---- 1. killed runs
    def reference(self):
        tap = self.tap
        self.ref_db, self.ref_out = self.path("ref.db"), self.path("out-ref")
        rc, err, secs, out_secs = self.run(self.ref_db, self.ref_out, T1)
        if rc != 0:
            tap.fail("reference: uninterrupted run --now %s into a fresh database" % T1,
                     "exit %s: %s" % (rc, tail(err)))
            return False
        self.fresh_secs, self.fresh_out_secs = secs, out_secs
        rc2, err2, secs2, _ = self.run(self.ref_db, self.ref_out, T2)
        if rc2 != 0:
            tap.fail("reference: run --now %s" % T2, "exit %s: %s" % (rc2, tail(err2)))
            return False
        p = self.nov_problems(self.ref_out)
        tap.check("reference: run --now %s (backfill across the month end, %.2fs of which the "
                  "output stage %.2fs) then --now %s (%.2fs): %s outputs = generator" % (
                      T1, secs, out_secs or 0, T2, secs2, NOV), p)
        self.ref_tree = tree_files(self.ref_out)
        return True

    def nov_problems(self, out):
        d = os.path.join(out, NOV)
        want = expected_files(self.exp_nov, NOV)
        got = sorted(tree_files(d)) if os.path.isdir(d) else []
        p = ["%s/%s missing" % (NOV, f) for f in want if f not in got]
        p += ["%s/%s not expected" % (NOV, f) for f in got if f not in want]
        focus = os.path.join(d, "focus-%s.csv" % NOV)
        if os.path.isfile(focus):
            with open(focus, encoding="utf-8", newline="") as f:
                p += ["focus: " + x for x in rt.usage_problems(rt.parse_focus(f.read()),
                                                               self.exp_nov, NOV)]
        p += ["invoices: " + x for x in rt.invoice_problems(
            rt.invoices_of_dir(os.path.join(d, "invoices"), NOV), self.exp_nov)]
        return p

    def finding5(self):
        tap = self.tap
        ref_nov = {f: h for f, h in self.ref_tree.items() if f.startswith(NOV + "/")}
        half = (self.fresh_out_secs or 0.1) / 2
        for name, mode, delay in (("as the first output file appears", "file", 0.0),
                                  ("halfway through the output stage (%.3fs after the collect "
                                   "line)" % half, "collected", half)):
            db, out = self.path("f5-%s.db" % mode), self.path("out-f5-%s" % mode)
            # the output stage's length varies from run to run: when the run
            # ended before the kill, start again from nothing with a shorter
            # delay (the case needs a kill inside the output stage)
            for attempt in range(5):
                was_killed, rc, err, secs = self.killed(db, out, T1, mode, delay)
                if was_killed or mode != "collected":
                    break
                for f in (db, db + "-wal", db + "-shm", db + ".lock"):
                    if os.path.exists(f):
                        os.remove(f)
                shutil.rmtree(out, ignore_errors=True)
                delay /= 2
            p = []
            if not was_killed:
                p.append("the run ended (exit %s) before the kill: %s" % (rc, tail(err, 200)))
            wrote = [ln for ln in err.splitlines() if "wrote outputs" in ln]
            rc2, err2, _, _ = self.run(db, out, T2)
            if rc2 != 0:
                p.append("run --now %s: exit %s: %s" % (T2, rc2, tail(err2)))
            if "from=2026-11" in "".join(ln for ln in err2.splitlines() if COLLECTED in ln):
                p.append("the later run re-collected November: the test no longer covers the "
                         "case")
            p += self.nov_problems(out)
            got = {f: h for f, h in tree_files(out).items() if f.startswith(NOV + "/")}
            for f in sorted(set(ref_nov) | set(got)):
                if f in ref_nov and f in got and got[f] != ref_nov[f]:
                    p.append("%s differs from the uninterrupted run's" % f)
            tap.check("killed run: run --now %s killed %s (%.3fs, %d periods written before); "
                      "run --now %s (November not re-pulled) -> exit 0 and %s complete: every "
                      "file, generator figures, identical to the uninterrupted run's" % (
                          T1, name, secs, len(wrote), T2, NOV), p)

    # ---- 2. the output state
    def state(self):
        """Runs at --now T1 after the reference's T2: nothing to collect, so
        only the change made by each step can make a period be written."""
        tap = self.tap
        db, out = self.path("state.db"), self.path("out-state")
        os.makedirs(self.path("state"), exist_ok=True)
        prices = self.path("state", "prices.csv")   # same base name: the price ids show it
        with open(prices, "w", encoding="utf-8", newline="") as f:
            f.write(self.gen.prices_csv())
        doc = json.loads(json.dumps(self.cfg_doc))
        doc["prices"]["file"] = prices
        cfg = self.path("state.json")
        self.write_config(doc, cfg)
        copy_state(self.ref_db, self.ref_out, db, out)

        def again(name, written, skipped):
            """written: {period: reason expected in the log, or None}."""
            rc, err, secs, _ = self.run(db, out, T1, cfg)
            p = [] if rc == 0 else ["exit %s: %s" % (rc, tail(err))]
            for period, reason in sorted(written.items()):
                line = [ln for ln in err.splitlines()
                        if "writing outputs period=%s " % period in ln]
                if not line:
                    p.append("%s not written" % period)
                elif reason and reason not in line[0]:
                    p.append("%s written for another reason: %s" % (period, line[0].strip()))
            for period in skipped:
                if "outputs up to date period=%s " % period not in err:
                    p.append("%s not reported up to date" % period)
                if "writing outputs period=%s " % period in err:
                    p.append("%s written again" % period)
            if COLLECTED in err:
                p.append("the run collected something: %s" % [
                    ln for ln in err.splitlines() if COLLECTED in ln])
            tap.check("state: %s (%.2fs)" % (name, secs), p)
            return err

        # the copied database's output state names out-ref: a new folder is written whole
        again("a new output folder gets every open period", {NOV: "never written to this folder",
                                                             DEC: "never written to this folder"},
              [])
        tap.check("state: the new folder's tree is identical to the reference's",
                  tree_problems(out, self.ref_tree))
        again("unchanged periods are left alone (the log says so)", {}, [NOV, DEC])
        os.unlink(os.path.join(out, NOV, "reports", "fleet-%s.html" % NOV))
        again("a deleted file of %s makes the run rewrite it" % NOV,
              {NOV: "file missing: reports/fleet-%s.html" % NOV}, [DEC])
        tap.check("state: after the rewrite the tree is identical to the reference's",
                  tree_problems(out, self.ref_tree))
        with open(prices, "a", encoding="utf-8") as f:
            f.write("^No Such GPU$,GB-Hours,1,USD,2026-01-01T00:00:00Z,\n")
        again("a changed price table rewrites every open period",
              {NOV: "price table changed", DEC: "price table changed"}, [])
        doc2 = json.loads(json.dumps(doc))
        doc2.setdefault("billing", {})["account_name"] = "GPU Platform Prod (renamed)"
        self.write_config(doc2, cfg)
        again("a changed config rewrites every open period",
              {NOV: "config or gpuledger version changed",
               DEC: "config or gpuledger version changed"}, [])
        self.write_config(doc, cfg)
        with open(prices, "w", encoding="utf-8", newline="") as f:
            f.write(self.gen.prices_csv())
        again("config and prices restored: rewritten again", {NOV: None, DEC: None}, [])
        tap.check("state: config and prices restored: the tree is identical to the reference's",
                  tree_problems(out, self.ref_tree))
        junk = os.path.join(out, ".%s.tmp-99999" % NOV)
        os.makedirs(os.path.join(junk, "invoices"))
        with open(os.path.join(junk, "invoices", "half.json"), "w") as f:
            f.write("{")
        err = again("a leftover temporary folder of a killed run: periods left alone", {},
                    [NOV, DEC])
        p = ["%s still there" % junk] if os.path.exists(junk) else []
        if "temporary folder of an interrupted run" not in err:
            p.append("the log does not say the folder was removed")
        tap.check("state: the leftover .%s.tmp-99999 is removed and logged" % NOV, p)
        rc, _, err = self.engine.run(cfg, db, "close", "--period", NOV, "--now", T2)
        if rc != 0:
            tap.fail("state: close --period %s" % NOV, "exit %s: %s" % (rc, tail(err)))
            return
        again("closing %s rewrites %s (its corrections depend on it)" % (NOV, DEC),
              {DEC: "closed periods before it changed"}, [])
        rc, _, err = self.engine.run(cfg, db, "collect", "--from", "2026-11-30T20:00:00Z",
                                     "--to", "2026-11-30T22:00:00Z")
        if rc != 0:
            tap.fail("state: collect into the closed %s" % NOV, "exit %s: %s" % (rc, tail(err)))
            return
        again("data collected into the closed %s rewrites %s" % (NOV, DEC),
              {DEC: "closed periods before it changed"}, [])
        tap.check("state: the closed %s's files stay as they were written" % NOV,
                  [x for x in tree_problems(out, self.ref_tree) if NOV + "/" in x])

    # ---- 3. kill loop
    def kill_loop(self):
        tap, a = self.tap, self.a
        db, out = self.path("kill.db"), self.path("out-kill")
        snap_db, snap_out = self.path("snap.db"), self.path("out-snap")
        empty_db, empty_out = self.path("empty.db"), self.path("out-empty")   # never created
        # the references are made at the paths the loop uses (the output
        # state names the folder): a fresh backfill, and a snapshot (kept
        # aside) followed by one run
        copy_state(empty_db, empty_out, db, out)
        rc, err, fsecs, fout_secs = self.run(db, out, T1)
        if rc != 0:
            tap.fail("kill loop: fresh run --now %s" % T1, "exit %s: %s" % (rc, tail(err)))
            return
        fresh_stages = self.last_stages
        fresh_ref = (db_figures(db)[0], tree_files(out))
        copy_state(empty_db, empty_out, db, out)
        rc, err, secs0, _ = self.run(db, out, T_SNAP)
        if rc != 0:
            tap.fail("kill loop: snapshot run --now %s" % T_SNAP, "exit %s: %s" % (rc, tail(err)))
            return
        copy_state(db, out, snap_db, snap_out)
        rc, err, secs, out_secs = self.run(db, out, T1)
        if rc != 0 or out_secs is None:
            tap.fail("kill loop: uninterrupted run --now %s from the snapshot" % T1,
                     "exit %s: %s" % (rc, tail(err)))
            return
        figures, fresh = db_figures(db)
        snap_ref = (figures, tree_files(out))
        tap.check("kill loop: references: run --now %s into a fresh database (%.2fs); snapshot "
                  "run --now %s (%.2fs) then run --now %s (%.2fs, output stage %.2fs): %s = "
                  "generator, output state up to date" % (T1, fsecs, T_SNAP, secs0, T1, secs,
                                                         out_secs, NOV),
                  fresh + self.nov_problems(out))
        tap.note("timing: uninterrupted run --now %s: fresh backfill %.2fs (output stage %.2fs); "
                 "from the snapshot %.2fs (output stage %.2fs)" % (
                     T1, fsecs, fout_secs or 0, secs, out_secs))
        snap_stages = self.last_stages
        rng = random.Random(a.seed)
        tap.note("kill loop: seed %d (rerun with --seed %d); stages of the run from the "
                 "snapshot (start, length): %s" % (a.seed, a.seed, ", ".join(
                     "%s %.3f+%.3f" % s for s in snap_stages)))
        # The kill instants: from the snapshot, --kills over the whole run,
        # one at a uniform instant inside each of --kills equal parts (the
        # collection takes most of it), then --stage-kills inside each stage
        # that follows the collection, uniform over its measured length;
        # from an empty database (the whole backfill), two over the run and
        # one inside each stage after the collection.
        plan = [("snapshot", snap_ref, "start", (i + rng.random()) * secs / a.kills, None)
                for i in range(a.kills)]
        plan += [("snapshot", snap_ref, "mark", rng.uniform(0.0, length), m)
                 for m, _, length in snap_stages[1:] for _ in range(a.stage_kills)]
        plan += [("fresh", fresh_ref, "start", (i + rng.random()) * fsecs / 2, None)
                 for i in range(2)]
        plan += [("fresh", fresh_ref, "mark", rng.uniform(0.0, length), m)
                 for m, _, length in fresh_stages[1:]]
        kills = attempts = finished = 0
        bad, points, reached = [], [], {}
        t_loop = time.time()

        def attempt(start, ref, mode, delay, mark):
            nonlocal kills, attempts, finished
            attempts += 1
            copy_state(*((snap_db, snap_out) if start == "snapshot" else (empty_db, empty_out)),
                       db, out)
            was_killed, rc, err, _ = self.killed(db, out, T1, mode, delay, mark)
            if not was_killed:
                finished += 1
                if rc != 0:
                    bad.append("attempt %d: finished before its kill with exit %s: %s" % (
                        attempts, rc, tail(err, 200)))
                return
            kills += 1
            stage = stage_reached(err)
            reached.setdefault(start, set()).add(stage)
            points.append("%s%s+%.3f(%s)" % ("F:" if start == "fresh" else "",
                                             mark or mode, delay, stage))
            rc, err2, _, _ = self.run(db, out, T1)
            p = [] if rc == 0 else ["completing run: exit %s: %s" % (rc, tail(err2, 300))]
            p += db_problems(db, ref[0])
            p += tree_problems(out, ref[1])
            if p:
                bad.append("kill %d (from %s, %s %.3fs, during %s): %s" % (
                    kills, start, mark or mode, delay, stage, "; ".join(p[:3])))

        for step in plan:
            attempt(*step)
        # a stage no kill landed in (the instants drift with the machine's
        # load) is aimed at again: killed as soon as its log line shows. A
        # stage the uninterrupted run passed in under MIN_STAGE seconds (a
        # log line followed at once by the next, e.g. "collected" before
        # the first period's outputs) has no instant to aim at: it is named
        # in a note, not required.
        short = {start: [m for m, _, length in stages[1:] if length < MIN_STAGE]
                 for start, stages in (("snapshot", snap_stages), ("fresh", fresh_stages))}
        for start, ref, stages in (("snapshot", snap_ref, snap_stages),
                                   ("fresh", fresh_ref, fresh_stages)):
            for m, _, _ in stages[1:]:
                if m in short[start]:
                    continue
                for _ in range(3):
                    if m in reached.get(start, ()):
                        break
                    attempt(start, ref, "mark", 0.0, m)
        tap.note("kill loop: %d kills, %d runs finished first, %.1fs; kills (F: from a fresh "
                 "database; start+delay or stage+delay, (the stage reached)): %s" % (
                     kills, finished, time.time() - t_loop, " ".join(points)))
        missed = ["%s: %s" % (start, m) for start, stages in (("snapshot", snap_stages),
                                                              ("fresh", fresh_stages))
                  for m, _, _ in stages
                  if m not in reached.get(start, ()) and m not in short[start]]
        if any(short.values()):
            tap.note("kill loop: stages too short to aim at (under %.3fs), not required: %s" % (
                MIN_STAGE, ", ".join("%s: %s" % (k, m) for k, ms in short.items() for m in ms)))
        tap.check("kill loop: SIGKILLs landed in every stage of the run (%s), from the snapshot "
                  "and from an empty database" % ", ".join(m for m, _, _ in snap_stages),
                  ["no kill in " + ", ".join(missed)] if missed else [])
        tap.check("kill loop: after each of %d SIGKILLs (seed %d) and a completing run, the "
                  "database figures and the output tree (file by file) equal the "
                  "uninterrupted run's" % (kills, a.seed), bad)

    def main(self):
        tap = self.tap
        if not (os.path.isfile(self.a.bin) and os.access(self.a.bin, os.X_OK)):
            tap.fail("engine binary present", "%s is missing or not executable" % self.a.bin)
            return
        missing = [t for t in ("promtool", "prometheus") if not shutil.which(t)]
        if missing:
            tap.fail("tools present", "%s not found on PATH" % ", ".join(missing))
            return
        self.engine = harness.Engine(os.path.abspath(self.a.bin), self.work,
                                     timeout=ENGINE_TIMEOUT)
        if not self.setup() or not self.reference():
            return
        for name, step in (("killed runs", self.finding5), ("output state", self.state),
                           ("kill loop", self.kill_loop)):
            if self.a.only and name not in self.a.only:
                continue
            t0 = time.time()
            try:
                step()
            except (RuntimeError, OSError, ValueError, KeyError, ledger_db.Error) as e:
                import traceback
                tap.fail("%s: driver" % name, "%s: %s" % (type(e).__name__, e))
                for line in traceback.format_exc().splitlines()[-6:]:
                    tap.note(line)
            tap.note("%s: %.1fs" % (name, time.time() - t0))


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--seed", type=int, default=7, help="seed of the kill instants")
    ap.add_argument("--kills", type=int, default=10,
                    help="SIGKILLs spread over the run from the snapshot")
    ap.add_argument("--stage-kills", type=int, default=2,
                    help="SIGKILLs inside each stage after the collection, from the snapshot")
    ap.add_argument("--only", action="append", help="run only this step (repeatable)")
    return harness.run_driver(OutputsTest, ap.parse_args(), harness.Tap(), "outputs test",
                              "gpuledger-outputs-")


if __name__ == "__main__":
    sys.exit(main())
