#!/usr/bin/env python3
"""keep_test.py - `run` rewrites only the output files whose bytes changed.

Usage: python3 tests/integration/keep_test.py --bin build/gpuledger [--work DIR] [--keep]

Data: scenarios/advise.json (tests/gen/gencluster.py, 2026-11-03 00:00 to
04:00, five teams), changed here so that every pod but team-a's ends at
02:00: the hour 02:00..03:00 holds new data for team-a only. Served by a
real Prometheus. run.repull_hours 2, run.delay_minutes 10. Checks:
  same     a second `run --now 02:10` re-pulls 00:00..02:00 (the same
           samples), so the period is written again (the log says so); every
           file keeps its inode and mtime, and the log line counts
           files_written=0 and every file unchanged
  team     `run --now 03:10` (team-a's new hour): team-a's files and the fleet
           pages are rewritten with other bytes; the invoices of team-b..team-e
           keep their inode and mtime; their report pages are rewritten only
           for the fleet's idle and overhead note they carry (no other line
           changed); every file of the tree keeps its inode exactly when its
           bytes are unchanged; the log's counts add up to the files
  kill     `run --now 04:10` SIGKILLed while its temporary tree holds files
           (some of them links to the tree in place): the tree in place keeps
           every file's inode, mtime and bytes; the next run completes,
           removes the temporary folder and leaves a tree equal to an
           uninterrupted run's
"""

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

import harness  # noqa: E402
from harness import tail  # noqa: E402

SCENARIO = os.path.join(HERE, "scenarios", "advise.json")
PERIOD = "2026-11"
STOP = "2026-11-03T02:00:00Z"
KEEP_TEAM = "team-a"


def tree(root):
    """{relative path: (inode, mtime_ns, sha256)} of the files under root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            st = os.lstat(p)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = (st.st_ino, st.st_mtime_ns,
                                                 hashlib.sha256(fh.read()).hexdigest())
    return out


def counts(err):
    """(files_written, files_unchanged) of the run's "wrote outputs" line of PERIOD."""
    m = re.search(r"wrote outputs period=%s .*files_written=(\d+) files_unchanged=(\d+)"
                  % PERIOD, err)
    return (int(m.group(1)), int(m.group(2))) if m else None


def team_of(rel):
    m = re.search(r"-(team-[a-e])\.", rel)
    return m.group(1) if m else None


def first_change(a, b):
    """The first differing line of two text files, as a short note."""
    try:
        with open(a, errors="replace") as fa, open(b, errors="replace") as fb:
            la, lb = fa.read().splitlines(), fb.read().splitlines()
    except OSError as e:
        return " (%s)" % e
    for x, y in zip(la + [""] * len(lb), lb + [""] * len(la)):
        if x != y:
            return "; first change: %r -> %r" % (x[:160], y[:160])
    return "; same bytes"


def changed_lines(a, b):
    """The lines of b that differ from a's at the same place (or the count)."""
    with open(a, errors="replace") as fa, open(b, errors="replace") as fb:
        la, lb = fa.read().splitlines(), fb.read().splitlines()
    if len(la) != len(lb):
        return ["%d lines -> %d" % (len(la), len(lb))]
    return [y for x, y in zip(la, lb) if x != y]


