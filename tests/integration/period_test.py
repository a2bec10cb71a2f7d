#!/usr/bin/env python3
"""period_test.py - a month closes only when complete, and a wrong question
gets an error, not an empty answer.

Usage: python3 tests/integration/period_test.py --bin build/gpuledger [--work DIR] [--keep]

Data: tests/integration/scenarios/run-month.json (November 2026 and December
1st, cluster gpu-prod-eu) from tests/gen/gencluster.py, backfilled into a
real Prometheus (promtool, --max-block-duration=768h; the admin API on, to
delete series). Every hour range and count the checks expect is worked out
here from the windows collected, never read from the engine.

1. Completeness (one database, collected step by step with `collect`):
   - November 1-15 collected: `close` exits 7 naming the cluster, the hours
     not collected (2026-11-15T00 to 2026-12-01T00, 384 h) and the settle
     delay (close.settle_hours 48: 2026-12-01T00 to 2026-12-03T00, 48 h);
     nothing is closed;
   - November 20 to December 1 collected too: only the hole (2026-11-15T00
     to 2026-11-20T00, 120 h) is named;
   - all of November and December 1 collected: at --now 2026-12-02T06 the
     settle delay is short by 24 h (the collection reaches 2026-12-02T00);
     December 2 collected (the backend has no data: stored as such), at
     --now 2026-12-02T12 it is short by 12 h (now);
   - six hours of November deleted from Prometheus: their re-collect is
     refused by the shrink guard (exit 5), and `close` at 2026-12-03T00
     names those 6 hours as refused; stored with --allow-shrink, the month
     closes (exit 0).
2. close --force of a half-collected month (November 1-15): exit 0, and
   every output of the month states what was missing: the invoice JSON
   (incomplete_at_close: the 384 h and the 48 h), the invoice Markdown,
   the FOCUS metadata (x_IncompleteAtClose) and every report page; a
   deleted closed_gap row is refused as tampering (exit 7).
3. FOCUS 1.3 of the closed (1.2) month: its figures in 1.3 (the 1.3
   header, as many rows as 1.2); --focus-version 1.2 prints what export
   prints.
4. A period never collected (2025-01, 2030-01): invoice, export, report,
   summary and anomalies exit 7 naming the period and the period that holds
   data (2026-11); report and export write nothing.
5. The command line: global options after the command work as before it;
   --perod suggests --period; a command's option before the command says
   it goes after it; a mistyped command suggests the nearest.
"""

import json
import os
import shutil
import sys
import urllib.parse
import urllib.request
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gen"))
import gencluster as gc  # noqa: E402
import harness  # noqa: E402
import ledger_db  # noqa: E402

SCENARIO = os.path.join(HERE, "scenarios", "run-month.json")
CLUSTER = "gpu-prod-eu"
NOV = "2026-11"
SETTLE_H = 48  # close.settle_hours by default


def ts(s):
    return int(datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
               .timestamp())


