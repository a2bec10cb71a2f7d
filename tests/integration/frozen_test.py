#!/usr/bin/env python3
"""frozen_test.py - a closed period is printed from its frozen figures
(schema 007, issue 8 item 1), byte-identical to the texts stored at close.

Usage: python3 tests/integration/frozen_test.py --bin build/gpuledger [--work DIR] [--keep]

The golden database (tests/golden/make_db.py: no Prometheus, no clock) is
closed for 2026-08 and 2026-09 under each idle policy (platform,
proportional with FOCUS 1.3, unbilled), then a late hour of 2026-09 arrives
and 2026-10 is closed with the correction lines it carries. For every
closed period, team and format:

- the invoice JSON and Markdown files and the FOCUS CSV equal, byte for
  byte, the audit copy stored at close (frozen_invoice, closed_period);
- with those texts deleted by hand (sqlite3) every output is unchanged:
  invoices, FOCUS CSV and its metadata, the closed month's report pages
  (an engine that prints closed months from their texts prints nothing or
  fails here);
- a database whose months were closed before schema 007 (the 007 tables
  dropped, user_version 6: exactly what an older engine leaves) is migrated
  and still prints its stored texts, even a text that no figure could give;
- a frozen figure altered by hand is refused (exit 7, naming the period and
  team, nothing on stdout): a day's amount (the figures no longer add up),
  a line, its day and the total changed together (consistent, but no longer
  the stored text), the team name, the FOCUS provider (export refused).
"""

import glob
import json
import os
import shutil
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOLDEN = os.path.join(REPO, "tests", "golden")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import harness  # noqa: E402
from golden_test import config  # noqa: E402

# closed before the late hour of 2026-09 arrives (both complete: make_db
# collects every hour of them), then 2026-10 (it carries the correction
# lines of 2026-09 into its frozen figures): three hours of it collected,
# closed with --force, so its frozen figures and texts also carry what was
# missing (closed_gap) and must render byte-identical with it
CLOSED = (("2026-08", "2026-09-05T00:00:00Z"), ("2026-09", "2026-10-05T00:00:00Z"))
CLOSED_LATE = (("2026-10", "2026-11-05T00:00:00Z"),)
FORCED = ("2026-10",)
FIGURE_TABLES = ("frozen_period", "frozen_price", "frozen_head", "frozen_line",
                 "frozen_line_day", "frozen_info", "frozen_anomaly")


def read(path):
    with open(path, "rb") as f:
        return f.read()