class Suite(harness.Suite):
    proms = ()

    def scenario(self):
        """advise.json with every pod but KEEP_TEAM's ended at STOP."""
        with open(SCENARIO) as f:
            scn = json.load(f)
        for p in scn["pods"]:
            if p["namespace"] != KEEP_TEAM:
                p["to"] = STOP
        for n in scn["nodes"]:
            for g in n["gpus"]:
                for o in g.get("occupants", []):
                    if not o["pod"].startswith(KEEP_TEAM + "/"):
                        o["to"] = STOP
        path = self.path("keep.json")
        with open(path, "w") as f:
            json.dump(scn, f, indent=1)
        return path

    def run(self, *args):
        rc, out, err = self.eng.run(self.cfg, self.db, "run", "--out", self.out, *args,
                                    timeout=300)
        if rc != 0:
            raise RuntimeError("run %s: exit %s: %s" % (" ".join(args), rc, tail(err)))
        return err

    def main(self):
        tap = self.tap
        missing = [t for t in ("promtool", "prometheus") if not shutil.which(t)]
        if missing:
            tap.fail("%s on PATH" % " and ".join(missing), "not found (Debian package prometheus)")
            return
        self.proms = []
        self.eng = harness.Engine(os.path.abspath(self.args.bin), self.work)
        try:
            _, cfg = harness.serve_scenario(self, self.scenario())
            cfg["run"] = {"start": "2026-11-03T00:00:00Z", "delay_minutes": 10,
                          "repull_hours": 2}
            self.cfg = self.path("config.json")
            with open(self.cfg, "w") as f:
                json.dump(cfg, f, indent=1)
            self.db, self.out = self.path("keep.db"), self.path("out")
            self.run("--now", "2026-11-03T02:10:00Z")
        except RuntimeError as e:
            tap.fail("generate, backfill and the first run", e)
            return
        tap.setup("scenario generated and backfilled; first run at 02:10 wrote %s" % PERIOD)
        self.period = os.path.join(self.out, PERIOD)
        try:
            self.same()
            self.team()
            self.kill()
        except RuntimeError as e:
            tap.fail("a run", e)

    def same(self):
        before = tree(self.period)
        err = self.run("--now", "2026-11-03T02:10:00Z")
        after = tree(self.period)
        problems = [] if "writing outputs period=%s" % PERIOD in err else [
            "the period was not written again (the check would prove nothing): %s" % tail(err)]
        problems += ["%s: %s -> %s" % (k, before.get(k), after.get(k))
                     for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
        c = counts(err)
        if c != (0, len(before)):
            problems.append("log counts %s, expected (0, %d)" % (c, len(before)))
        self.tap.check("same: a run that writes the period again with the same data keeps "
                       "every file's inode and mtime (%d files)" % len(before), problems)

    def team(self):
        before = tree(self.period)
        old = self.path("team-before")
        shutil.copytree(self.period, old)
        err = self.run("--now", "2026-11-03T03:10:00Z")
        after = tree(self.period)
        problems = []
        if set(before) != set(after):
            problems.append("file list changed: %s" % sorted(set(before) ^ set(after)))
        new_a = [k for k in after if team_of(k) == KEEP_TEAM or "fleet-" in k]
        invoices = [k for k in after if team_of(k) not in (None, KEEP_TEAM) and
                    k.startswith("invoices" + os.sep)]
        pages = [k for k in after if team_of(k) not in (None, KEEP_TEAM) and
                 k.startswith("reports" + os.sep)]
        if len(new_a) < 4 or len(invoices) < 8 or len(pages) < 8:
            problems.append("too few files to tell: %s, %s, %s" % (new_a, invoices, pages))
        problems += ["%s: not rewritten (%s)" % (k, after[k]) for k in new_a
                     if k in before and (before[k][0] == after[k][0] or
                                         before[k][2] == after[k][2])]
        problems += ["%s: rewritten %s -> %s%s" % (k, before.get(k), after[k],
                                                  first_change(os.path.join(old, k),
                                                               os.path.join(self.period, k)))
                     for k in invoices if before.get(k) != after[k]]
        problems += ["%s: inode %s with bytes %s" % (k, "kept" if before[k][0] == after[k][0]
                                                     else "new",
                                                     "unchanged" if before[k][2] == after[k][2]
                                                     else "changed")
                     for k in after if k in before and
                     (before[k][0] == after[k][0]) != (before[k][2] == after[k][2])]
        problems += ["%s: %s" % (k, x[:200]) for k in pages
                     for x in changed_lines(os.path.join(old, k), os.path.join(self.period, k))
                     if "GB-h idle" not in x]
        rewritten = sum(1 for k in after if before.get(k, (None,))[0] != after[k][0])
        c = counts(err)
        if c != (rewritten, len(after) - rewritten):
            problems.append("log counts %s, the tree (%d, %d)" % (c, rewritten,
                                                                  len(after) - rewritten))
        self.tap.check("team: new data for %s rewrites its %d files and the fleet pages, not "
                       "the other teams' %d invoices; their %d report pages only for the fleet's "
                       "idle note" % (KEEP_TEAM, len(new_a), len(invoices), len(pages)),
                       problems)

    def kill(self):
        """SIGKILL once the temporary tree holds a file; retried on a fresh
        copy when the run finished first (a failure after 20 tries)."""
        db0, out0 = self.path("kill0.db"), self.path("kill0-out")
        shutil.copyfile(self.db, db0)
        shutil.copytree(self.out, out0, copy_function=shutil.copy2)
        now = "2026-11-03T04:10:00Z"
        caught, problems = False, []
        for attempt in range(20):
            shutil.copyfile(db0, self.db)
            shutil.rmtree(self.out)
            shutil.copytree(out0, self.out, copy_function=shutil.copy2)
            before = tree(self.period)
            cmd = self.eng.cmd(self.cfg, self.db, "run", "--out", self.out, "--now", now)
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 cwd=self.work)
            while p.poll() is None and not caught:
                tmps = [d for d in os.listdir(self.out) if d.startswith("." + PERIOD + ".tmp-")]
                caught = any(files for t in tmps
                             for _, _, files in os.walk(os.path.join(self.out, t)))
                if caught:
                    p.send_signal(signal.SIGKILL)
            p.wait()
            self.eng.record(cmd, p.returncode, 0, "(killed: %s, attempt %d)" % (caught, attempt))
            if caught:
                break
        if not caught:
            self.tap.check("kill: a run killed mid-output", ["the run always finished before "
                                                             "its temporary tree held a file"])
            return
        after = tree(self.period)
        problems += ["%s: %s -> %s" % (k, before.get(k), after.get(k))
                     for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
        self.run("--now", now)
        left = [d for d in os.listdir(self.out) if d.startswith(".")]
        if left:
            problems.append("left over: %s" % left)
        resumed = {k: v[2] for k, v in tree(self.period).items()}
        shutil.copyfile(db0, self.db)
        shutil.rmtree(self.out)
        shutil.copytree(out0, self.out, copy_function=shutil.copy2)
        self.run("--now", now)
        clean = {k: v[2] for k, v in tree(self.period).items()}
        if resumed != clean:
            problems.append("after the kill and a run: %s differ from an uninterrupted run"
                            % sorted(k for k in set(resumed) | set(clean)
                                     if resumed.get(k) != clean.get(k)))
        self.tap.check("kill: SIGKILL with the temporary tree half written leaves the tree in "
                       "place intact (%d files); the next run equals an uninterrupted one"
                       % len(before), problems)

    def cleanup(self):
        for p in self.proms:
            p.stop()


if __name__ == "__main__":
    sys.exit(harness.run_driver(Suite, harness.arguments(__doc__).parse_args(),
                                harness.Tap(limit=2000, shown=6), "keep", "gpuledger-keep-"))
