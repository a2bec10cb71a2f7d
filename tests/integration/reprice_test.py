#!/usr/bin/env python3
"""reprice_test.py - closed months keep their prices.

Usage: python3 tests/integration/reprice_test.py --bin build/gpuledger [--work DIR] [--keep]

The golden database (tests/golden/make_db.py: no Prometheus, no clock) with
August and September 2026 closed by the engine under test; October is the
open month that carries corrections. Cases:

  refused    a price table that changes a closed month (A100 0.0275 -> 0.03,
             or a new row splitting September's A100 price) is refused by
             `prices import` (exit 7, file and database unchanged, the message
             names the month, the old and new unit price and --reprice-closed)
             and, edited into the configured file, by invoice, export and run
  preview    `prices import --reprice-closed` prints per team the correction
             lines it will produce; they equal the correction lines of the
             next `invoice` (Markdown, byte for byte) and the Correction rows
             of the next `export` (summed per line), and their amounts equal
             round(GB-h x new) - round(GB-h x old) from make_db's own model;
             later commands agree without the flag
  late-data  late hours of September (a new day and an hour on a frozen day)
             still become correction lines without any flag
  upgrade    a database closed when a GPU-Hours price converted with
             capacity_gb (simulated: frozen H100 unit price 4.00/80 = 0.05,
             the measured 81,559 MiB now gives 0.046772241759) is refused by
             invoice, export and run instead of silently corrected; export
             --reprice-closed accepts it
"""

import csv
import io
import json
import os
import shutil
import sys
from decimal import Decimal, ROUND_HALF_EVEN

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOLDEN = os.path.join(REPO, "tests", "golden")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, GOLDEN)
import harness  # noqa: E402
import ledger_db  # noqa: E402
import golden_test  # noqa: E402  (its config)
import make_db  # noqa: E402

A100, H100 = make_db.A100, make_db.H100
OPEN = "2026-10"
RUN_NOW = "2026-10-03T00:10:00Z"


def cents(x):
    return x.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)


def gbh(mib, hours):
    """GB-hours (10^9 bytes) of mib MiB held for hours, 9 decimals as printed."""
    return (Decimal(mib) * 1048576 * hours / Decimal(10) ** 9).quantize(
        Decimal("0.000000001"), rounding=ROUND_HALF_EVEN)


def md_corrections(text):
    """{team: [table row, ...]} of the correction lines in Markdown: the preview
    (`correction lines of P for team `T``) or invoices (`# Invoice GL-P-T`)."""
    out, team = {}, None
    for line in text.splitlines():
        if line.startswith("correction lines of "):
            team = line.split(" for team `", 1)[1].rsplit("` (invoice ", 1)[0]
            team = team.replace("\\", "")  # Markdown escapes of the hostile id
        elif line.startswith("# Invoice GL-%s-" % OPEN):
            team = line[len("# Invoice GL-%s-" % OPEN):]
        elif line.startswith("| ") and ", correction of " in line and team is not None:
            out.setdefault(team, []).append(line)
    return out


def row_key_amount(row):
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    # Cluster | GPU model | Kind, correction of P | GB-hours | Unit | Entry | Amount
    kind, period = cells[2].split(", correction of ")
    return (cells[0].replace("\\", ""), cells[1], kind.replace(" (estimated)", ""), period), \
        Decimal(cells[6]), Decimal(cells[3])


