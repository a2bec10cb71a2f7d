#!/usr/bin/env python3
"""model_change_test.py - a GPU's model is a fact of each hour.

Usage: python3 tests/integration/model_change_test.py --bin build/gpuledger [--work DIR] [--keep]

scenarios/model-change.json (tests/gen/gencluster.py) is backfilled into a
real Prometheus: one UUID reports NVIDIA A100-SXM4-80GB (0.03 per GB-hour)
until 2026-11-01T02:00Z and NVIDIA H100 80GB HBM3 (0.09) from then on, with
team-a's 20480 MiB on it; a steady A100 holds team-b's 10240 MiB. Checks:
  hours     November (00:00 to 05:00) collected in raw and server mode, at
            chunk_hours 1 and 3 (the change inside the first 3-hour chunk):
            every invoice line equals the generator's figures, team-a's two
            memory lines are the test's own (20480 MiB x 2 h at 0.03, x 3 h
            at 0.09, half-even to cents), and the four collections store the
            same usage_key_hour and device_model_hour rows and invoices
  basis-max the same under billing.basis max (reserved-unused of the pod's
            whole-GPU allocation, on the node's pseudo-device of each hour's
            model): every line equals the generator's
  closed    October (A100 only) collected and closed, then November
            collected: October's invoice is unchanged, November carries no
            correction line, the collect logs the model change, and `check`
            and `summary` list the device with both models
  migrate   a database of schema 9 (device_model_hour dropped) opens, gets
            each stored hour's model, and prices as before
"""

import json
import os
import shutil
import sys
import time
from decimal import Decimal, ROUND_HALF_EVEN
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tests", "gen"))
sys.path.insert(0, HERE)

import gencluster as gc  # noqa: E402
import harness  # noqa: E402
import ledger_db  # noqa: E402
from harness import tail  # noqa: E402

SCENARIO = os.path.join(HERE, "scenarios", "model-change.json")
A100, H100 = "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"
UUID = "GPU-fc000000-0000-4000-8000-000000000001"
NOV = ("2026-11-01T00:00:00Z", "2026-11-01T05:00:00Z")
OCT = ("2026-10-31T22:00:00Z", "2026-11-01T00:00:00Z")


def amount(mib, hours, price):
    """MiB held for whole hours at a GB-hour price, half-even to cents:
    GB-h = MiB x s x 1048576 / 1e9 / 3600."""
    gbh = Fraction(mib * hours * 3600 * 1048576, 10 ** 9 * 3600)
    x = Decimal(gbh.numerator) / Decimal(gbh.denominator) * Decimal(price)
    return str(x.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN))


def line_problems(doc, exp):
    """Every invoice's lines and total against the generator's."""
    p = []
    got = {inv.get("team"): inv for inv in doc.get("invoices") or []}
    if set(got) != set(exp["invoices"]):
        p.append("teams %s, expected %s" % (sorted(map(str, got)), sorted(exp["invoices"])))
    for team in sorted(set(got) & set(exp["invoices"])):
        e, g = exp["invoices"][team], got[team]
        if g.get("total") != e["total"]:
            p.append("%s total %r, expected %r" % (team, g.get("total"), e["total"]))
        key = lambda l: (l.get("gpu_model"), l.get("kind"), l.get("price_id"))
        gl = {key(l): l for l in g.get("lines") or []}
        el = {key(l): l for l in e["lines"]}
        if set(gl) != set(el):
            p.append("%s lines %s, expected %s" % (team, sorted(gl, key=str),
                                                   sorted(el, key=str)))
        for k in sorted(set(gl) & set(el), key=str):
            for f in ("mib_seconds", "amount"):
                if gl[k].get(f) != el[k][f]:
                    p.append("%s %s %s: got %r, expected %r" % (team, k, f, gl[k].get(f),
                                                                el[k][f]))
    return p


def memory_lines(doc, team):
    for inv in doc.get("invoices") or []:
        if inv.get("team") == team:
            return sorted((l.get("gpu_model"), l.get("mib_seconds"), l.get("amount"))
                          for l in inv.get("lines") or [] if l.get("kind") == "memory_used")
    return []


def rows(read, db):
    """read(db); a database without the table gives an error row: a failing
    check, not a crash."""
    try:
        return read(db)
    except ledger_db.Error as e:
        return [("error", str(e))]