def iso(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def rng(a, b):
    """The engine's words for hours [a, b): "A to B (N h)"."""
    return "%s to %s (%d h)" % (a, b, (ts(b) - ts(a)) // 3600)


class AdminPrometheus(harness.Prometheus):
    """A real Prometheus with the admin API (delete_series)."""

    def spawn(self, argv):
        super().spawn(argv + ["--web.enable-admin-api"])

    def delete(self, start, end):
        qs = urllib.parse.urlencode({"match[]": '{__name__=~".+"}', "start": str(start),
                                     "end": str(end)})
        req = urllib.request.Request(self.url() + "/api/v1/admin/tsdb/delete_series?" + qs,
                                     method="POST")
        with harness.NO_PROXY_OPENER.open(req, timeout=30) as r:
            if r.status not in (200, 204):
                raise RuntimeError("delete_series: HTTP %s" % r.status)


class Period(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = None
        self.eng = harness.Engine(args.bin, args.work)

    def cleanup(self):
        if self.prom:
            self.prom.stop()

    def gl(self, db, *args):
        return self.eng.run(self.cfg, db, *args)

    def collect(self, db, a, b, *extra):
        rc, _, err = self.gl(db, "collect", "--from", a, "--to", b, *extra)
        if rc != 0:
            raise RuntimeError("collect %s..%s: exit %d: %s" % (a, b, rc, harness.tail(err)))
        self.tap.note("collected %s to %s" % (a, b))

    def closed(self, db):
        return ledger_db.closed_periods(db)

    def main(self):
        if not self.setup():
            return
        self.completeness()
        self.forced()
        self.wrong_periods()
        self.command_line()

    def setup(self):
        tap = self.tap
        missing = [t for t in ("promtool", "prometheus") if not shutil.which(t)]
        if missing:
            tap.fail("period tools", "missing %s" % ", ".join(missing))
            return False
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
        if rc != 0:
            tap.fail("promtool backfill", harness.tail(out))
            return False
        self.prom = AdminPrometheus(self.work, tsdb, lookback="299s")
        self.prom.start(attempts=4)
        cfg = gen.run_config()
        cfg["prometheus"]["url"] = self.prom.url()
        cfg["prices"]["file"] = self.path("prices.csv")
        cfg.setdefault("collection", {})["queries_dir"] = os.path.join(REPO, "queries")
        self.cfg = self.path("gpuledger.json")
        with open(self.cfg, "w") as f:
            json.dump(cfg, f, indent=2)
        tap.note("Prometheus %s over the run-month data" % self.prom.url())
        return True

    def refused(self, db, now, want, absent=()):
        """close --period NOV --now now: exit 7 naming every want, none of
        absent, nothing closed."""
        rc, out, err = self.gl(db, "close", "--period", NOV, "--now", now)
        p = [] if rc == 7 else ["exit %d, want 7" % rc]
        flat = " ".join(err.split())
        for w in want:
            if w not in flat:
                p.append("stderr does not say %r: %s" % (w, harness.tail(flat, 700)))
        for w in absent:
            if w in flat:
                p.append("stderr says %r: %s" % (w, harness.tail(flat, 500)))
        if self.closed(db):
            p.append("closed periods now: %s" % self.closed(db))
        return p

    # ---- 1
    def completeness(self):
        tap = self.tap
        db = self.path("complete.db")
        late = "2026-12-10T00:00:00Z"
        settle_end = iso(ts("2026-12-01T00:00:00Z") + SETTLE_H * 3600)
        self.collect(db, "2026-11-01T00:00:00Z", "2026-11-15T00:00:00Z")
        tap.check("close of November with November 1-15 collected: exit 7 naming cluster %s, "
                  "the hours not collected and the settle delay, nothing closed" % CLUSTER,
                  self.refused(db, late, [
                      "period 2026-11 is not complete",
                      "cluster %s: hours not collected %s" % (
                          CLUSTER, rng("2026-11-15T00:00:00Z", "2026-12-01T00:00:00Z")),
                      "collection short of the settle delay " +
                      rng("2026-12-01T00:00:00Z", settle_end), "--force"]))
        self.collect(db, "2026-11-20T00:00:00Z", "2026-12-01T00:00:00Z")
        tap.check("close with a hole of five days: exit 7 naming only the hole (a range, not "
                  "its hours)",
                  self.refused(db, late, [
                      "hours not collected " + rng("2026-11-15T00:00:00Z",
                                                   "2026-11-20T00:00:00Z")],
                      absent=["2026-11-15T01:00:00Z", "2026-11-20T00:00:00Z to 2026-12"]))
        self.collect(db, "2026-11-15T00:00:00Z", "2026-11-20T00:00:00Z")
        self.collect(db, "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z")
        tap.check("close of the whole November collected, the collection 24 h past its end: "
                  "exit 7, the settle delay short by 24 h",
                  self.refused(db, "2026-12-02T06:00:00Z", [
                      "collection short of the settle delay " +
                      rng("2026-12-02T00:00:00Z", settle_end)],
                      absent=["not collected"]))
        # December 2: no data in Prometheus, stored as "the backend had no data"
        self.collect(db, "2026-12-02T00:00:00Z", "2026-12-03T00:00:00Z")
        tap.check("close at 2026-12-02T12:00Z with the collection past the settle delay: exit "
                  "7, short by the 12 h still to come",
                  self.refused(db, "2026-12-02T12:00:00Z", [
                      "collection short of the settle delay " +
                      rng("2026-12-02T12:00:00Z", settle_end)]))
        # six hours deleted from the backend: the re-collect is refused
        a, b = "2026-11-20T00:00:00Z", "2026-11-20T06:00:00Z"
        self.prom.delete(ts(a), ts(b) - 1)
        rc, _, err = self.gl(db, "collect", "--from", a, "--to", b)
        tap.check("re-collect of six hours deleted from Prometheus: refused by the shrink guard "
                  "(exit 5)", [] if rc == 5 else ["exit %d: %s" % (rc, harness.tail(err))])
        tap.check("close after the refused collection: exit 7 naming the six refused hours",
                  self.refused(db, settle_end, [
                      "cluster %s: hours whose last collection was refused or failed %s"
                      % (CLUSTER, rng(a, b))], absent=["settle", "not collected"]))
        self.collect(db, a, b, "--allow-shrink")
        rc, _, err = self.gl(db, "close", "--period", NOV, "--now", settle_end)
        p = [] if rc == 0 else ["exit %d: %s" % (rc, harness.tail(err))]
        if self.closed(db) != [NOV]:
            p.append("closed periods %s" % self.closed(db))
        rc, out, err = self.gl(db, "invoice", "--period", NOV)
        try:
            invs = json.loads(out)["invoices"]
        except ValueError:
            invs = None
            p.append("invoice: exit %d: %s" % (rc, harness.tail(err)))
        if invs is not None and (not invs or any(i.get("status") != "final" or
                                                 "incomplete_at_close" in i for i in invs)):
            p.append("invoices not final, or stating gaps: %s" % harness.tail(out, 300))
        tap.check("the refused hours stored again (--allow-shrink): November closes at %s "
                  "(exit 0), final invoices without gaps" % settle_end, p)

    # ---- 2, 3
    def forced(self):
        tap = self.tap
        db = self.path("forced.db")
        self.collect(db, "2026-11-01T00:00:00Z", "2026-11-15T00:00:00Z")
        missing = ("2026-11-15T00:00:00Z", "2026-12-01T00:00:00Z")
        unsettled = ("2026-12-01T00:00:00Z",
                     iso(ts("2026-12-01T00:00:00Z") + SETTLE_H * 3600))
        want_json = [{"cluster": CLUSTER, "kind": "missing", "from": missing[0],
                      "to": missing[1], "hours": (ts(missing[1]) - ts(missing[0])) // 3600},
                     {"cluster": CLUSTER, "kind": "unsettled", "from": unsettled[0],
                      "to": unsettled[1], "hours": SETTLE_H}]
        want_text = "cluster %s: hours not collected %s; collection short of the settle " \
                    "delay %s" % (CLUSTER, rng(*missing), rng(*unsettled))
        rc, _, err = self.gl(db, "close", "--period", NOV, "--now", "2026-12-10T00:00:00Z",
                             "--force")
        p = [] if rc == 0 and self.closed(db) == [NOV] else \
            ["exit %d, closed %s: %s" % (rc, self.closed(db), harness.tail(err))]
        if want_text not in " ".join(err.split()):
            p.append("the log does not name the gaps: %s" % harness.tail(err))
        tap.check("close --force of November with November 1-15 collected: exit 0, the log "
                  "names what was missing", p)
        if self.closed(db) != [NOV]:
            # so that the checks below still run (and fail where they should)
            rc, _, err = self.gl(db, "close", "--period", NOV, "--now", "2026-12-10T00:00:00Z")
            tap.note("closed without --force instead: exit %d" % rc)
        # invoice JSON and Markdown
        p = []
        rc, out, err = self.gl(db, "invoice", "--period", NOV)
        invs = json.loads(out)["invoices"] if rc == 0 else []
        if not invs:
            p.append("invoice: exit %d, no invoices: %s" % (rc, harness.tail(err)))
        for i in invs:
            if i.get("incomplete_at_close") != want_json:
                p.append("invoice %s: incomplete_at_close %r" % (
                    i.get("invoice_id"), i.get("incomplete_at_close")))
        rc, out, err = self.gl(db, "invoice", "--period", NOV, "--format", "md")
        heads = out.count("# Invoice ")
        stated = out.count("- **Incomplete at close** (closed with --force): " + want_text)
        if rc != 0 or not heads or stated != heads:
            p.append("invoice --format md: exit %d, %d invoices, %d state the gaps" % (
                rc, heads, stated))
        tap.check("every invoice of the forced month states the gaps: JSON incomplete_at_close "
                  "(%d h missing, %d h unsettled), Markdown" % (want_json[0]["hours"], SETTLE_H),
                  p)
        # FOCUS metadata
        csv = self.path("focus-nov.csv")
        rc, _, err = self.gl(db, "export", "--period", NOV, "--out", csv)
        p = []
        try:
            meta = json.load(open(csv + ".metadata.json"))
            got = meta.get("x_IncompleteAtClose")
            want = [{"Cluster": g["cluster"], "Kind": g["kind"], "From": g["from"],
                     "To": g["to"]} for g in want_json]
            if got != want or meta.get("Closed") is not True:
                p.append("metadata: Closed %r, x_IncompleteAtClose %r" % (meta.get("Closed"),
                                                                          got))
        except (OSError, ValueError) as e:
            p.append("export exit %d: %s: %s" % (rc, e, harness.tail(err)))
        tap.check("the FOCUS metadata of the forced month lists the gaps (x_IncompleteAtClose)", p)
        # report pages
        rep = self.path("report-nov")
        rc, _, err = self.gl(db, "report", "--period", NOV, "--out", rep)
        pages = sorted(os.listdir(rep)) if os.path.isdir(rep) else []
        p = [] if rc == 0 and pages else ["report exit %d: %s" % (rc, harness.tail(err))]
        for f in pages:
            text = " ".join(open(os.path.join(rep, f), encoding="utf-8").read().split())
            if "Incomplete at close" not in text or rng(*missing) not in text:
                p.append("%s does not state the gaps" % f)
        tap.check("every report page of the forced month (%d: team and fleet, HTML and "
                  "Markdown) states the gaps" % len(pages), p)
        # a gap deleted by hand: the stored texts no longer match
        bad = self.path("forced-tampered.db")
        shutil.copy(db, bad)
        try:
            n = ledger_db.delete_missing_gaps(bad, NOV)
        except ledger_db.OperationalError as e:  # an engine without schema 009
            tap.note("closed_gap: %s" % e)
            n = -1
        rc, out, err = self.gl(bad, "invoice", "--period", NOV)
        tap.check("a closed_gap row deleted by hand: invoice refused (exit 7, names the period, "
                  "prints nothing)",
                  [] if n == 1 and rc == 7 and not out and NOV in err else
                  ["%d rows deleted; exit %d, %d bytes out: %s" % (n, rc, len(out),
                                                                   harness.tail(err))])
        # 3: FOCUS 1.3 of the closed month (frozen as 1.2): from its figures
        rc, out, err = self.gl(db, "export", "--period", NOV, "--focus-version", "1.3")
        rc12, out12, err12 = self.gl(db, "export", "--period", NOV, "--focus-version", "1.2")
        rc0, out0, _ = self.gl(db, "export", "--period", NOV)
        tap.check("export --focus-version 1.3 of the closed month (frozen as FOCUS 1.2): exit "
                  "0, the 1.3 header, as many rows as 1.2",
                  [] if rc == 0 and "ServiceProviderName" in out.split("\n", 1)[0] and
                  out.count("\n") == out0.count("\n") > 1 else
                  ["exit %d, %d lines (1.2: %d): %s" % (rc, out.count("\n"), out0.count("\n"),
                                                      harness.tail(err))])
        tap.check("export --focus-version 1.2 of the closed month prints what export prints",
                  [] if rc12 == 0 and rc0 == 0 and out12 == out0 and
                  "ServiceProviderName" not in out12.split("\n", 1)[0] else
                  ["exit %d/%d, same %s: %s" % (rc12, rc0, out12 == out0,
                                                harness.tail(err12))])

    # ---- 4
    def wrong_periods(self):
        tap = self.tap
        db = self.path("forced.db")  # November 1-15 collected, November closed
        open_db = self.path("open.db")
        self.collect(open_db, "2026-11-01T00:00:00Z", "2026-11-03T00:00:00Z")
        for dbname, d in (("closed November", db), ("open November", open_db)):
            for period in ("2025-01", "2030-01"):
                for argv in (["invoice"], ["export", "--out", self.path("x-%s.csv" % period)],
                             ["report", "--out", self.path("rep-%s" % period)],
                             ["summary"], ["anomalies"]):
                    args = [argv[0], "--period", period] + argv[1:]
                    rc, out, err = self.gl(d, *args)
                    flat = " ".join(err.split())
                    p = [] if rc == 7 else ["exit %d, want 7" % rc]
                    if "period %s has no collected hour" % period not in flat:
                        p.append("stderr does not name %s: %s" % (period, harness.tail(flat)))
                    if "in period %s" % NOV not in flat:
                        p.append("stderr does not name the period holding data (%s): %s"
                                 % (NOV, harness.tail(flat)))
                    if out:
                        p.append("%d bytes on stdout" % len(out))
                    for w in argv[2:]:
                        if os.path.exists(w):
                            p.append("%s written" % w)
                    tap.check("%s (%s): exit 7 naming %s and the period with data, nothing "
                              "printed or written" % (" ".join(args[:3]), dbname, period), p)
        rc, out, err = self.gl(open_db, "invoice", "--period", NOV)
        tap.check("invoice of the partly collected open November still prints (exit 0)",
                  [] if rc == 0 and json.loads(out)["invoices"] else
                  ["exit %d: %s" % (rc, harness.tail(err))])

    # ---- 5
    def command_line(self):
        tap = self.tap
        db = self.path("open.db")
        b = self.eng.bin

        def run(*argv):
            return harness.run_cmd([b] + list(argv), cwd=self.work)

        before = run("--config", self.cfg, "--db", db, "invoice", "--period", NOV)
        after = run("invoice", "--period", NOV, "--config", self.cfg, "--db=" + db, "--quiet")
        tap.check("global options after the command (--config, --db=, --quiet): the same "
                  "invoices as before it",
                  [] if before[0] == 0 and after[0] == 0 and before[1] == after[1] and
                  not after[2] else ["exit %d/%d, same %s: %s" % (
                      before[0], after[0], before[1] == after[1], harness.tail(after[2]))])
        rc, out, err = run("invoice", "--config", self.cfg, "--db", db, "--perod", NOV)
        tap.check("invoice --perod: exit 2, did you mean --period?",
                  [] if rc == 2 and "did you mean --period?" in err else
                  ["exit %d: %s" % (rc, harness.tail(err))])
        rc, out, err = run("--config", self.cfg, "--period", NOV, "invoice")
        tap.check("--period before the command: exit 2, it goes after the command",
                  [] if rc == 2 and "goes after the command" in err else
                  ["exit %d: %s" % (rc, harness.tail(err))])
        rc, out, err = run("--config", self.cfg, "--db", db, "invocie", "--period", NOV)
        tap.check("a mistyped command: exit 2, did you mean invoice?",
                  [] if rc == 2 and "did you mean invoice?" in err else
                  ["exit %d: %s" % (rc, harness.tail(err))])
        rc, out, err = run("invoice", "--period", NOV, "--config")
        tap.check("--config after the command without a value: exit 2 naming it",
                  [] if rc == 2 and '"--config" needs a value' in err else
                  ["exit %d: %s" % (rc, harness.tail(err))])


def main():
    ap = harness.arguments(__doc__)
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    tap = harness.Tap()
    return harness.run_driver(lambda a, t: Period(a, t), args, tap, "period", "gl-period-")


if __name__ == "__main__":
    sys.exit(main())
