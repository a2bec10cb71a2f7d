#!/usr/bin/env python3
"""statement_test.py - one period statement per output.

Usage: python3 tests/integration/statement_test.py --bin build/gpuledger
           [--work DIR] [--keep] [--rounds N]

The fixed database of the golden files (tests/golden/make_db.py, stage
base). Checks:

1. report under a concurrent collect: a writer (a second SQLite connection
   in this process) keeps replacing one hour of team ml-research's
   memory_used, 40,000 MiB <-> 10,000 MiB, one commit after another, while
   `gpuledger report` runs again and again. Every team page must agree with
   itself: the "Memory used" figure (from the rollups) equals the sum of its
   invoice's memory-used lines, and the daily table sums to it. The engine
   before the statement read the invoices and the page's sums in separate
   transactions, so a commit in between made the page disagree with its
   invoice.
2. the same for `run`: in the tree it writes, each invoice JSON's memory
   GB-hours equal the team page's.
3. `run --verbose` builds one statement per period it writes (the debug line
   "statement built period=..."), and none when the outputs are up to date.
   With metrics.textfile, the metrics reuse the statement of the open
   period's tree (still one per period written); a run whose outputs are
   up to date builds exactly one, for the metrics, and its billed figures
   equal the first run's line for line.
"""

import json
import os
import re
import sys
import threading
import time
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "golden"))
import harness  # noqa: E402
import ledger_db  # noqa: E402
import golden_test  # noqa: E402
import make_db  # noqa: E402

MEM = re.compile(r"^- Memory used: (\d+\.\d+) GB-hours$", re.M)
LINE = re.compile(r"^\| [^|]+ \| [^|]+ \| Memory used(?: \(estimated\))? \| (\d+\.\d+) \|", re.M)
DAY = re.compile(r"^\| (\d{4}-\d\d-\d\d) \| (\d+\.\d+) \| (\d+\.\d+) \| (\d+\.\d+) \|$", re.M)
TOL = Decimal("0.00000001")  # each invoice JSON line is rounded to 10^-9
# the pages print GB-hours rounded to 2 decimals for reading:
# the total and each line are within half a cent-hour of the exact figure
HALF = Decimal("0.005")


class Writer(threading.Thread):
    """Flips one hour of ml-research's memory between two values, commit
    after commit, until stopped."""

    def __init__(self, db):
        super().__init__(daemon=True)
        self.db = db
        self.stop = threading.Event()
        self.commits = 0

    def run(self):
        con = ledger_db.Writer(self.db)
        h = make_db.hour("2026-10-01T10")
        values = (40000 * 3600, 10000 * 3600)
        while not self.stop.is_set():
            con.set_usage(h, "ml-research", "memory_used", values[self.commits % 2])
            self.commits += 1
            time.sleep(0.0003)  # let the engine's own writes (output state) in
        con.close()


def page_problems(text, name):
    out = []
    m = MEM.search(text)
    if not m:
        return ["%s: no Memory used figure" % name]
    used = Decimal(m.group(1))
    found = LINE.findall(text)
    lines = sum((Decimal(x) for x in found), Decimal(0))
    if abs(used - lines) > HALF * (len(found) + 1):
        out.append("%s: Memory used %s GB-h, its invoice lines %s" % (name, used, lines))
    days = sum((Decimal(d[1]) for d in DAY.findall(text)), Decimal(0))
    if abs(used - days) > TOL * 4:
        out.append("%s: Memory used %s GB-h, its days %s" % (name, used, days))
    return out


BILLED = re.compile(r"^gpuledger_(?:billed|fleet|anomalies|pending)\S*\{.*$", re.M)