class Suite(harness.Suite):
    prom = None

    def config(self, name, src="config.json", **collection):
        with open(os.path.join(self.gen, src)) as f:
            cfg = json.load(f)
        cfg["prometheus"]["url"] = self.prom.url()
        cfg["prices"]["file"] = os.path.join(self.gen, "prices.csv")
        cfg.setdefault("collection", {}).update(collection)
        path = self.path("config-%s.json" % name)
        with open(path, "w") as f:
            json.dump(cfg, f, indent=1)
        return path

    def run(self, cfg, db, *args):
        rc, out, err = self.eng.run(cfg, db, *args, timeout=300)
        if rc != 0:
            raise RuntimeError("%s: exit %s: %s" % (" ".join(args[:3]), rc, tail(err)))
        return out, err

    def invoice(self, cfg, db, period):
        out, _ = self.run(cfg, db, "invoice", "--period", period, "--format", "json")
        return json.loads(out)

    def main(self):
        tap = self.tap
        for t in ("promtool", "prometheus"):
            if not shutil.which(t):
                tap.fail("%s on PATH" % t, "not found (Debian package prometheus)")
                return
        self.gen = self.path("gen")
        if not gc.main(["gencluster.py", SCENARIO, self.gen]) == 0:
            tap.fail("generate scenarios/model-change.json", "gencluster failed")
            return
        with open(os.path.join(self.gen, "expected.json")) as f:
            self.exp = json.load(f)
        with open(os.path.join(self.gen, "expected-max.json")) as f:
            self.exp_max = json.load(f)
        tsdb = self.path("tsdb")
        rc, out = harness.backfill(os.path.join(self.gen, "data.om"), tsdb)
        if rc != 0:
            tap.fail("promtool backfill", tail(out))
            return
        self.prom = harness.Prometheus(self.work, tsdb)
        try:
            self.prom.start(timeout=30)
        except RuntimeError as e:
            tap.fail("prometheus ready", e)
            return
        tap.setup("model-change generated, backfilled, Prometheus ready")
        self.eng = harness.Engine(self.args.bin, self.work)
        for case in (self.hours, self.basis_max, self.closed, self.migrate):
            try:
                case()
            except RuntimeError as e:
                tap.fail(case.__name__, e)

    def hours(self):
        tap = self.tap
        want_a = sorted([(A100, str(20480 * 7200), amount(20480, 2, "0.03")),
                         (H100, str(20480 * 10800), amount(20480, 3, "0.09"))])
        got = {}
        for chunk in (1, 3):
            for mode in ("raw", "server"):
                tag = "%s-%dh" % (mode, chunk)
                cfg = self.config(tag, mode=mode, chunk_hours=chunk)
                db = self.path(tag + ".db")
                self.run(cfg, db, "collect", "--from", NOV[0], "--to", NOV[1])
                doc = self.invoice(cfg, db, "2026-11")
                tap.check("%s: every invoice line and total equals the generator's (each "
                          "hour at its own model's price)" % tag, line_problems(doc, self.exp))
                mine = memory_lines(doc, "team-a")
                tap.check("%s: team-a's memory lines are 20480 MiB x 2 h at A100 0.03 and "
                          "x 3 h at H100 0.09 (%s)" % (tag, want_a),
                          [] if mine == want_a else ["got %s" % mine])
                got[tag] = (doc, rows(ledger_db.key_hours, db),
                            rows(ledger_db.device_model_hours, db))
        base = got["raw-1h"]
        for tag in ("raw-3h", "server-1h", "server-3h"):
            p = []
            for i, what in enumerate(("invoice", "usage_key_hour", "device_model_hour")):
                if got[tag][i] != base[i]:
                    p.append("%s differs from raw-1h" % what)
            tap.check("%s stores and bills what raw-1h does (invoice, usage_key_hour, "
                      "device_model_hour)" % tag, p)
        dmh = [r for r in base[2] if len(r) > 3 and r[1] == UUID]
        models = [(time.strftime("%H", time.gmtime(r[0])), r[3]) for r in dmh]
        want = [("%02d" % h, A100 if h < 2 else H100) for h in range(5)]
        tap.check("device_model_hour: the changing GPU is A100 for 00-01 h, H100 for 02-04 h",
                  [] if models == want else ["got %s" % models])

    def basis_max(self):
        for chunk in (1, 3):
            tag = "max-%dh" % chunk
            cfg = self.config(tag, "config-max.json", chunk_hours=chunk)
            db = self.path(tag + ".db")
            self.run(cfg, db, "collect", "--from", NOV[0], "--to", NOV[1])
            doc = self.invoice(cfg, db, "2026-11")
            self.tap.check("%s: basis max, every line (reserved-unused of each hour's model) "
                           "equals the generator's" % tag, line_problems(doc, self.exp_max))

    def closed(self):
        tap = self.tap
        cfg = self.config("closed", chunk_hours=1)
        db = self.path("closed.db")
        self.run(cfg, db, "collect", "--from", OCT[0], "--to", OCT[1])
        self.run(cfg, db, "close", "--period", "2026-10", "--force",
                 "--now", "2026-11-01T00:30:00Z")
        before = self.invoice(cfg, db, "2026-10")
        mine = memory_lines(before, "team-a")
        want = [(A100, str(20480 * 7200), amount(20480, 2, "0.03"))]
        tap.check("October (closed): team-a's memory line is 20480 MiB x 2 h at A100 0.03",
                  [] if mine == want else ["got %s" % mine])
        _, err = self.run(cfg, db, "collect", "--from", NOV[0], "--to", NOV[1])
        tap.check("collect logs the device's model change (uuid, both models)",
                  [] if ("device model changed" in err and UUID in err and H100 in err)
                  else ["stderr: %s" % tail(err)])
        after = self.invoice(cfg, db, "2026-10")
        tap.check("October's invoice is unchanged after November reports H100",
                  [] if after == before else ["before %s, after %s" % (
                      memory_lines(before, "team-a"), memory_lines(after, "team-a"))])
        nov = self.invoice(cfg, db, "2026-11")
        corr = [(inv.get("team"), l.get("gpu_model"), l.get("amount"))
                for inv in nov.get("invoices") or [] for l in inv.get("lines") or []
                if l.get("corrected_period")]
        tap.check("November carries no correction line for October", corr and
                  ["correction lines %s" % corr] or [])
        tap.check("November's invoices equal the generator's", line_problems(nov, self.exp))
        out, err = self.run(cfg, db, "summary", "--period", "2026-11", "--format", "json")
        doc = json.loads(out)
        changed = doc.get("model_changes") or []
        tap.check("summary --format json lists the device whose model changed, with both "
                  "models", [] if any(c.get("uuid") == UUID and c.get("models") == [A100, H100]
                                      for c in changed) else ["model_changes %s" % changed])
        out, _ = self.run(cfg, db, "summary", "--period", "2026-11", "--format", "md")
        tap.check("summary --format md names the device and both models",
                  [] if UUID in out and "model changed" in out else ["output: %s" % tail(out)])
        rc, out, err = self.eng.run(cfg, db, "check", "--at", "2026-11-01T04:00:00Z")
        text = out + err
        tap.check("check lists the device whose model changed",
                  [] if UUID in text and "model changed" in text and H100 in text
                  else ["exit %s, output: %s" % (rc, tail(text))])

    def migrate(self):
        cfg = self.config("migrate", chunk_hours=1)
        db = self.path("migrate.db")
        self.run(cfg, db, "collect", "--from", OCT[0], "--to", OCT[1])
        want = self.invoice(cfg, db, "2026-10")
        try:
            ledger_db.drop_device_model_hours(db)
        except ledger_db.Error as e:
            raise RuntimeError("no schema 10 to take back: %s" % e)
        got = self.invoice(cfg, db, "2026-10")
        n = rows(lambda d: [(ledger_db.device_model_hour_count(d),)], db)[0][-1]
        hours = ledger_db.device_hours(db)
        version = ledger_db.schema_version(db)
        p = []
        if got != want:
            p.append("the invoice changed")
        if n != hours or n == 0:
            p.append("%d device_model_hour rows for %d device-hours" % (n, hours))
        if version < 10:
            p.append("user_version %d" % version)
        self.tap.check("a schema 9 database migrates: each stored hour gets its device's "
                       "model, the invoice is unchanged", p)

    def cleanup(self):
        if self.prom:
            self.prom.stop()


def main():
    ap = harness.arguments(__doc__)
    return harness.run_driver(Suite, ap.parse_args(), harness.Tap(limit=2000, shown=6),
                              "model change run", "gpuledger-model-change-")


if __name__ == "__main__":
    sys.exit(main())
