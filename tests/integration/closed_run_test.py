#!/usr/bin/env python3
"""closed_run_test.py - the hourly run does not recompute unchanged closed
months, and still refuses a price change of one.

Usage: python3 tests/integration/closed_run_test.py --bin build/gpuledger [--work DIR] [--keep]

The golden database (tests/golden/make_db.py: no Prometheus, no clock) with
August and September 2026 closed by the engine under test; October is the
open month that carries their corrections. `run --verbose` logs at debug
level, per closed month, whether it was recomputed ("closed period to
recompute") or not ("closed period not recomputed"), and a summary line
"closed periods checked recomputed=R unchanged=U". Cases:

  skip       the first run recomputes both closed months; a second run
             after October's data changed (its data version bumped, as each
             hourly collect does) and a third with nothing changed recompute
             neither, and October's invoices (JSON, byte for byte) are those
             of a database that never recorded a check
  prices     after that, a price table raising the A100 price of the closed
             months is still refused by run and invoice (exit 7 naming
             month, model, day and both unit prices), while a new entry
             that prices no hour of a closed month (from December) recomputes
             neither month
  late-data  late hours of September stored after the checks are recomputed
             into correction lines of October equal to GB-h x 0.0275 of the
             late hours (the test's own figures), in this run and the next
  capacity   a larger H100 seen in October changes the GPU-Hours conversion
             of the closed months: refused (exit 7) after the checks too
  read-only  `prices` (the check without --reprice-closed) writes nothing:
             no check is recorded by it, the database file is unchanged
  build      the fingerprint names the build: a copy of the binary whose
             commit string is patched (another build, whose figure code may
             differ though its version is the same) recomputes both closed
             months, and a build whose commit is "unknown" recomputes them on
             every run
  trend      the team page's "Month over month" reads only the months it
             shows (GL_STATEMENT_TREND_MONTHS = 5 before October): earlier
             months of ml-research added by SQL (usage_key_hour and
             frozen_row, what the trend reads) with a gap, a month with only
             frozen rows, a month with only allocated rows, and, before the
             five shown, months whose memory used and frozen totals overflow
             64 bits; the report still prints (the old engine summed every
             earlier month and failed), ml-research's trend is the test's
             own figures, the other teams' pages are unchanged
  trend-teams every team page's "Month over month" (all teams read at once)
             against the test's own reading of the database (plain SQL rows
             summed in Python): teams whose months differ (ml-research six
             months with June missing, a month with usage but not closed;
             vision and platform five months each, then an April whose memory
             used / frozen total overflows 64 bits while ml-research shows
             April: summed only for the teams that show it; the hostile team
             with a frozen-only month and a month of the year before, four
             months in all; a new team named with a quote, a backslash and a
             control character, one month; a correction row added to
             September's frozen rows), Markdown and HTML pages
"""

import html
import json
import os
import re
import shutil
import sys
import time
from decimal import Decimal, ROUND_HALF_EVEN

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOLDEN = os.path.join(REPO, "tests", "golden")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, GOLDEN)
import harness  # noqa: E402
import ledger_db  # noqa: E402
import make_db  # noqa: E402
import reprice_test  # noqa: E402  (its golden database with two closed months)
from reprice_test import A100, H100, OPEN, RUN_NOW, cents, gbh  # noqa: E402

CLOSED = ("2026-08", "2026-09")
VERBOSE = ("--verbose", "--log-format", "logfmt")  # the debug lines, as key=value


def checked(err):
    """(recomputed, unchanged) months of a run's debug summary line, or None."""
    m = re.search(r'msg="closed periods checked" recomputed=(\d+) unchanged=(\d+)', err)
    return (int(m.group(1)), int(m.group(2))) if m else None


def not_recomputed(err):
    return sorted(set(re.findall(r'msg="closed period not recomputed[^"]*" period=(\d{4}-\d\d)',
                                 err)))