class Statement(harness.Suite):
    def metrics_reuse(self, eng, cfg, db):
        """3, with metrics.textfile: the open period's statement is the tree's."""
        tap = self.tap
        with open(cfg) as f:
            doc = json.load(f)
        prom = self.path("gpuledger.prom")
        doc["metrics"] = {"textfile": prom}
        mcfg = self.path("metrics.json")
        with open(mcfg, "w") as f:
            json.dump(doc, f)
        out = self.path("run-out-metrics")
        texts, problems = [], []
        for n in (1, 2):
            rc, _, err = eng.run(mcfg, db, "--verbose", "run", "--out", out,
                                 "--now", "2026-10-03T00:10:00Z")
            built = re.findall(r"statement built period=(\S+)", err)
            written = re.findall(r"writing outputs period=(\S+)", err)
            if rc != 0:
                problems.append("run %d: exit %d: %s" % (n, rc, harness.tail(err)))
            # the first writes every period (a new folder); the second none
            want = written if n == 1 else ["2026-10"]
            if (n == 1 and "2026-10" not in written) or (n == 2 and written) or \
                    sorted(built) != sorted(want):
                problems.append("run %d: periods written %s, statements built %s (want %s)"
                                % (n, written, built, want))
            with open(prom) as f:
                texts.append(BILLED.findall(f.read()))
        if not any(l.startswith("gpuledger_billed_amount{") for l in texts[0]):
            problems.append("no gpuledger_billed_amount in the textfile")
        if texts[0] != texts[1]:
            problems.append("billed figures differ: from the tree's statement %d lines, "
                            "built for the metrics %d lines, first difference %s" % (
                                len(texts[0]), len(texts[1]),
                                next(((a, b) for a, b in zip(texts[0], texts[1]) if a != b),
                                     "in length")))
        tap.check("metrics reuse the statement of the tree run wrote (one build per period "
                  "written), build one when up to date, the same billed figures (%d lines)"
                  % len(texts[0]), problems)

    def main(self):
        tap, args = self.tap, self.args
        eng = harness.Engine(args.bin, self.work)
        db = self.path("golden.db")
        cfg = self.path("gpuledger.json")
        with open(cfg, "w") as f:
            json.dump(golden_test.config("platform"), f)
        rc, _, err = harness.run_cmd([sys.executable, os.path.join(REPO, "tests", "golden",
                                                                   "make_db.py"), db, "base"])
        if rc:
            raise RuntimeError("make_db.py: " + err)

        # 3 first, on a quiet database: one build per written period
        out = self.path("run-out")
        rc, _, err = eng.run(cfg, db, "--verbose", "run", "--out", out,
                             "--now", "2026-10-03T00:10:00Z")
        built = re.findall(r"statement built period=(\S+)", err)
        written = re.findall(r"writing outputs period=(\S+)", err)
        problems = [] if rc == 0 else ["run exit %d: %s" % (rc, harness.tail(err))]
        if not written or sorted(built) != sorted(written):
            problems.append("periods written %s, statements built %s" % (written, built))
        rc, _, err = eng.run(cfg, db, "--verbose", "run", "--out", out,
                             "--now", "2026-10-03T00:10:00Z")
        built2 = re.findall(r"statement built period=(\S+)", err)
        if rc != 0 or built2 or "outputs up to date period=2026-10" not in err:
            problems.append("second run (up to date): exit %d, statements built %s" %
                            (rc, built2))
        tap.check("run builds one statement per period it writes (%s), none when up to date"
                  % ", ".join(written), problems)
        self.metrics_reuse(eng, cfg, db)

        w = Writer(db)
        w.start()
        problems, runs = [], 0
        try:
            for i in range(args.rounds):
                d = self.path("report-%d" % i)
                rc, _, err = eng.run(cfg, db, "report", "--period", "2026-10", "--out", d)
                if rc != 0:
                    problems.append("report exit %d: %s" % (rc, harness.tail(err)))
                    continue
                runs += 1
                for team in ("ml-research", "vision"):
                    name = "report-2026-10-%s.md" % team
                    with open(os.path.join(d, name)) as f:
                        problems += ["round %d: %s" % (i, p) for p in page_problems(f.read(), name)]
            tree_problems = []
            for i in range(max(3, args.rounds // 4)):
                d = self.path("run-%d" % i)
                # a fresh output folder: every run writes the period's tree
                rc, _, err = eng.run(cfg, db, "run", "--out", d, "--now", "2026-10-03T00:10:00Z")
                if rc != 0:
                    tree_problems.append("run exit %d: %s" % (rc, harness.tail(err)))
                    continue
                t = os.path.join(d, "2026-10")
                with open(os.path.join(t, "invoices", "invoice-2026-10-ml-research.json")) as f:
                    inv = json.load(f)
                gbh = sum(Decimal(l["gb_hours"]) for l in inv["lines"]
                          if l["kind"] == "memory_used" and not l["corrected_period"])
                with open(os.path.join(t, "reports", "report-2026-10-ml-research.md")) as f:
                    page = f.read()
                tree_problems += ["run %d: %s" % (i, p) for p in page_problems(page, "page")]
                m = MEM.search(page)
                if m and abs(Decimal(m.group(1)) - gbh) > HALF + TOL * 4:
                    tree_problems.append("run %d: invoice JSON memory %s GB-h, page %s" %
                                         (i, gbh, m.group(1)))
        finally:
            w.stop.set()
            w.join(30)
        tap.note("writer commits during the rounds: %d" % w.commits)
        if w.commits < args.rounds:
            problems.append("the writer committed only %d times" % w.commits)
        tap.check("%d reports under a concurrent writer: each team page agrees with its invoice"
                  % runs, problems)
        tap.check("run under a concurrent writer: invoice JSON and team page agree",
                  tree_problems)


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    tap = harness.Tap()
    return harness.run_driver(lambda a, t: Statement(a, t), args, tap, "statement",
                              "gl-statement-")


if __name__ == "__main__":
    sys.exit(main())
