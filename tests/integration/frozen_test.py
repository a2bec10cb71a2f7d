#!/usr/bin/env python3
"""frozen_test.py - a closed period is printed from its frozen figures
(schema 007), checked by the digests stored at close (schema 011), and
byte-identical to the texts stored at close while the renderers are.

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
- a frozen row altered by hand is refused (exit 7, naming the period and
  the table, nothing on stdout): a day's amount, a line, its day and the
  total changed together (consistent figures), the team name, the FOCUS
  provider, a price entry, a FOCUS key row, an anomaly, what a forced close
  lacked, a setting, a digest deleted;
- a test build of this source tree with a renderer's wording changed
  (invoice Markdown "Cost center:" -> "Cost centre:") and a FOCUS column
  added renders every month closed by the engine under test without error,
  the same figures (every other byte of the invoices, every other column of
  the FOCUS rows);
- a month closed with schema 007 figures but before the digests (the 011
  tables dropped) is checked against its stored texts once, then sealed
  (its digests stored) and rendered by the test build too; one whose text
  no longer matches is refused and left unsealed;
- export --focus-version 1.3 of a month closed as 1.2 gives the 1.3 CSV of
  its figures: the bytes the open month gave for 1.3 before the close (a
  month closed before schema 007 refuses it, printing nothing);
- billing.basis, the currency (and the price file's), the cost centres and
  billing.focus_version changed after a close leave the closed month's
  invoices, FOCUS CSV, metadata, report pages and summary unchanged.
"""

import csv
import io
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOLDEN = os.path.join(REPO, "tests", "golden")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import harness  # noqa: E402
import ledger_db  # noqa: E402
from golden_test import config  # noqa: E402

# closed before the late hour of 2026-09 arrives (both complete: make_db
# collects every hour of them), then 2026-10 (it carries the correction
# lines of 2026-09 into its frozen figures): three hours of it collected,
# closed with --force, so its frozen figures and texts also carry what was
# missing (closed_gap) and must render byte-identical with it
CLOSED = (("2026-08", "2026-09-05T00:00:00Z"), ("2026-09", "2026-10-05T00:00:00Z"))
CLOSED_LATE = (("2026-10", "2026-11-05T00:00:00Z"),)
FORCED = ("2026-10",)