class Frozen(harness.Suite):
    def main(self):
        self.eng = harness.Engine(self.args.bin, self.work)
        self.n = 0
        dbs = {}
        for policy, focus in (("platform", None), ("proportional", "1.3"), ("unbilled", None)):
            dbs[policy] = self.build(policy, focus)
        for policy, (cfg, db) in dbs.items():
            self.identity_and_deleted(policy, cfg, db)
        cfg, db = dbs["platform"]
        self.old_database(cfg, db)
        self.tampering(cfg, db)

    # -- building

    def make(self, db, stage):
        rc, _, err = harness.run_cmd([sys.executable, os.path.join(GOLDEN, "make_db.py"), db,
                                      stage])
        if rc != 0:
            raise RuntimeError("make_db.py %s: %s" % (stage, err))

    def build(self, policy, focus):
        c = config(policy)
        if focus:
            c["billing"]["focus_version"] = focus
        cfg = self.path("gpuledger-%s.json" % policy)
        with open(cfg, "w") as f:
            json.dump(c, f, indent=2)
        db = self.path("%s.db" % policy)
        self.make(db, "base")
        for period, now in CLOSED:
            rc, _, err = self.eng.run(cfg, db, "close", "--period", period, "--now", now)
            if rc != 0:
                raise RuntimeError("close %s: exit %d: %s" % (period, rc, err))
        self.make(db, "late")
        for period, now in CLOSED_LATE:
            rc, _, err = self.eng.run(cfg, db, "close", "--period", period, "--now", now,
                                      *(("--force",) if period in FORCED else ()))
            if rc != 0:
                raise RuntimeError("close %s: exit %d: %s" % (period, rc, err))
        return cfg, db

    def copy(self, db, name):
        dest = self.path(name)
        con = sqlite3.connect(db)
        out = sqlite3.connect(dest)
        con.backup(out)
        out.close()
        con.close()
        return dest

    # -- what the engine prints for a closed period

    def outputs(self, cfg, db, period):
        """{name: bytes} of everything the engine writes for period, or a
        string saying what failed."""
        self.n += 1
        base = self.path("out-%d" % self.n)
        os.makedirs(base)
        got = {}
        for fmt in ("json", "md"):
            d = os.path.join(base, "invoices-" + fmt)
            argv = ["invoice", "--period", period, "--out", d]
            if fmt == "md":
                argv[3:3] = ["--format", "md"]
            rc, _, err = self.eng.run(cfg, db, *argv)
            if rc != 0:
                return "invoice --format %s: exit %d: %s" % (fmt, rc, harness.tail(err, 300))
            for f in sorted(os.listdir(d)):
                got["invoice/" + f] = read(os.path.join(d, f))
        csv = os.path.join(base, "focus.csv")
        rc, _, err = self.eng.run(cfg, db, "export", "--period", period, "--out", csv)
        if rc != 0:
            return "export: exit %d: %s" % (rc, harness.tail(err, 300))
        got["focus.csv"] = read(csv)
        got["focus.csv.metadata.json"] = read(csv + ".metadata.json")
        rep = os.path.join(base, "report")
        rc, _, err = self.eng.run(cfg, db, "report", "--period", period, "--out", rep)
        if rc == 0:
            for f in sorted(os.listdir(rep)):
                got["report/" + f] = read(os.path.join(rep, f))
        else:  # 2026-09 has late data: its pages are refused (golden case)
            got["report"] = ("exit %d" % rc).encode()
        return got

    def stored(self, db, period):
        con = sqlite3.connect(db)
        texts = con.execute("SELECT team, json, md FROM frozen_invoice WHERE period = ?",
                            (period,)).fetchall()
        csv = con.execute("SELECT focus_csv FROM closed_period WHERE period = ?",
                          (period,)).fetchone()[0]
        con.close()
        return texts, csv

    def by_team(self, got):
        """(team -> json bytes, team -> md bytes) from the invoice files: the
        Markdown file shares the JSON file's name but for the extension."""
        js, md = {}, {}
        for name, data in got.items():
            if name.startswith("invoice/") and name.endswith(".json"):
                team = json.loads(data)["team"]
                js[team] = data
                md[team] = got.get(name[:-5] + ".md")
        return js, md

    # -- checks

    def identity_and_deleted(self, policy, cfg, db):
        tap = self.tap
        con = sqlite3.connect(db)
        corr = con.execute("SELECT COUNT(*) FROM frozen_line WHERE period = '2026-10' "
                           "AND corrected_period = '2026-09'").fetchone()[0]
        con.close()
        tap.check("%s: 2026-10 froze the correction lines of 2026-09 it carried (%d)"
                  % (policy, corr), [] if corr else ["no correction line frozen"])
        for period, _ in CLOSED + CLOSED_LATE:
            texts, csv = self.stored(db, period)
            before = self.outputs(cfg, db, period)
            if isinstance(before, str):
                tap.fail("%s %s: outputs of the closed period" % (policy, period), before)
                continue
            js, md = self.by_team(before)
            problems = []
            if not texts:
                problems.append("no stored texts")
            if sorted(js) != sorted(t for t, _, _ in texts):
                problems.append("teams %s, stored %s" % (sorted(js), sorted(t for t, _, _ in texts)))
            for team, j, m in texts:
                if js.get(team) != (j + "\n").encode():
                    problems.append("team %s: invoice JSON differs from the stored text" % team)
                if md.get(team) != m.encode():
                    problems.append("team %s: invoice Markdown differs from the stored text" % team)
            if before["focus.csv"] != csv.encode():
                problems.append("FOCUS CSV differs from the stored text")
            tap.check("%s %s: every invoice (JSON, Markdown) of %d teams and the FOCUS CSV "
                      "rendered from the frozen figures are byte-identical to the texts stored "
                      "at close" % (policy, period, len(texts)), problems)

            gone = self.copy(db, "%s-%s-notexts.db" % (policy, period))
            con = sqlite3.connect(gone)
            con.execute("DELETE FROM frozen_invoice")
            con.execute("UPDATE closed_period SET focus_csv = ''")
            con.commit()
            con.close()
            after = self.outputs(cfg, gone, period)
            if isinstance(after, str):
                problems = [after]
            else:
                problems = ["%s differs" % k for k in sorted(set(before) | set(after))
                            if before.get(k) != after.get(k)]
            tap.check("%s %s: with the stored texts deleted, the invoices, FOCUS CSV, its "
                      "metadata and the report pages are unchanged (%d files)"
                      % (policy, period, len(before)), problems)

    def old_database(self, cfg, db):
        tap = self.tap
        old = self.copy(db, "old.db")
        con = sqlite3.connect(old)
        for t in FIGURE_TABLES:
            con.execute("DROP TABLE %s" % t)
        con.execute("PRAGMA user_version = 6")
        # the only copy an old database has: printed as stored
        con.execute("UPDATE frozen_invoice SET md = md || ?1 WHERE period = '2026-09'",
                    ("\n<!-- audit copy -->\n",))
        con.commit()
        con.close()
        problems = []
        for period, _ in CLOSED + CLOSED_LATE:
            texts, csv = self.stored(old, period)
            got = self.outputs(cfg, old, period)
            if isinstance(got, str):
                problems.append("%s: %s" % (period, got))
                continue
            js, md = self.by_team(got)
            for team, j, m in texts:
                if js.get(team) != (j + "\n").encode() or md.get(team) != m.encode():
                    problems.append("%s team %s: not the stored text" % (period, team))
            if got["focus.csv"] != csv.encode():
                problems.append("%s: FOCUS CSV is not the stored text" % period)
            if period == "2026-09" and not all(m.endswith("<!-- audit copy -->\n")
                                               for _, _, m in texts):
                problems.append("the marker did not reach the stored texts")
        con = sqlite3.connect(old)
        version = con.execute("PRAGMA user_version").fetchone()[0]
        figures = con.execute("SELECT COUNT(*) FROM frozen_period").fetchone()[0]
        con.close()
        latest = len(glob.glob(os.path.join(REPO, "schema", "[0-9][0-9][0-9]_*.sql")))
        if version != latest:
            problems.append("user_version %d after the engine opened it, expected %d (the "
                            "latest schema)" % (version, latest))
        if figures:
            problems.append("%d frozen_period rows appeared in the old database" % figures)
        tap.check("a database closed before schema 007 is migrated and still prints its "
                  "stored texts (invoices, FOCUS CSV, pages)", problems)

    def tampered(self, db, name, sql):
        bad = self.copy(db, "tamper-%s.db" % name)
        con = sqlite3.connect(bad)
        changed = 0
        for stmt in sql:
            changed += con.execute(stmt).rowcount
        con.commit()
        con.close()
        return bad, changed

    def refused(self, cfg, db, argv, want):
        rc, out, err = self.eng.run(cfg, db, *argv)
        problems = []
        if rc != 7:
            problems.append("exit %d, expected 7" % rc)
        if out:
            problems.append("printed %d bytes on stdout" % len(out))
        for w in want:
            if w not in err:
                problems.append("stderr does not name %r: %s" % (w, harness.tail(err, 300)))
        return problems

    def tampering(self, cfg, db):
        tap = self.tap
        inv = ("invoice", "--period", "2026-09")
        team = "ml-research"
        # one day's amount: the line no longer adds up to its days
        bad, n = self.tampered(db, "day", [
            "UPDATE frozen_line_day SET billed = CAST(billed AS INTEGER) + 1 "
            "WHERE period = '2026-09' AND team = 'ml-research' AND line = 0 "
            "AND day = (SELECT MIN(day) FROM frozen_line_day WHERE period = '2026-09' "
            "AND team = 'ml-research' AND line = 0)"])
        tap.check("a frozen day's amount altered: invoice refused (exit 7, names period and "
                  "team)", (["no row changed"] if n != 1 else [])
                  + self.refused(cfg, bad, inv, ["2026-09", team]))
        # a line of one day, its day and the total: consistent figures, not the stored text
        con = sqlite3.connect(db)
        row = con.execute("SELECT l.team, l.seq FROM frozen_line l WHERE l.period = '2026-09' "
                          "AND (SELECT COUNT(*) FROM frozen_line_day d WHERE d.period = l.period "
                          "AND d.team = l.team AND d.line = l.seq) = 1 ORDER BY 1, 2").fetchone()
        con.close()
        if not row:
            tap.fail("consistent tampering", "no single-day line in 2026-09")
        else:
            t, seq = row
            p = "period = '2026-09' AND team = '%s'" % t.replace("'", "''")
            bad, n = self.tampered(db, "consistent", [
                "UPDATE frozen_line SET amount = CAST(amount AS INTEGER) + 100 WHERE %s AND "
                "seq = %d" % (p, seq),
                "UPDATE frozen_line_day SET billed = CAST(billed AS INTEGER) + 100 WHERE %s AND "
                "line = %d" % (p, seq),
                "UPDATE frozen_head SET total = CAST(total AS INTEGER) + 100 WHERE %s" % p])
            tap.check("a frozen line, its day and the total altered together: invoice refused "
                      "(exit 7: differs from the stored text)",
                      (["%d rows changed, expected 3" % n] if n != 3 else [])
                      + self.refused(cfg, bad, inv, ["2026-09", t, "stored at close"]))
        bad, n = self.tampered(db, "name", [
            "UPDATE frozen_head SET team_name = 'Someone Else' WHERE period = '2026-09' "
            "AND team = 'ml-research'"])
        tap.check("a frozen team name altered: invoice (JSON and Markdown) refused (exit 7)",
                  self.refused(cfg, bad, inv, ["2026-09", team, "invoice-json"])
                  + self.refused(cfg, bad, inv + ("--format", "md"), ["2026-09", team]))
        bad, n = self.tampered(db, "provider", [
            "UPDATE frozen_period SET provider = 'Elsewhere' WHERE period = '2026-09'"])
        problems = self.refused(cfg, bad, ("export", "--period", "2026-09"),
                                ["2026-09", "focus-csv"])
        tap.check("the frozen FOCUS provider altered: export refused (exit 7, names the "
                  "period and the FOCUS CSV)", problems)


def main():
    ap = harness.arguments(__doc__)
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    tap = harness.Tap()
    return harness.run_driver(lambda a, t: Frozen(a, t), args, tap, "frozen", "gl-frozen-")


if __name__ == "__main__":
    sys.exit(main())