class Reprice(harness.Suite):
    def setup_db(self, name, close_prices=None):
        """A fresh golden database, August and September closed by the engine
        (with the price table close_prices when given, then the golden one)."""
        d = self.path(name)
        os.makedirs(d)
        prices = os.path.join(d, "prices.csv")
        if close_prices is not None:
            self.write_prices(prices, close_prices)
        else:
            shutil.copy(os.path.join(GOLDEN, "prices.csv"), prices)
        cfg = golden_test.config("platform")
        cfg["prices"] = {"file": prices}
        cfg_path = os.path.join(d, "gpuledger.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        db = os.path.join(d, "ledger.db")
        rc, _, err = harness.run_cmd([sys.executable, os.path.join(GOLDEN, "make_db.py"), db,
                                      "base"])
        if rc:
            raise RuntimeError("make_db.py: " + err)
        for period, now in (("2026-08", "2026-09-05T00:00:00Z"),
                            ("2026-09", "2026-10-05T00:00:00Z")):
            rc, _, err = self.eng.run(cfg_path, db, "close", "--period", period, "--now", now)
            if rc:
                raise RuntimeError("close %s: exit %d: %s" % (period, rc, err))
        shutil.copy(os.path.join(GOLDEN, "prices.csv"), prices)
        return d, cfg_path, db, prices

    def write_prices(self, path, text):
        with open(path, "w") as f:
            f.write(text)

    def golden_prices(self):
        with open(os.path.join(GOLDEN, "prices.csv")) as f:
            return f.read()

    def accepted_rows(self, db):
        # None: no such table (an engine without schema 006)
        return ledger_db.reprice_accepted_count(db)

    def refusal_problems(self, what, rc, err, month, old, new):
        p = []
        if rc != 7:
            p.append("%s: exit %d, want 7 (stderr %s)" % (what, rc, harness.tail(err, 300)))
            return p
        months = month if isinstance(month, tuple) else (month,)
        if not any("closed period " + m in err for m in months):
            p.append("%s: the message names none of the closed months %s: %s"
                     % (what, months, harness.tail(err, 500)))
        for word in (old, new, "--reprice-closed"):
            if word not in err:
                p.append("%s: the message lacks %r: %s" % (what, word, harness.tail(err, 500)))
        return p

    # ------------------------------------------------------------ cases
    def refused(self):
        d, cfg, db, prices = self.setup_db("refused")
        before_inv = self.eng.run(cfg, db, "invoice", "--period", OPEN, "--format", "md")[1]
        raised = self.golden_prices().replace("0.0275", "0.0300")
        # September's A100 price split at 2026-09-29T11: a new entry, same price
        split = self.golden_prices().replace(
            "0.0275,USD,2026-07-01T00:00:00Z,2026-10-02T00:00:00Z,",
            "0.0275,USD,2026-07-01T00:00:00Z,2026-09-29T11:00:00Z,\n"
            "^NVIDIA A100-SXM4-80GB$,GB-Hours,0.0280,USD,2026-09-29T11:00:00Z,"
            "2026-10-02T00:00:00Z,")
        # both closed months use the raised price; the split only September
        months = {"raised": ("2026-08", "2026-09"), "split": ("2026-09",)}
        for label, text, new in (("raised", raised, "0.03 per GB-hour"),
                                 ("split", split, "0.028 per GB-hour")):
            cand = os.path.join(d, "new-%s.csv" % label)
            self.write_prices(cand, text)
            rc, out, err = self.eng.run(cfg, db, "prices", "import", "--file", cand)
            p = self.refusal_problems("prices import", rc, err, months[label],
                                      "0.0275 per GB-hour", new)
            with open(prices) as f:
                if f.read() != self.golden_prices():
                    p.append("the configured price table was changed")
            if self.accepted_rows(db):
                p.append("a repricing was recorded")
            after = self.eng.run(cfg, db, "invoice", "--period", OPEN, "--format", "md")
            if after[0] != 0 or after[1] != before_inv:
                p.append("October's invoices changed after the refused import: exit %d %s"
                         % (after[0], harness.tail(after[2], 200)))
            self.tap.check("refused: prices import of a table that reprices a closed month "
                           "(%s) exits 7 naming the month, old/new unit price and the flag; "
                           "nothing installed or recorded" % label, p)
        # the same edit made in the configured file: every output refuses
        self.write_prices(prices, raised)
        p = []
        for argv in (("invoice", "--period", OPEN), ("export", "--period", OPEN),
                     ("run", "--out", os.path.join(d, "out"), "--now", RUN_NOW),
                     ("prices",)):
            rc, out, err = self.eng.run(cfg, db, *argv)
            p += self.refusal_problems(argv[0], rc, err, ("2026-08", "2026-09"),
                                       "0.0275 per GB-hour", "0.03 per GB-hour")
        self.tap.check("refused: an edit of the configured price table that reprices a closed "
                       "month is refused by invoice, export, run and prices (exit 7)", p)
        # accepted in place: `prices --reprice-closed`, then later runs agree
        rc, out, err = self.eng.run(cfg, db, "prices", "--reprice-closed")
        p = [] if rc == 0 else ["prices --reprice-closed: exit %d %s" % (rc, harness.tail(err))]
        if rc == 0 and not md_corrections(out):
            p.append("no correction lines previewed: %s" % harness.tail(out))
        for argv in (("invoice", "--period", OPEN), ("export", "--period", OPEN)):
            rc, _, err = self.eng.run(cfg, db, *argv)
            if rc:
                p.append("%s after the acceptance: exit %d %s" % (argv[0], rc,
                                                                  harness.tail(err)))
        self.tap.check("refused: prices --reprice-closed accepts the edited table; invoice and "
                       "export then agree without the flag", p)

    def preview(self):
        d, cfg, db, prices = self.setup_db("preview")
        cand = os.path.join(d, "new.csv")
        self.write_prices(cand, self.golden_prices().replace("0.0275", "0.0300"))
        rc, out, err = self.eng.run(cfg, db, "prices", "import", "--file", cand,
                                    "--reprice-closed")
        p = []
        if rc:
            self.tap.fail("preview: prices import --reprice-closed",
                          "exit %d %s" % (rc, harness.tail(err)))
            return
        with open(prices) as f:
            if f.read() != self.golden_prices().replace("0.0275", "0.0300"):
                p.append("the table was not installed")
        pre = md_corrections(out)
        rc, inv, err = self.eng.run(cfg, db, "invoice", "--period", OPEN, "--format", "md")
        if rc:
            p.append("invoice after the import: exit %d %s" % (rc, harness.tail(err)))
        got = md_corrections(inv)
        if not pre:
            p.append("no correction lines previewed: %s" % harness.tail(out))
        if pre != got:
            p.append("preview %s differs from the invoices' correction lines %s"
                     % (json.dumps(pre)[:600], json.dumps(got)[:600]))
        self.tap.check("preview: the correction lines printed by prices import --reprice-closed "
                       "equal the next invoice's correction lines, team by team", p)

        # the FOCUS export: Correction rows summed per line = the preview's amounts
        p = []
        rc, text, err = self.eng.run(cfg, db, "export", "--period", OPEN)
        sums = {}
        if rc:
            p.append("export: exit %d %s" % (rc, harness.tail(err)))
        else:
            for r in csv.DictReader(io.StringIO(text)):
                if r["ChargeClass"] != "Correction":
                    continue
                team = r["SubAccountId"]
                k = (team, (r["x_Cluster"], r["x_GpuModel"], r["x_ChargeKind"],
                            r["x_CorrectedPeriod"]))
                sums[k] = sums.get(k, Decimal(0)) + Decimal(r["BilledCost"])
        want = {}
        for team, rows in pre.items():
            for row in rows:
                key, amount, _ = row_key_amount(row)
                want[(team, key)] = want.get((team, key), Decimal(0)) + amount
        if not p and sums != want:
            p.append("export Correction rows %s, preview %s" % (
                sorted((k, str(v)) for k, v in sums.items())[:8],
                sorted((k, str(v)) for k, v in want.items())[:8]))
        self.tap.check("preview: the preview's amounts equal the next export's Correction rows "
                       "(BilledCost summed per team, cluster, model, kind, corrected month)", p)

        # independent figures: train-0 of ml-research held 40000 MiB for 3 hours
        # in August and 2 in September; a pure price change moves no GB-hours
        p = []
        mine = {row_key_amount(r)[0]: row_key_amount(r)[1:] for r in pre.get("ml-research", [])}
        for period, hours in (("2026-08", 3), ("2026-09", 2)):
            q = gbh(40000, hours)
            exp = cents(q * Decimal("0.03")) - cents(q * Decimal("0.0275"))
            got = mine.get(("east", A100, "memory_used", period))
            if got is None or got[0] != exp or got[1] != 0:
                p.append("ml-research %s: preview %s, expected amount %s and 0 GB-hours"
                         % (period, got, exp))
        self.tap.check("preview: each price correction is round(GB-h x 0.03) - "
                       "round(GB-h x 0.0275) of make_db's model, with no GB-hours", p)

        p = []
        rc, _, err = self.eng.run(cfg, db, "run", "--out", os.path.join(d, "out"), "--now",
                                  RUN_NOW)
        if rc:
            p.append("run after the accepted import: exit %d %s" % (rc, harness.tail(err)))
        rc, inv2, err = self.eng.run(cfg, db, "invoice", "--period", OPEN, "--format", "md")
        if rc or inv2 != inv:
            p.append("a later invoice differs or fails: exit %d %s" % (rc, harness.tail(err)))
        self.tap.check("preview: the acceptance is recorded: run and a later invoice agree "
                       "without the flag", p)

    def late_data(self):
        d, cfg, db, prices = self.setup_db("late")
        con = make_db.open_db(db)
        make_db.add_hours(con, ["2026-09-29T12", "2026-09-30T12"], True)
        con.commit()
        con.close()
        p = []
        rc, inv, err = self.eng.run(cfg, db, "invoice", "--period", OPEN, "--format", "md")
        if rc:
            p.append("invoice: exit %d %s" % (rc, harness.tail(err)))
        rows = md_corrections(inv).get("ml-research", [])
        got = {row_key_amount(r)[0]: row_key_amount(r)[1:] for r in rows}
        q = gbh(30000, 2)  # train-0 at 30000 MiB in both late hours
        exp = got.get(("east", A100, "memory_used", "2026-09"))
        if exp is None or exp[1] != q or exp[0] != cents(q * Decimal("0.0275")):
            p.append("ml-research's September correction %s, expected %s GB-hours at 0.0275"
                     % (exp, q))
        rc, _, err = self.eng.run(cfg, db, "export", "--period", OPEN)
        if rc:
            p.append("export: exit %d %s" % (rc, harness.tail(err)))
        if self.accepted_rows(db):
            p.append("late data recorded a repricing")
        self.tap.check("late-data: late hours of a closed month (on a frozen day and a new day) "
                       "still become correction lines without --reprice-closed", p)

    def upgrade(self):
        # what the engine froze before GPU-Hours used the measured capacity:
        # 4.00 per GPU-hour / capacity_gb 80 = 0.05 per GB-hour, the same
        # price entry (pattern and valid_from) as the golden GPU-Hours row
        old_form = self.golden_prices().replace("GPU-Hours,4.00,", "GB-Hours,0.05,")
        if old_form == self.golden_prices():
            raise RuntimeError("tests/golden/prices.csv has no H100 GPU-Hours 4.00 row")
        d, cfg, db, prices = self.setup_db("upgrade", close_prices=old_form)
        cap_gb = Decimal(81559) * 1048576 / Decimal(10) ** 9
        now_unit = (Decimal("4.00") / cap_gb).quantize(Decimal(10) ** -12,
                                                        rounding=ROUND_HALF_EVEN)
        now_txt = format(now_unit.normalize(), "f") + " per GB-hour"
        p = []
        for argv in (("invoice", "--period", OPEN), ("export", "--period", OPEN),
                     ("run", "--out", os.path.join(d, "out"), "--now", RUN_NOW)):
            rc, out, err = self.eng.run(cfg, db, *argv)
            p += self.refusal_problems(argv[0], rc, err, ("2026-08", "2026-09"),
                                       "0.05 per GB-hour", now_txt)
            if rc == 7 and H100 not in err:
                p.append("%s: the message does not name %s" % (argv[0], H100))
        self.tap.check("upgrade: a closed month frozen with a capacity_gb-based GPU-Hours "
                       "conversion is refused (exit 7) by invoice, export and run, not "
                       "silently corrected", p)
        p = []
        rc, text, err = self.eng.run(cfg, db, "export", "--period", OPEN, "--reprice-closed")
        if rc:
            p.append("export --reprice-closed: exit %d %s" % (rc, harness.tail(err)))
        else:
            h100 = [r for r in csv.DictReader(io.StringIO(text))
                    if r["ChargeClass"] == "Correction" and r["x_GpuModel"] == H100]
            if not h100:
                p.append("no H100 correction rows after the acceptance")
        rc, _, err = self.eng.run(cfg, db, "invoice", "--period", OPEN)
        if rc:
            p.append("invoice after the acceptance: exit %d %s" % (rc, harness.tail(err)))
        self.tap.check("upgrade: export --reprice-closed accepts the conversion change as H100 "
                       "correction rows; later commands agree", p)

    def cases(self):
        return (self.refused, self.preview, self.late_data, self.upgrade)

    def main(self):
        self.eng = harness.Engine(self.args.bin, self.work)
        for case in self.cases():
            try:
                case()
            except Exception as e:  # a broken case must not hide the others
                self.tap.fail(case.__name__, "%s: %s" % (type(e).__name__, e))


def main():
    args = harness.arguments(__doc__).parse_args()
    args.bin = os.path.abspath(args.bin)
    return harness.run_driver(lambda a, t: Reprice(a, t), args, harness.Tap(), "reprice",
                              "gl-reprice-")


if __name__ == "__main__":
    sys.exit(main())