# The test build: one renderer wording changed, one FOCUS column added (to
# both versions' headers and to every row: its row of the column list):
# (file, old, new, occurrences).
WORDING_OLD, WORDING_NEW = "- Cost center: ", "- Cost centre: "
ADDED_COLUMN, ADDED_VALUE = "x_TestBuild", "tb"
PATCHES = (
    ("engine/render/invoice_codec.c", WORDING_OLD, WORDING_NEW, 1),
    ("engine/render/export.c", 'X(x_Estimated, ALL, bare, l->estimated ? "true" : "false")',
     'X(x_Estimated, ALL, bare, l->estimated ? "true" : "false") X(%s, ALL, str, "%s")'
     % (ADDED_COLUMN, ADDED_VALUE), 1),
)
# what the test build needs of this source tree
BUILD_PARTS = ("meson.build", "meson_options.txt", "engine", "schema", "queries", "tests/unit")


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
        legacy = self.before_digests(cfg, db)
        self.tampering(cfg, db)
        self.focus13()
        self.config_changed()
        self.test_build(dbs, (cfg, legacy))

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
        return ledger_db.copy(db, self.path(name))

    # -- what the engine prints for a closed period

    def outputs(self, cfg, db, period, eng=None):
        """{name: bytes} of everything the engine (eng, else the one under
        test) writes for period, or a string saying what failed."""
        eng = eng or self.eng
        self.n += 1
        base = self.path("out-%d" % self.n)
        os.makedirs(base)
        got = {}
        for fmt in ("json", "md"):
            d = os.path.join(base, "invoices-" + fmt)
            argv = ["invoice", "--period", period, "--out", d]
            if fmt == "md":
                argv[3:3] = ["--format", "md"]
            rc, _, err = eng.run(cfg, db, *argv)
            if rc != 0:
                return "invoice --format %s: exit %d: %s" % (fmt, rc, harness.tail(err, 300))
            for f in sorted(os.listdir(d)):
                got["invoice/" + f] = read(os.path.join(d, f))
        csv = os.path.join(base, "focus.csv")
        rc, _, err = eng.run(cfg, db, "export", "--period", period, "--out", csv)
        if rc != 0:
            return "export: exit %d: %s" % (rc, harness.tail(err, 300))
        got["focus.csv"] = read(csv)
        got["focus.csv.metadata.json"] = read(csv + ".metadata.json")
        rep = os.path.join(base, "report")
        rc, _, err = eng.run(cfg, db, "report", "--period", period, "--out", rep)
        if rc == 0:
            for f in sorted(os.listdir(rep)):
                got["report/" + f] = read(os.path.join(rep, f))
        else:  # 2026-09 has late data: its pages are refused (golden case)
            got["report"] = ("exit %d" % rc).encode()
        return got

    def stored(self, db, period):
        return ledger_db.stored_texts(db, period)

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
        corr = ledger_db.frozen_correction_lines(db, "2026-10", "2026-09")
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
            ledger_db.delete_stored_texts(gone)
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
        ledger_db.drop_frozen_figures(old)
        # the only copy an old database has: printed as stored
        ledger_db.append_to_stored_markdown(old, "2026-09", "\n<!-- audit copy -->\n")
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
        version = ledger_db.schema_version(old)
        figures = ledger_db.frozen_period_count(old)
        latest = ledger_db.latest_schema()
        if version != latest:
            problems.append("user_version %d after the engine opened it, expected %d (the "
                            "latest schema)" % (version, latest))
        if figures:
            problems.append("%d frozen_period rows appeared in the old database" % figures)
        tap.check("a database closed before schema 007 is migrated and still prints its "
                  "stored texts (invoices, FOCUS CSV, pages)", problems)
        tap.check("a month closed before schema 007 (only its FOCUS 1.2 text) refuses "
                  "--focus-version 1.3 (exit 7, nothing printed) rather than print 1.2",
                  self.refused(cfg, old, ("export", "--period", "2026-09", "--focus-version",
                                          "1.3"), ["2026-09", "1.3", "1.2"]))

    def digests(self, db):
        """{period: number of tables with a digest}."""
        return ledger_db.digests(db)

    def before_digests(self, cfg, db):
        """A copy of db as an engine with schema 007 figures but no digests
        leaves it; returns it once the engine sealed it."""
        tap = self.tap
        legacy = self.copy(db, "before-digests.db")
        ledger_db.drop_digests(legacy)
        mismatch = self.copy(legacy, "before-digests-mismatch.db")
        ledger_db.append_to_stored_markdown(mismatch, "2026-09", "x", team="ml-research")
        problems = []
        for period, _ in CLOSED + CLOSED_LATE:
            want = self.outputs(cfg, db, period)
            for attempt in ("first, checked against the texts", "sealed"):
                got = self.outputs(cfg, legacy, period)
                if isinstance(want, str) or isinstance(got, str):
                    problems.append("%s (%s): %s" % (period, attempt, got if isinstance(got, str)
                                                     else want))
                    continue
                problems += ["%s (%s): %s differs" % (period, attempt, k)
                             for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
        sealed = self.digests(legacy)
        want_tables = max(self.digests(db).values() or [0])
        for period, _ in CLOSED + CLOSED_LATE:
            if sealed.get(period) != want_tables or not want_tables:
                problems.append("%s: %s table digests stored, expected %d (as for the months "
                                "this engine closed)" % (period, sealed.get(period, 0), want_tables))
        tap.check("months closed with figures before the digests are checked against their "
                  "stored texts, print the same files, and are sealed (digests stored)",
                  problems)
        problems = self.refused(cfg, mismatch, ("invoice", "--period", "2026-09", "--format",
                                                "md"), ["2026-09", "ml-research", "stored at close"])
        if self.digests(mismatch).get("2026-09"):
            problems.append("the month was sealed although its text did not match")
        tap.check("a month closed before the digests whose stored text no longer matches its "
                  "figures is refused (exit 7) and not sealed", problems)
        return legacy

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
        # (what, the alteration in ledger_db.TAMPERINGS, the command that must refuse)
        cases = [
            ("a frozen day's amount", "day amount", inv),
            ("a frozen line, its day and the total together (figures that add up)",
             "line, day and total", inv),
            ("a frozen team name", "team name", inv + ("--format", "md")),
            ("the frozen FOCUS provider", "FOCUS provider", ("export", "--period", "2026-09")),
            ("a frozen price entry", "price entry", inv),
            ("a FOCUS key row (what corrections are computed against)", "FOCUS key row", inv),
            ("a frozen anomaly deleted", "anomaly deleted", inv),
            ("the billing basis frozen with the month", "billing basis",
             ("report", "--period", "2026-08", "--out", self.path("tampered-report"))),
            ("what a forced close lacked (closed_gap) deleted", "forced close's gaps deleted",
             ("invoice", "--period", "2026-10")),
            ("the close time", "close time", inv),
            ("one table's digest deleted", "digest deleted", inv),
        ]
        for k, (what, alteration, argv) in enumerate(cases):
            # the table the engine must name; nothing altered when a table
            # is missing (an engine without it)
            table = ledger_db.TAMPERINGS[alteration][0]
            bad = self.copy(db, "tamper-case%d.db" % k)
            n, want = ledger_db.tamper(bad, alteration)
            period = argv[argv.index("--period") + 1]
            problems = ["%d rows altered, expected %d" % (n, want)] if n < want else []
            tap.check("%s altered after the close: %s refused (exit 7, names the period and "
                      "the table %s, nothing printed)" % (what, argv[0], table),
                      problems + self.refused(cfg, bad, argv, [period, "table " + table]))

    # -- the figures, not the text: later engines, FOCUS 1.3, a changed config

    def fresh(self, name, changes=None):
        """A platform config (changes(config) applied) and a database of the
        golden data with 2026-08 still open."""
        c = config("platform")
        if changes:
            changes(c)
        cfg = self.path("%s.json" % name)
        with open(cfg, "w") as f:
            json.dump(c, f, indent=2)
        db = self.path("%s.db" % name)
        self.make(db, "base")
        return cfg, db

    def close_aug(self, cfg, db):
        rc, _, err = self.eng.run(cfg, db, "close", "--period", "2026-08", "--now",
                                  CLOSED[0][1])
        if rc != 0:
            raise RuntimeError("close 2026-08: exit %d: %s" % (rc, err))

    def focus13(self):
        tap = self.tap
        cfg, db = self.fresh("focus13")
        exp = ("export", "--period", "2026-08")
        runs = {}
        for when in ("open", "closed"):
            if when == "closed":
                self.close_aug(cfg, db)
            for v in ("default", "1.2", "1.3"):
                argv = exp + (() if v == "default" else ("--focus-version", v))
                meta = self.path("focus13-%s-%s.csv" % (when, v))
                rc, out, err = self.eng.run(cfg, db, *argv)
                rc2, _, err2 = self.eng.run(cfg, db, *(argv + ("--out", meta)))
                runs[when, v] = (rc or rc2, out, harness.tail(err + err2, 300),
                                 read(meta + ".metadata.json") if rc2 == 0 else b"")
        problems = []
        for key, (rc, _, err, _) in sorted(runs.items()):
            if rc != 0:
                problems.append("%s %s: exit %d: %s" % (key + (rc, err)))
        if not problems:
            header = runs["closed", "1.3"][1].split("\n", 1)[0]
            for col in ("ServiceProviderName", "AllocatedMethodId"):
                if col not in header.split(","):
                    problems.append("the closed month's 1.3 header lacks %s" % col)
            if runs["closed", "1.3"][1] != runs["open", "1.3"][1]:
                problems.append("the closed month's 1.3 CSV differs from the open month's 1.3 "
                                "CSV of the same figures")
            if json.loads(runs["closed", "1.3"][3]).get("FocusVersion") != "1.3":
                problems.append("the closed month's 1.3 metadata does not say FocusVersion 1.3")
            for v in ("default", "1.2"):
                if runs["closed", v][1] != runs["open", "default"][1]:
                    problems.append("closed %s: not the 1.2 CSV the month was closed with" % v)
        tap.check("export --focus-version 1.3 of a month closed as FOCUS 1.2 gives the 1.3 CSV "
                  "of its figures (the bytes its open month gave for 1.3); 1.2 and the "
                  "default stay the 1.2 it was closed with", problems)

    def with_summary(self, cfg, db, period):
        got = self.outputs(cfg, db, period)
        if isinstance(got, str):
            return got
        for fmt in ("json", "md"):
            rc, out, err = self.eng.run(cfg, db, "summary", "--period", period, "--format", fmt)
            if rc != 0:
                return "summary --format %s: exit %d: %s" % (fmt, rc, harness.tail(err, 300))
            got["summary." + fmt] = out.encode() if isinstance(out, str) else out
        return got

    def config_changed(self):
        tap = self.tap
        cfg, db = self.fresh("config-before")
        self.close_aug(cfg, db)
        before = self.with_summary(cfg, db, "2026-08")
        prices = self.path("prices-eur.csv")
        with open(os.path.join(GOLDEN, "prices.csv")) as f:
            text = f.read()
        with open(prices, "w") as f:
            f.write(text.replace(",USD,", ",EUR,"))

        def change(c):
            c["billing"]["basis"] = "used"
            c["billing"]["currency"] = "EUR"
            c["billing"]["focus_version"] = "1.3"
            c["prices"]["file"] = prices
            for t in c["teams"]["catalogue"]:
                t["cost_center"] = "cc-9" + t["id"]
        changed = self.path("config-after.json")
        c = config("platform")
        change(c)
        with open(changed, "w") as f:
            json.dump(c, f, indent=2)
        after = self.with_summary(changed, db, "2026-08")
        if isinstance(before, str) or isinstance(after, str):
            problems = [before if isinstance(before, str) else after]
        else:
            problems = ["%s differs" % k for k in sorted(set(before) | set(after))
                        if before.get(k) != after.get(k)]
            if text.count(",USD,") < 1:
                problems.append("the golden price file has no USD entry to change")
            if not any(k.startswith("report/") for k in before):
                problems.append("no report page written for the closed month")
        tap.check("billing.basis, the currency, the cost centres and billing.focus_version "
                  "changed after the close: the closed month's invoices, FOCUS CSV and "
                  "metadata, report pages and summary are unchanged (%d files)"
                  % (0 if isinstance(before, str) else len(before)), problems)

    def build_patched(self):
        """This source tree with PATCHES applied, built (the engine only):
        the path of its gpuledger. From the engine's own build folder when
        it has one: the patched files compiled with that build's commands,
        the rest of its objects linked as they are (seconds, not a whole
        compile); otherwise a fresh meson build of a copy of the tree."""
        build = os.path.dirname(os.path.abspath(self.args.bin))
        if os.path.isfile(os.path.join(build, "build.ninja")):
            return self.relink_patched(build)
        src = self.path("src-test-build")
        for part in BUILD_PARTS:
            a = os.path.join(REPO, part)
            if os.path.isdir(a):
                shutil.copytree(a, os.path.join(src, part))
            else:
                os.makedirs(os.path.dirname(os.path.join(src, part)), exist_ok=True)
                shutil.copy2(a, os.path.join(src, part))
        for name, old, new, count in PATCHES:
            path = os.path.join(src, name)
            with open(path) as f:
                text = f.read()
            if text.count(old) != count:
                raise RuntimeError("test build: %s holds %r %d times, expected %d (update "
                                   "PATCHES)" % (name, old, text.count(old), count))
            with open(path, "w") as f:
                f.write(text.replace(old, new))
        out = os.path.join(src, "build")
        for cmd, limit in ((["meson", "setup", out, src, "--buildtype=plain"], 300),
                           (["ninja", "-C", out, "-j", "2", "gpuledger"], 900)):
            rc, _, err = harness.run_cmd(cmd, limit)
            if rc != 0:
                raise RuntimeError("test build: %s: exit %d: %s"
                                   % (" ".join(cmd[:2]), rc, harness.tail(err, 600)))
        self.tap.setup("the test build (wording changed, FOCUS column %s added) built"
                       % ADDED_COLUMN)
        return os.path.join(out, "gpuledger")

    def relink_patched(self, build):
        """`ninja -t commands` lists every command that makes the engine:
        the patched sources' compile lines are run on patched copies into
        this test's folder, then the archive and link lines with those
        objects in place of the build's."""
        rc, cmds, err = harness.run_cmd(["ninja", "-C", build, "-t", "commands", "gpuledger"],
                                        60)
        if rc != 0:
            raise RuntimeError("test build: ninja -t commands: exit %d: %s"
                               % (rc, harness.tail(err, 600)))
        out = self.path("test-build")
        os.makedirs(out, exist_ok=True)
        sources = {}
        for name, old, new, count in PATCHES:
            path = os.path.join(out, os.path.basename(name))
            if name not in sources:
                with open(os.path.join(REPO, name)) as f:
                    sources[name] = f.read()
            text = sources[name]
            if text.count(old) != count:
                raise RuntimeError("test build: %s holds %r %d times, expected %d (update "
                                   "PATCHES)" % (name, old, text.count(old), count))
            sources[name] = text.replace(old, new)
            with open(path, "w") as f:
                f.write(sources[name])
        lines = cmds.splitlines()
        run, objects = [], {}
        for name in sources:
            rel = os.path.relpath(os.path.join(REPO, name), build)
            line = next((c for c in lines if c.endswith(" -c " + rel)), None)
            obj = line and re.search(r" -o (\S+) ", line)
            if not obj:
                raise RuntimeError("test build: no compile command for %s" % rel)
            objects[obj.group(1)] = os.path.join(out, os.path.basename(obj.group(1)))
            run.append(line.replace(" -c " + rel, " -c " + os.path.join(out, os.path.basename(name)))
                       .replace(obj.group(1), objects[obj.group(1)]))
        ar = next((c for c in lines if " csr" in c and "libgpuledger_engine.a" in c), None)
        link = lines[-1] if lines and " -o gpuledger " in lines[-1] else None
        if not ar or not link:
            raise RuntimeError("test build: no archive or link command in ninja's list")
        lib = os.path.join(out, "libgpuledger_engine.a")
        ar = ar.replace("libgpuledger_engine.a ", lib + " ")
        for a, b in objects.items():
            ar = ar.replace(" " + a, " " + b)
        # a thin archive names its members from where it lies, not from here
        ar = ar.replace(" libgpuledger_engine.a.p/", " %s/libgpuledger_engine.a.p/" % build)
        run.append(ar)
        run.append(link.replace(" libgpuledger_engine.a ", " " + lib + " ")
                   .replace(" -o gpuledger ", " -o %s " % os.path.join(out, "gpuledger")))
        for cmd in run:
            rc, _, err = harness.run_cmd(["sh", "-c", cmd], 300, cwd=build)
            if rc != 0:
                raise RuntimeError("test build: exit %d: %s: %s"
                                   % (rc, cmd[:200], harness.tail(err, 600)))
        self.tap.setup("the test build (wording changed, FOCUS column %s added) compiled "
                       "and linked from %s's objects" % (ADDED_COLUMN, build))
        return os.path.join(out, "gpuledger")

    def same_figures(self, want, got):
        """What differs between the engine's files (want) and the test
        build's (got) besides the patched wording and column."""
        problems = []
        if sorted(want) != sorted(got):
            return ["files %s, test build %s" % (sorted(want), sorted(got))]
        for k in sorted(want):
            w, g = want[k], got[k]
            if k.startswith("invoice/") and k.endswith(".md"):
                if WORDING_NEW.encode() not in g:
                    problems.append("%s: the test build's wording is missing" % k)
                g = g.replace(WORDING_NEW.encode(), WORDING_OLD.encode())
            elif k == "focus.csv":
                rw = list(csv.reader(io.StringIO(w.decode())))
                rg = list(csv.reader(io.StringIO(g.decode())))
                if [r + [ADDED_COLUMN if i == 0 else ADDED_VALUE] for i, r in enumerate(rw)] != rg:
                    problems.append("focus.csv: not the same rows plus the added column")
                continue
            elif k == "focus.csv.metadata.json":
                if ADDED_COLUMN.encode() not in g:
                    problems.append("%s: the added column is not described" % k)
                continue
            if w != g:
                problems.append("%s differs" % k)
        return problems

    def test_build(self, dbs, legacy):
        tap = self.tap
        other = harness.Engine(self.build_patched(), self.work)
        for name, (cfg, db) in list(dbs.items()) + [("sealed before-digests", legacy)]:
            problems = []
            for period, _ in CLOSED + CLOSED_LATE:
                want = self.outputs(cfg, db, period)
                got = self.outputs(cfg, db, period, other)
                if isinstance(want, str) or isinstance(got, str):
                    problems.append("%s: %s" % (period, got if isinstance(got, str) else want))
                    continue
                problems += ["%s %s" % (period, p) for p in self.same_figures(want, got)]
            tap.check("%s: a test build with a renderer's wording changed and a FOCUS column "
                      "added renders every month closed by the engine under test, the same "
                      "figures" % name, problems)


def main():
    ap = harness.arguments(__doc__)
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    tap = harness.Tap()
    return harness.run_driver(lambda a, t: Frozen(a, t), args, tap, "frozen", "gl-frozen-")


if __name__ == "__main__":
    sys.exit(main())