class ClosedRun(reprice_test.Reprice):
    """setup_db: reprice_test's golden database, August and September closed;
    returns (dir, config, db, prices)."""

    def run(self, d, cfg, db):
        return self.eng.run(cfg, db, *VERBOSE, "run", "--out", os.path.join(d, "out"),
                            "--now", RUN_NOW)

    def bump_open(self, db):
        """October's data changed, as after each hourly collect into it."""
        ledger_db.bump_last_collected(db)

    def checked_runs(self, d, cfg, db):
        """Three runs: the first, one after October's data changed, one with
        nothing changed; problems if the later two recompute a closed month."""
        p = []
        rc, _, err = self.run(d, cfg, db)
        if rc:
            return ["first run: exit %d %s" % (rc, harness.tail(err))]
        if checked(err) != (2, 0):
            p.append("first run: closed periods checked %s, want recomputed=2 unchanged=0"
                     % (checked(err),))
        for label in ("after October's data changed", "with nothing changed"):
            if label.startswith("after"):
                self.bump_open(db)
            rc, _, err = self.run(d, cfg, db)
            if rc:
                p.append("run %s: exit %d %s" % (label, rc, harness.tail(err)))
                continue
            if checked(err) != (0, 2):
                p.append("run %s: closed periods checked %s, want recomputed=0 unchanged=2 "
                         "(the closed months were recomputed)" % (label, checked(err)))
            if "closed period to recompute" in err:
                p.append("run %s recomputed a closed month: %s" % (label, harness.tail(err, 400)))
        return p

    def refusal(self, what, rc, err, old, new):
        if rc != 7:
            return ["%s: exit %d, want 7 (stderr %s)" % (what, rc, harness.tail(err, 300))]
        p = []
        if not any("closed period %s" % m in err for m in CLOSED):
            p.append("%s: the message names no closed month: %s" % (what, harness.tail(err)))
        for word in (old, new, "GPU model", "--reprice-closed"):
            if word not in err:
                p.append("%s: the message lacks %r: %s" % (what, word, harness.tail(err, 500)))
        if not re.search(r" on 2026-0[89]-\d\d: ", err):
            p.append("%s: the message names no day: %s" % (what, harness.tail(err, 500)))
        return p

    # ------------------------------------------------------------ cases
    def skip(self):
        d, cfg, db, prices = self.setup_db("skip")
        p = self.checked_runs(d, cfg, db)
        rc, inv, err = self.eng.run(cfg, db, *VERBOSE, "invoice", "--period", OPEN,
                                    "--format", "json")
        if rc:
            p.append("invoice: exit %d %s" % (rc, harness.tail(err)))
        elif not_recomputed(err) != list(CLOSED):
            p.append("invoice recomputed closed months: not recomputed %s" % not_recomputed(err))
        # a copy that never recorded a check recomputes everything
        fresh = os.path.join(d, "fresh.db")
        shutil.copy(db, fresh)
        ledger_db.delete_closed_checks(fresh)
        rc2, want, err2 = self.eng.run(cfg, fresh, "invoice", "--period", OPEN, "--format", "json")
        if rc2 or inv != want:
            p.append("October's invoices differ from a recomputation of every closed month "
                     "(exit %d %s)" % (rc2, harness.tail(err2)))
        self.tap.check("skip: runs after the first recompute no closed month while October's "
                       "data change; the invoices equal a full recomputation", p)

    def prices(self):
        d, cfg, db, prices = self.setup_db("prices")
        p = self.checked_runs(d, cfg, db)
        with open(prices) as f:
            golden = f.read()
        # an entry from December on: it prices no hour of August or September
        later = golden.replace(
            "0.0290,USD,2026-10-02T00:00:00Z,,",
            "0.0290,USD,2026-10-02T00:00:00Z,2026-12-01T00:00:00Z,\n"
            "^NVIDIA A100-SXM4-80GB$,GB-Hours,0.0310,USD,2026-12-01T00:00:00Z,,")
        if later == golden:
            raise RuntimeError("tests/golden/prices.csv has no open-ended A100 0.0290 row")
        with open(prices, "w") as f:
            f.write(later)
        rc, _, err = self.run(d, cfg, db)
        if rc or checked(err) != (0, 2):
            p.append("a price entry from December: run exit %d, closed periods checked %s, "
                     "want exit 0 and recomputed=0 unchanged=2 %s"
                     % (rc, checked(err), harness.tail(err, 300)))
        self.tap.check("prices: a new price entry that prices no hour of a closed month does "
                       "not recompute the closed months", p)
        p = []
        with open(prices, "w") as f:
            f.write(later.replace("0.0275", "0.0300"))
        for argv in (("run", "--out", os.path.join(d, "out"), "--now", RUN_NOW),
                     ("invoice", "--period", OPEN), ("export", "--period", OPEN)):
            rc, _, err = self.eng.run(cfg, db, *argv)
            p += self.refusal(argv[0], rc, err, "0.0275 per GB-hour", "0.03 per GB-hour")
            if rc == 7 and A100 not in err:
                p.append("%s: the message does not name %s" % (argv[0], A100))
        self.tap.check("prices: after the checks were recorded, a price table that reprices "
                       "the closed months is still refused by run, invoice and export (exit 7 "
                       "naming month, model, day and both unit prices)", p)

    def late_data(self):
        d, cfg, db, prices = self.setup_db("late")
        p = self.checked_runs(d, cfg, db)
        con = make_db.open_db(db)
        make_db.add_hours(con, ["2026-09-29T12", "2026-09-30T12"], True)
        con.commit()
        con.close()
        q = gbh(30000, 2)  # train-0 at 30000 MiB in both late hours
        for label in ("the run after the late hours", "the next run"):
            rc, _, err = self.run(d, cfg, db)
            if rc:
                p.append("%s: exit %d %s" % (label, rc, harness.tail(err)))
                continue
            rc, inv, err = self.eng.run(cfg, db, "invoice", "--period", OPEN, "--format", "json")
            if rc:
                p.append("invoice after %s: exit %d %s" % (label, rc, harness.tail(err)))
                continue
            got = [(Decimal(li["gb_hours"]), Decimal(li["amount"]))
                   for i in json.loads(inv)["invoices"] if i["team"] == "ml-research"
                   for li in i["lines"]
                   if li.get("corrected_period") == "2026-09" and li["kind"] == "memory_used"
                   and li["gpu_model"] == A100]
            if got != [(q, cents(q * Decimal("0.0275")))]:
                p.append("after %s: ml-research's September correction %s, expected %s GB-h "
                         "at 0.0275 = %s" % (label, got, q, cents(q * Decimal("0.0275"))))
        self.tap.check("late-data: late hours of a closed month stored after its check are "
                       "recomputed into correction lines (this run and the next)", p)

    def capacity(self):
        d, cfg, db, prices = self.setup_db("capacity")
        p = self.checked_runs(d, cfg, db)
        ledger_db.add_device(db, "east", "GPU-new-h100", H100, "node-new", 95000,
                             make_db.hour("2026-10-02T00"), make_db.hour("2026-10-02T00") + 60)
        old_unit = (Decimal("4.00") / (Decimal(81559) * 1048576 / Decimal(10) ** 9)).quantize(
            Decimal(10) ** -12, rounding=ROUND_HALF_EVEN)
        new_unit = (Decimal("4.00") / (Decimal(95000) * 1048576 / Decimal(10) ** 9)).quantize(
            Decimal(10) ** -12, rounding=ROUND_HALF_EVEN)
        rc, _, err = self.run(d, cfg, db)
        p += self.refusal("run", rc, err, format(old_unit.normalize(), "f") + " per GB-hour",
                          format(new_unit.normalize(), "f") + " per GB-hour")
        if rc == 7 and H100 not in err:
            p.append("run: the message does not name %s" % H100)
        self.tap.check("capacity: a larger H100 measured after the checks changes the GPU-Hours "
                       "conversion of the closed months: run refuses (exit 7)", p)

    def trend_rows(self, md):
        """[(month, status, used GB-h, invoice total), ...] of a Markdown team
        page's "Month over month" table."""
        sec = md.split("## Month over month", 1)[1].split("\n## ", 1)[0]
        rows = [[c.strip() for c in line.strip().strip("|").split("|")]
                for line in sec.splitlines() if line.startswith("| ")]
        return [(r[0], r[1], r[2], r[4]) for r in rows[1:]]

    def trend_rows_html(self, page):
        """The same of an HTML team page (its table after "Month over month")."""
        sec = page.split("Month over month</h2>", 1)[1].split("</table>", 1)[0]
        rows = []
        for tr in sec.split("<tr>")[2:]:  # after the header row
            cells = [html.unescape(re.sub(r"<[^>]*>", "", c))
                     for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
            rows.append((cells[0], cells[1], cells[2], cells[4]))
        return rows

    def trend(self):
        d, cfg, db, prices = self.setup_db("trend")
        rep0, rep1 = os.path.join(d, "report-before"), os.path.join(d, "report-after")
        rc, _, err = self.eng.run(cfg, db, "report", "--period", OPEN, "--out", rep0)
        if rc:
            raise RuntimeError("report before: exit %d %s" % (rc, harness.tail(err)))
        team, mine = "ml-research", "report-%s-ml-research.md" % OPEN  # its other: .html
        with open(os.path.join(rep0, mine)) as f:
            before = self.trend_rows(f.read())
        if [r[0] for r in before[:-1]] != list(CLOSED):
            raise RuntimeError("the golden trend of %s is %s, want %s then October"
                               % (team, before, CLOSED))
        # MiB·s of exactly 128 GB-h: 439453125 x 2^20 B / 10^9 / 3600 s
        unit = 439453125
        big = 1 << 62  # three of them overflow a 64-bit sum
        con = ledger_db.History(db)

        def used(ts, q, kind="memory_used", cluster="east"):
            con.key_hour(make_db.hour(ts), cluster, A100, team, kind, q)

        def frozen(period, cp, day, minor, who=team):
            con.frozen_row(period, cp, who, A100, day, minor)

        # shown: July (two rows, first and last hour, two clusters), May
        # (frozen rows only: no closed period, so open and not totalled),
        # April; not shown: June (allocated rows only: no memory used), March
        used("2026-07-01T00", unit)
        used("2026-07-31T23", 2 * unit, cluster="west")
        used("2026-06-15T10", 5 * unit, kind="allocated")
        frozen("2026-05", "", 1, 1000)
        frozen("2026-05", "2026-03", 1, 234)
        frozen("2026-05", "2026-04", 1, 99, who="gone")  # a team without an invoice now
        used("2026-04-10T10", 2 * unit)
        used("2026-03-10T10", 3 * unit)
        # before March: sums that overflow 64 bits (usage and frozen)
        for h in ("2026-02-01T00", "2026-02-01T01", "2026-02-01T02"):
            used(h, big)
        for day in (1, 2, 3):
            frozen("2026-01", "", day, big)
        con.commit()
        con.close()
        p = []
        rc, _, err = self.eng.run(cfg, db, "report", "--period", OPEN, "--out", rep1)
        if rc:
            p.append("report after the earlier months were added: exit %d %s (a month before "
                     "the five shown was read)" % (rc, harness.tail(err, 400)))
        else:
            with open(os.path.join(rep1, mine)) as f:
                got = self.trend_rows(f.read())
            with open(os.path.join(rep1, mine[:-2] + "html")) as f:
                got_html = self.trend_rows_html(f.read())
            def gb(q):
                return format(Decimal(q) * 1048576 / Decimal(10) ** 9 / 3600, ",.2f")
            opened = "open (not totalled here)"
            want = [("2026-04", opened, gb(2 * unit), "—"), ("2026-05", opened, gb(0), "—"),
                    ("2026-07", opened, gb(3 * unit), "—")] + before
            if got != want:
                p.append("the trend of %s is %s, want %s" % (team, got, want))
            if got_html != want:
                p.append("the HTML trend of %s is %s, want %s" % (team, got_html, want))
            for name in sorted(os.listdir(rep0)):
                if name.startswith(mine[:-2]):
                    continue  # ml-research's pages (Markdown above)
                with open(os.path.join(rep0, name), "rb") as a, \
                        open(os.path.join(rep1, name), "rb") as b:
                    if a.read() != b.read():
                        p.append("%s changed after ml-research's earlier months were added"
                                 % name)
        self.tap.check("trend: the month-over-month table reads the five months it shows "
                       "(months before them that overflow 64 bits are not read), skips months "
                       "without memory used, keeps frozen-only months, other teams unchanged",
                       p)

    def trend_model(self, db, team):
        """The trend rows of team a page should show before October, from the
        database by plain SQL and Python sums: [(month, status, used GB-h,
        total)]. Months: those with memory-used hours or frozen rows of the
        team before October, the newest five, oldest first."""
        start = make_db.hour("2026-10-01T00")
        used, frozen = {}, {}
        for h, q in ledger_db.team_memory_key_hours(db, team, start):
            m = time.strftime("%Y-%m", time.gmtime(h))
            used[m] = used.get(m, 0) + q
        for period, minor in ledger_db.team_frozen_minor(db, team, OPEN):
            frozen[period] = frozen.get(period, 0) + minor
        closed = set(ledger_db.closed_periods(db))
        rows = []
        for m in sorted(set(used) | set(frozen))[-5:]:
            nano = (Decimal(used.get(m, 0)) * 1048576 / 3600).quantize(1, ROUND_HALF_EVEN)
            gb = (nano / Decimal(10) ** 9).quantize(Decimal("0.01"), ROUND_HALF_EVEN)
            total = frozen.get(m, 0)
            rows.append((m, "final" if m in closed else "open (not totalled here)",
                         format(gb, ",.2f"),
                         "%d.%02d" % divmod(total, 100) if m in closed else "—"))
        return rows

    def trend_teams(self):
        d, cfg, db, prices = self.setup_db("trend-teams")
        unit = 439453125  # MiB·s of exactly 128 GB-h
        big = 1 << 62  # three of them overflow a 64-bit sum
        odd = 'q"\\\x01z'  # a quote, a backslash, a control character
        con = ledger_db.History(db)

        def used(team, ts, q, cluster="east"):
            con.key_hour(make_db.hour(ts), cluster, A100, team, "memory_used", q)

        def frozen(team, period, day, minor, cp=""):
            con.frozen_row(period, cp, team, A100, day, minor)

        ml, vis, plat, host = "ml-research", "vision", "platform", make_db.HOSTILE_TEAM
        for ts, q in (("2026-07-01T00", unit), ("2026-07-31T23", 3 * unit),
                      ("2026-05-02T00", 5 * unit), ("2026-04-30T23", 7 * unit),
                      ("2026-03-03T03", 11 * unit)):
            used(ml, ts, q)
        used(ml, "2026-07-15T12", 2 * unit, cluster="west")
        frozen(ml, "2026-04", 1, 123)
        # a correction row of a closed month (of a price entry it has)
        con.correction_of("2026-09", "2026-08", ml, 77)
        for ts, q in (("2026-07-09T00", 13 * unit), ("2026-06-09T00", 17 * unit),
                      ("2026-05-09T00", 19 * unit)):
            used(vis, ts, q)
        for h in ("2026-04-01T00", "2026-04-01T01", "2026-04-01T02"):
            used(vis, h, big)  # before vision's five: never summed
        for period, minor in (("2026-07", 700), ("2026-06", 600), ("2026-05", 500)):
            frozen(plat, period, 1, minor)
        for day in (1, 2, 3):
            frozen(plat, "2026-04", day, big)  # before platform's five
        frozen(host, "2026-02", 3, 250)
        frozen(host, "2026-02", 4, 5, cp="2026-01")
        used(host, "2025-12-31T23", 23 * unit)
        used(odd, "2026-06-20T00", 29 * unit)
        used(odd, "2026-10-01T05", 31 * unit)  # this month: the team has a page
        con.commit()
        con.close()
        out = os.path.join(d, "report")
        rc, _, err = self.eng.run(cfg, db, "report", "--period", OPEN, "--out", out)
        if rc:
            self.tap.fail("trend-teams: the teams' trends", "report: exit %d %s"
                          % (rc, harness.tail(err, 400)))
            return
        p, seen = [], set()
        # a page's title shows a control character as a space
        shown_as = {re.sub(r"[\x00-\x1f]", " ", t): t for t in (ml, vis, plat, host, odd)}
        for name in sorted(os.listdir(out)):
            if not (name.startswith("report-") and name.endswith(".md")):
                continue
            with open(os.path.join(out, name)) as f:
                md = f.read()
            with open(os.path.join(out, name[:-2] + "html")) as f:
                page = f.read()
            title = re.sub(r"\\(.)", r"\1", md.split("\n", 1)[0])
            shown = title.rsplit(" (`", 1)[1].rsplit("`), ", 1)[0]
            team = shown_as.get(shown, shown)
            seen.add(team)
            want = self.trend_model(db, team)
            got, got_html = self.trend_rows(md)[:-1], self.trend_rows_html(page)[:-1]
            if got != want:
                p.append("the trend of %r is %s, want %s" % (team, got, want))
            if got_html != want:
                p.append("the HTML trend of %r is %s, want %s" % (team, got_html, want))
        if seen != {ml, vis, plat, host, odd}:
            p.append("the team pages are of %s, want %s" % (sorted(seen),
                                                             sorted({ml, vis, plat, host, odd})))
        self.tap.check("trend-teams: every team page's month-over-month equals the test's own "
                       "sums (months differing per team, gaps, frozen-only months, a month "
                       "another team shows overflowing before a team's five is not summed for "
                       "it, a correction row of a closed month, a team name with a quote, a backslash and a control character)", p)

    def read_only(self):
        d, cfg, db, prices = self.setup_db("read-only")
        with open(db, "rb") as f:
            before = f.read()
        rc, out, err = self.eng.run(cfg, db, *VERBOSE, "prices")
        p = []
        if rc:
            p.append("prices: exit %d %s" % (rc, harness.tail(err)))
        n = ledger_db.closed_check_count(db)
        if n:
            p.append("prices recorded %d closed check(s): the check without "
                     "--reprice-closed must only read" % n)
        if checked(err) != (2, 0):
            p.append("prices: closed periods checked %s, want recomputed=2 unchanged=0"
                     % (checked(err),))
        with open(db, "rb") as f:
            if f.read() != before and not n:
                p.append("prices changed the database file")
        self.tap.check("read-only: prices checks the closed months without writing (no "
                       "recorded check, the database unchanged)", p)

    def build(self):
        d, cfg, db, prices = self.setup_db("build")
        p = self.checked_runs(d, cfg, db)
        rc, out, err = self.eng.run(cfg, db, "--version")
        m = re.search(r"\(commit ([0-9a-f]{7,40})\)", out)
        if rc or not m:
            self.tap.fail("build: the fingerprint names the build",
                          "--version names no commit (exit %d: %r): not a git build" % (rc, out))
            return
        commit = m.group(1).encode()
        with open(self.args.bin, "rb") as f:
            image = f.read()
        for name, repl in (("another", b"f" * len(commit) if commit != b"f" * len(commit)
                            else b"e" * len(commit)),
                           ("unknown", b"unknown\0" + b"\0" * (len(commit) - 8))):
            if len(repl) != len(commit) or image.count(commit) < 1:
                p.append("%s: cannot patch the commit %s into the binary" % (name, commit))
                continue
            path = os.path.join(d, "gpuledger-" + name)
            with open(path, "wb") as f:
                f.write(image.replace(commit, repl))
            os.chmod(path, 0o755)
            other = harness.Engine(path, self.work)
            for k in range(2):
                rc, _, err = other.run(cfg, db, *VERBOSE, "run", "--out", os.path.join(d, "out"),
                                       "--now", RUN_NOW)
                want = (2, 0) if name == "unknown" or k == 0 else (0, 2)
                if rc or checked(err) != want:
                    p.append("%s build, run %d: exit %d, closed periods checked %s, want %s %s"
                             % (name, k + 1, rc, checked(err), want, harness.tail(err, 300)))
                if name == "unknown" and "build commit unknown" not in err:
                    p.append("unknown build, run %d: the debug line does not say why it "
                             "recomputes" % (k + 1))
        self.tap.check("build: a build with another commit recomputes the closed months once "
                       "(the fingerprint names the build, not only its version); a build that "
                       "does not know its commit recomputes them every run", p)

    def cases(self):  # run by reprice_test.Reprice.main
        return (self.trend, self.trend_teams, self.skip, self.prices, self.late_data, self.capacity,
                self.read_only, self.build)


def main():
    args = harness.arguments(__doc__).parse_args()
    args.bin = os.path.abspath(args.bin)
    return harness.run_driver(lambda a, t: ClosedRun(a, t), args, harness.Tap(), "closed-run",
                              "gl-closed-run-")


if __name__ == "__main__":
    sys.exit(main())
