#!/usr/bin/env python3
"""advise_test.py - right-sizing and consolidation advice (`gpuledger advise`).

Usage: python3 tests/integration/advise_test.py --bin build/gpuledger [--work DIR] [--keep]

scenarios/advise.json (tests/gen/gencluster.py) is backfilled into a real
Prometheus and collected. Checks:
  lines     every right-sizing line (workload, team, peak, p99 bound, steps,
            need, recommendation and saving) equals the generator's
            independent model (gencluster.advice_expected), exactly
  hand      the model's recommendations (MIG slices, a smaller GPU model of
            the fleet at its own price) and savings equal the hand
            calculation below; right-sized workloads get nothing
  nodes     consolidation per node: GPU-hours in use, the lower bound and the
            saving equal the model's; adv-n3's four GPUs fit on two
  repull    collecting the window again gives the same advice (the hour's
            peak rows are replaced, not added)
  hours     the window's stored hours copied over 30 windows (120 hours, one
            pod on a device for all of them) under an A100 price that changes
            on day 5: every line's peak, p99 bound, steps, pods, team and
            saving, and every node's GPU-hours, bound and saving equal a
            calculation from the stored peak rows in this file; again with
            one GPU of adv-n3 measured at half its capacity in every third
            hour (its groups and node rows split by the capacity of the hour),
            and with the cluster copied as a second one
  built     those days built into daily groups by a collection after them:
            the groups equal a restatement of their rows in SQL, the advice
            is byte-identical to the hourly read, and a change to a built
            group shows (it is read); after an hour of a built day is
            re-collected with other peaks, with a price change inside a
            built day, a GPU remeasured in a built day and the usage pruned:
            the changed days unbuilt, the advice (and report pages) equal
            to the calculation from the rows and to the hourly read
  figures   days with hours without peaks (usage alone, as server mode
            stores it) built: each day's stored count of those pod-hours
            and GPU sizes equal their rows', the advice's count equals the
            rows' and is read from the stored figures; a re-collection of
            such hours in server mode, and a prune of the month, unbuild
            their days
  invoices  every invoice is byte-identical with the peak table emptied,
            and equals the generator's expected totals: advice bills nothing
  server    collection.mode server (billing basis used, every host summed on
            the backend): every pod-hour is counted as without peak data and
            named in a warning; no advice is made from the hourly sums
  pages     `advise --format md`, and the team report page (HTML, Markdown)
            list the recommendations
"""

import fractions
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tests", "gen"))
sys.path.insert(0, HERE)

import gencluster as gc  # noqa: E402
import harness  # noqa: E402
import ledger_db  # noqa: E402
from harness import tail  # noqa: E402

SCENARIO = os.path.join(HERE, "scenarios", "advise.json")
PERIOD = "2026-11"
WINDOW = ("2026-11-03T00:00:00Z", "2026-11-03T04:00:00Z")
A100 = "NVIDIA A100-SXM4-80GB"

# By hand: 240 steps of 60 s; a whole A100 allocates 81920 - 615 = 81305 MiB;
# 0.03 USD per GB-hour; an amount = MiB·s × 2^20 / (3600 × 10^9) × 0.03,
# rounded to the cent once per price row (held and recommended apart).
#   big-0 peak 9000, needs ⌈9000 × 1.1⌉ = 9900 → MIG 1g.10gb (9984 MiB):
#     held 81305 × 14400 MiB·s → 10.2305 → 10.23; 9984 × 14400 → 1.2563 → 1.26
#     saving 10.23 - 1.26 = 8.97
#   vec (3g.40gb, 40192 MiB) peak 8000, needs 8800 → 1g.10gb:
#     5.0573 → 5.06, minus 1.26 = 3.80
#   ws (4 pods on whole A100s, 960 steps) peak 30000, needs 33000 → 3g.40gb
#     (40192 MiB): 40.9221 → 40.92, minus 20.2293 → 20.23 = 20.69
#   mid (whole A100) peak 18000, needs 19800 → the fleet's L4 (23034 MiB,
#     below any MIG slice that holds it), priced at the L4's 0.05:
#     10.23 - 23034 × 14400 → 4.8306 → 4.83 = 5.40
#   emb (whole L4, 22534 usable) peak 20000, needs 22000: right-sized.
#   tiny (1g.10gb) peak 9500 needs 10450 > 9984, train peak 75000 needs
#     82500 > 81305: right-sized, nothing.
#   adv-n3: 4 × 30000 × 1.1 = 132000 MiB → ⌈132000 / 81920⌉ = 2 of 4 devices
#     each of 4 hours: 8 GPU-hours above the bound × 81920 MiB × 3600 s
#     → 20.6158 → 20.62
HAND = {("team-a", "Pod", "big-0"): ("1g.10gb", "8.97"),
        ("team-b", "Job", "vec"): ("1g.10gb", "3.80"),
        ("team-c", "StatefulSet", "ws"): ("3g.40gb", "20.69"),
        ("team-e", "StatefulSet", "mid"): ("NVIDIA L4", "5.40"),
        ("team-b", "Job", "tiny"): None, ("team-d", "Job", "train"): None,
        ("team-e", "StatefulSet", "emb"): None}
HAND_NODES = {"adv-n3": (16, 8, "20.62"), "adv-n1": (4, 4, "0.00"), "adv-n4": (4, 4, "0.00"),
              "adv-n5": (4, 4, "0.00"), "adv-n6": (4, 4, "0.00")}


def line_key(x):
    return (x.get("cluster"), x.get("namespace"), x.get("workload_kind"), x.get("workload"),
            x.get("gpu_model"), "", x.get("allocation_mib"))


def price_amount(prices, per_entry):
    """Σ over price rows of GB-hours × price, each rounded half-even to the cent once."""
    return sum(gc.to_units(gc.round_half_even(gc.mib_s_to_gbh(mib_s)
                                              * fractions.Fraction(prices[e][1]), 2), 2)
               for e, mib_s in per_entry.items())


def price_entry(prices, model, hour):
    return next((i for i, (m, _, vf, vt) in enumerate(prices) if m == model and
                 (vf is None or hour >= vf) and (vt is None or hour < vt)), None)


def hours_expected(rows, prices, rec, headroom=10, step=60):
    """Lines and nodes from stored peak rows: per workload, model and
    allocation the largest MiB, the steps, the p99 bucket's upper edge, the
    pods; the saving of the recommendation rec (its size does not depend on
    the hours) per price row; per node-hour the devices with a step against
    ⌈Σ pod peaks × 1.1 ÷ capacity⌉, a node per model and capacity."""
    lines, pod_hour = {}, {}
    for (hour, cl, ns, pod, uuid, host, okind, oname, prof, model, cap, bucket, steps, peak,
         alloc, team) in sorted(rows, key=lambda r: (r[1], r[2], r[3], r[4], r[0], r[11])):
        key = (cl, ns, okind or "Pod", oname if okind else pod, model, "", alloc)
        ln = lines.setdefault(key, {"team": team or "", "pods": set(), "peak_mib": 0,
                                    "steps": 0, "buckets": {}, "hours": {}})
        ln["pods"].add(pod)
        ln["peak_mib"] = max(ln["peak_mib"], peak)
        ln["steps"] += steps
        ln["buckets"][bucket] = ln["buckets"].get(bucket, 0) + steps
        ln["hours"][hour] = ln["hours"].get(hour, 0) + steps
        if not prof and cap > 0:
            k = (cl, host, model, cap, hour)
            ph = pod_hour.setdefault(k, {})
            ph[(ns, pod, uuid)] = max(ph.get((ns, pod, uuid), 0), peak)
    out = {}
    for key, ln in lines.items():
        n, cum, p99 = ln["steps"], 0, ln["peak_mib"]
        rank = -(-99 * n // 100)
        for b in sorted(ln["buckets"]):
            cum += ln["buckets"][b]
            if cum >= rank:
                p99 = min((b + 1) * 1024, ln["peak_mib"])
                break
        r, saving = rec.get(key), None
        if r:
            held, to = {}, {}
            for hour, steps in ln["hours"].items():
                e, f = price_entry(prices, key[4], hour), price_entry(prices, r["gpu_model"], hour)
                held[e] = held.get(e, 0) + key[6] * steps * step
                to[f] = to.get(f, 0) + r["mib"] * steps * step
            saving = gc.units_to_str(price_amount(prices, held) - price_amount(prices, to), 2)
        out[key] = {"team": ln["team"], "pods": len(ln["pods"]), "peak_mib": ln["peak_mib"],
                    "p99_bound_mib": p99, "steps": n, "saving": saving}
    nodes = {}
    for (cl, host, model, cap, hour), ph in pod_hour.items():
        nd = nodes.setdefault((cl, host, model, cap), [0, 0, {}])
        in_use = len({u for (_, _, u) in ph})
        bound = min(max(-(-(-(-sum(ph.values()) * (100 + headroom) // 100)) // cap), 1), in_use)
        nd[0] += in_use
        nd[1] += bound
        e = price_entry(prices, model, hour)
        nd[2][e] = nd[2].get(e, 0) + (in_use - bound) * cap * 3600
    return out, {k: (v[0], v[1], gc.units_to_str(price_amount(prices, v[2]), 2))
                 for k, v in nodes.items()}


class Suite(harness.ScenarioSuite):
    def setup_all(self):
        return self.collect_scenario(SCENARIO, WINDOW, db=self.path("advise.db"))

    def main(self):
        tap = self.tap
        for t in ("promtool", "prometheus"):
            if not shutil.which(t):
                tap.fail("%s on PATH" % t, "not found (Debian package prometheus)")
                return
        self.start_engine()
        try:
            gen, cfg, cfg_path, db = self.setup_all()
        except RuntimeError as e:
            tap.fail("generate, backfill and collect", e)
            return
        tap.setup("advise generated, backfilled, collected")
        with open(SCENARIO) as f:
            scn = json.load(f)
        cl = gc.Cluster(scn, os.path.dirname(SCENARIO))
        want = gc.advice_expected(cl, gc.parse_time(WINDOW[0]), gc.parse_time(WINDOW[1]))
        doc = json.loads(self.run(cfg_path, db, "advise", "--period", PERIOD))
        self.lines(doc, want)
        self.nodes(doc, want)
        again = self.run(cfg_path, db, "advise", "--period", PERIOD)
        self.run(cfg_path, db, "collect", "--from", WINDOW[0], "--to", WINDOW[1])
        tap.check("repull: collecting the window again gives the same advice",
                  [] if self.run(cfg_path, db, "advise", "--period", PERIOD) == again
                  else ["the advice changed after a re-pull"])
        self.hours(cfg, db, doc)
        self.invoices(gen, cfg_path, db)
        self.server(cfg)
        self.pages(cfg_path, db)

    def lines(self, doc, want):
        tap = self.tap
        got = {}
        for x in doc.get("right_sizing") or []:
            k = list(line_key(x))
            k[5] = x.get("allocation", "").split(" ")[1] if x.get("allocation", "").startswith(
                "MIG ") else ""
            r = x.get("recommendation")
            got[tuple(k)] = {
                "team": x.get("team"), "pods": x.get("pods"), "peak_mib": x.get("peak_mib"),
                "p99_bound_mib": x.get("p99_bound_mib"), "steps": x.get("steps"),
                "need_mib": x.get("need_mib"),
                "recommendation": None if r is None else {
                    "kind": r.get("kind"), "name": r.get("name"),
                    "gpu_model": r.get("gpu_model"), "mib": r.get("mib"),
                    "saving": r.get("saving")}}
        exp = want["lines"]
        tap.check("lines: right-sizing per workload equals the generator's model exactly",
                  ["%s: got %s, expected %s" % (k, got.get(k), exp.get(k))
                   for k in sorted(set(got) | set(exp), key=str) if got.get(k) != exp.get(k)])
        hand = {(v["team"], k[2], k[3]): (v["recommendation"] and (
            v["recommendation"]["name"], v["recommendation"]["saving"])) for k, v in exp.items()}
        tap.check("hand: the model's recommendations and savings equal the hand calculation "
                  "(nothing for right-sized workloads)",
                  [] if hand == HAND else ["model %s, by hand %s" % (hand, HAND)])
        p99 = [x.get("p99") for x in doc.get("right_sizing") or []
               if "(1 GiB buckets: an upper bound)" not in (x.get("p99") or "")]
        assumes = [x.get("workload") for x in doc.get("right_sizing") or []
                   if x.get("recommendation") and not x["recommendation"].get("assumes")]
        tap.check("lines: every p99 says it is a 1 GiB bucket bound and every recommendation "
                  "what it assumes", p99 + assumes)
        total = sum(gc.to_units(v["recommendation"]["saving"], 2) for v in exp.values()
                    if v["recommendation"])
        tap.check("lines: the total saving is the sum of the lines'",
                  [] if doc.get("right_sizing_saving") == gc.units_to_str(total, 2)
                  else ["got %s, expected %s" % (doc.get("right_sizing_saving"), total)])

    def nodes(self, doc, want):
        got = {(x.get("cluster"), x.get("node"), x.get("gpu_model")): {
            "gpu_hours_in_use": x.get("gpu_hours_in_use"),
            "lower_bound_gpu_hours": x.get("lower_bound_gpu_hours"),
            "saving": x.get("saving")} for x in doc.get("consolidation") or []}
        self.tap.check("nodes: consolidation per node equals the generator's model",
                       [] if got == want["nodes"]
                       else ["got %s, expected %s" % (got, want["nodes"])])
        hand = {k[1]: (v["gpu_hours_in_use"], v["lower_bound_gpu_hours"], v["saving"])
                for k, v in want["nodes"].items()}
        bound = [x.get("node") for x in doc.get("consolidation") or []
                 if "lower bound" not in (x.get("bound") or "")]
        self.tap.check("nodes: the model equals the hand calculation (adv-n3's four GPUs fit "
                       "on two) and every node line says its bound is a lower bound",
                       ([] if hand == HAND_NODES else ["model %s, by hand %s" % (hand, HAND_NODES)])
                       + bound)

    def hours(self, cfg, db, doc4):
        """The window's hours copied COPIES times, 4 h apart, and the advice
        against a calculation from the copied rows (not the engine's code)."""
        copies, cut = 30, gc.parse_time("2026-11-05T00:00:00Z")
        path = self.path("hours.db")
        shutil.copyfile(db, path)
        w0, w1 = gc.parse_time(WINDOW[0]), gc.parse_time(WINDOW[1])
        ledger_db.repeat_window(path, w0, w1, copies)
        rows = ledger_db.peak_rows(path)
        prices = [(A100, "0.03", None, cut), (A100, "0.04", cut, None),
                  ("NVIDIA L4", "0.05", None, None)]
        c2 = json.loads(json.dumps(cfg))
        c2["prices"] = {"entries": [
            {"model_pattern": "^%s$" % m, "unit": "GB-Hours", "price": pr, "currency": "USD",
             "valid_from": "2026-01-01T00:00:00Z" if vf is None else "2026-11-05T00:00:00Z",
             "valid_to": "" if vt is None else "2026-11-05T00:00:00Z"}
            for m, pr, vf, vt in prices]}
        c2_path = self.path("config-hours.json")
        with open(c2_path, "w") as f:
            json.dump(c2, f, indent=1)
        doc = json.loads(self.run(c2_path, path, "advise", "--period", PERIOD))
        rec = {line_key(x): x.get("recommendation") for x in doc4.get("right_sizing") or []}
        want_lines, want_nodes = hours_expected(rows, prices, rec)
        got = {line_key(x): {k: x.get(k) for k in ("team", "pods", "peak_mib", "p99_bound_mib",
                                                   "steps")}
               | {"saving": (x.get("recommendation") or {}).get("saving")}
               for x in doc.get("right_sizing") or []}
        big = sum(1 for r in rows if r[3] == "big-0")
        self.tap.check("hours: %d stored hours (big-0 in %d peak rows): every line equals the "
                       "calculation from the rows" % (copies * 4, big),
                       ["%s: got %s, expected %s" % (k, got.get(k), want_lines.get(k))
                        for k in sorted(set(got) | set(want_lines), key=str)
                        if got.get(k) != want_lines.get(k)])
        got = {(x.get("cluster"), x.get("node"), x.get("gpu_model"), x.get("capacity_mib")): (
            x.get("gpu_hours_in_use"), x.get("lower_bound_gpu_hours"), x.get("saving"))
            for x in doc.get("consolidation") or []}
        self.tap.check("hours: every node's GPU-hours, bound and saving equal the calculation",
                       [] if got == want_nodes else ["got %s, expected %s" % (got, want_nodes)])
        self.remeasured(c2_path, path, rows, prices, rec)
        self.built(c2, path, prices)
        self.figures(c2, path)

    def remeasured(self, cfg_path, hours_db, rows, prices, rec):
        """One whole GPU of adv-n3 measured at half its capacity in every
        third hour of the copied window: its groups and node-hours split by
        the capacity of the hour; and the cluster copied as a second one
        (named to sort first): both against the calculation from the rows."""
        path = self.path("remeasured.db")
        shutil.copyfile(hours_db, path)
        uuid = min(r[4] for r in rows if r[5] == "adv-n3" and not r[8])
        hours = sorted({r[0] for r in rows})[::3]
        n = ledger_db.remeasure_device(path, uuid, hours, 40960)
        copied = ledger_db.copy_cluster(path, "gpu-adv", "a-copy")
        rec = rec | {("a-copy",) + k[1:]: v for k, v in rec.items() if k[0] == "gpu-adv"}
        doc = json.loads(self.run(cfg_path, path, "advise", "--period", PERIOD))
        problems = self.against_rows(doc, path, prices, rec)
        got = {(x.get("cluster"), x.get("node"), x.get("capacity_mib"))
               for x in doc.get("consolidation") or []}
        halves = [k for k in got if k[1] == "adv-n3" and k[2] == 40960]
        clusters = {k[0] for k in got}
        if n != len(hours) or len(halves) != 2 or clusters != {"a-copy", "gpu-adv"}:
            problems.append("%d of %d hours remeasured; node rows at 40960 MiB: %s; clusters %s"
                            % (n, len(hours), halves, clusters))
        self.tap.check("hours: a GPU of adv-n3 at 40960 MiB in %d of its hours, the cluster "
                       "copied as a second (%d peak rows): every line and every node row (per "
                       "cluster and capacity) equals the calculation" % (len(hours), copied),
                       problems)

    def against_rows(self, doc, db, prices, rec=None):
        """What differs between doc's lines and node rows and the
        calculation from db's peak rows (each line's saving at the size of
        rec, by default the size doc recommends: the hours' peaks decide
        it)."""
        if rec is None:
            rec = {line_key(x): x.get("recommendation") for x in doc.get("right_sizing") or []}
        want_lines, want_nodes = hours_expected(ledger_db.peak_rows(db), prices, rec)
        got = {line_key(x): {k: x.get(k) for k in ("team", "pods", "peak_mib", "p99_bound_mib",
                                                   "steps")}
               | {"saving": (x.get("recommendation") or {}).get("saving")}
               for x in doc.get("right_sizing") or []}
        problems = ["%s: got %s, expected %s" % (k, got.get(k), want_lines.get(k))
                    for k in sorted(set(got) | set(want_lines), key=str)
                    if got.get(k) != want_lines.get(k)]
        got = {(x.get("cluster"), x.get("node"), x.get("gpu_model"), x.get("capacity_mib")): (
            x.get("gpu_hours_in_use"), x.get("lower_bound_gpu_hours"), x.get("saving"))
            for x in doc.get("consolidation") or []}
        if got != want_nodes:
            problems.append("nodes: got %s, expected %s" % (got, want_nodes))
        return problems

    def row_read(self, cfg_path, db, *args):
        """The command's output on a copy of db without built days (every
        hourly row read)."""
        copy = self.path("unbuilt.db")
        shutil.copyfile(db, copy)
        ledger_db.unbuild_peak_days(copy)
        return self.run(cfg_path, copy, *args)

    def same_as_rows(self, cfg_path, db, prices):
        """Problems of db's advice: against the calculation from its rows,
        and against the engine's read of every hourly row (advise as JSON
        and Markdown, the report's pages: byte for byte)."""
        out = self.run(cfg_path, db, "advise", "--period", PERIOD)
        problems = self.against_rows(json.loads(out), db, prices)
        if out != self.row_read(cfg_path, db, "advise", "--period", PERIOD):
            problems.append("advise differs from the read of every hourly row")
        md = ("advise", "--period", PERIOD, "--format", "md")
        if self.run(cfg_path, db, *md) != self.row_read(cfg_path, db, *md):
            problems.append("advise --format md differs from the read of every hourly row")
        pages = []
        for name, read in (("report-built", self.run), ("report-rows", self.row_read)):
            out = self.path(name)
            shutil.rmtree(out, ignore_errors=True)
            read(cfg_path, db, "report", "--period", PERIOD, "--out", out)
            pages.append({f: open(os.path.join(out, f), "rb").read()
                          for f in sorted(os.listdir(out))})
        if not pages[0] or pages[0] != pages[1]:
            problems.append("report pages differ from the read of every hourly row: %s" % [
                f for f in sorted(set(pages[0]) | set(pages[1]))
                if pages[0].get(f) != pages[1].get(f)])
        return problems

    def build_fails(self, cfg_path, db, prices, before, hour):
        """A collection of hour after db's days whose building of them
        fails (set-up: a trigger refusing their marks): the hour is stored
        and the collection succeeds, with a warning naming the cluster and
        day; nothing is built and the advice is the hourly read's."""
        broken = self.path("build-fails.db")
        shutil.copyfile(db, broken)
        ledger_db.break_peak_day_build(broken)
        hours = set(ledger_db.collected_hours(broken))
        rc, _, err = self.eng.run(cfg_path, broken, "collect", "--from",
                                  gc.fmt_time(hour), "--to", gc.fmt_time(hour + 3600),
                                  timeout=300)
        day = gc.fmt_time(hour - 5 * 86400)[:10]
        warned = [ln for ln in err.splitlines() if "advice days not built" in ln
                  and "warn" in ln.split("advice days not built")[0]]
        problems = [] if rc == 0 else ["collect exit %s: %s" % (rc, err[-300:])]
        if not any("cluster=gpu-adv" in ln and day in ln and "broken by the test" in ln
                   for ln in warned):
            problems.append("no warning naming the cluster, day %s and error: %s"
                            % (day, warned))
        new = set(ledger_db.collected_hours(broken)) - hours
        if hour not in {h[1] for h in new}:
            problems.append("hour not stored (new hours %s)" % sorted(new)[:3])
        if ledger_db.peak_days_built(broken):
            problems.append("days built: %s" % ledger_db.peak_days_built(broken))
        out = self.run(cfg_path, broken, "advise", "--period", PERIOD)
        if out != before:
            problems.append("the advice differs from the hourly read before")
        tap = self.tap
        tap.check("built: a failure building the days before a collection's window is a "
                  "warning: the collection exits 0 with its hour stored, the advice exact",
                  problems + self.against_rows(json.loads(out), broken, prices))

    def built(self, cfg, hours_db, prices):
        """The copied hours' days built into daily groups by a collection
        after them (the hour 2026-11-03T01 first given other peaks), then
        read: as the hourly rows are, after an hour of a built day is
        re-collected, with a price bound inside a built day, a device
        remeasured in a built day, and usage pruned."""
        tap = self.tap
        path = self.path("built.db")
        shutil.copyfile(hours_db, path)
        cfg_path = self.path("config-hours.json")
        h1 = gc.parse_time(WINDOW[0]) + 3600
        changed = ledger_db.add_to_hour_peaks(path, h1, 700)
        before = self.run(cfg_path, path, "advise", "--period", PERIOD)
        days = [gc.parse_time("2026-11-0%dT00:00:00Z" % d) for d in range(3, 8)]
        self.build_fails(cfg_path, path, prices, before, days[-1] + 86400)
        self.run(cfg_path, path, "collect", "--from", "2026-11-08T00:00:00Z",
                 "--to", "2026-11-08T01:00:00Z")
        got = ledger_db.peak_days_built(path)
        after = self.run(cfg_path, path, "advise", "--period", PERIOD)
        bad = ledger_db.peak_day_mismatches(path)
        tap.check("built: a collection builds the days before its window (%d rows of %s "
                  "changed first): their groups and node-hours equal their rows' (SQL); the "
                  "advice is byte-identical to the hourly read before"
                  % (changed, WINDOW[0][:10]),
                  ([] if got == [("gpu-adv", d) for d in days] else ["built days %s" % got]) +
                  ["%d rows differ, first %s" % (len(bad), bad[:2])][:len(bad)] +
                  ([] if after == before else ["the advice changed once the days were built"]) +
                  self.against_rows(json.loads(after), path, prices))
        tampered = self.path("tampered.db")
        shutil.copyfile(path, tampered)
        n = ledger_db.add_to_day_peaks(tampered, "big-0", 5000)
        doc = json.loads(self.run(cfg_path, tampered, "advise", "--period", PERIOD))
        peak = {x.get("workload"): x.get("peak_mib") for x in doc.get("right_sizing") or []}
        want = {x.get("workload"): x.get("peak_mib")
                for x in json.loads(before).get("right_sizing") or []}
        tap.check("built: the built days are read from their groups (big-0's raised there "
                  "alone in %d groups: its peak %s, %s in the rows)"
                  % (n, peak.get("big-0"), want.get("big-0")),
                  [] if n > 0 and want.get("big-0") and
                  peak.get("big-0") == want["big-0"] + 5000 else ["not read from the groups"])

        self.run(cfg_path, path, "collect", "--from", WINDOW[0], "--to", WINDOW[1])
        got = ledger_db.peak_days_built(path)
        problems = [] if got == [("gpu-adv", d) for d in days[1:]] else ["built days %s" % got]
        left = ledger_db.peak_day_rows(path, "gpu-adv", days[0])
        if left:
            problems.append("%d groups and node-hours of the unbuilt day kept" % left)
        tap.check("built: %s re-collected (its hour 01 back to other peaks): that day "
                  "unbuilt, its groups gone, the advice equals the rows' calculation and "
                  "hourly read" % WINDOW[0][:10],
                  problems + self.same_as_rows(cfg_path, path, prices))

        for trig in ("device_peak_day_update", "model_hour_day_insert"):
            hand = self.path("no-trigger.db")
            shutil.copyfile(path, hand)
            ledger_db.drop_trigger(hand, trig)
            rc, _, err = self.eng.run(cfg_path, hand, "advise", "--period", PERIOD,
                                      timeout=300)
            tap.check("built: a database without trigger %s is refused at open, naming it"
                      % trig, [] if rc != 0 and trig in err
                      else ["exit %s: %s" % (rc, tail(err))])

        cut = "2026-11-06T12:00:00Z"
        c3 = json.loads(json.dumps(cfg))
        for e in c3["prices"]["entries"]:
            for k in ("valid_from", "valid_to"):
                if e[k] == "2026-11-05T00:00:00Z":
                    e[k] = cut
        c3_path = self.path("config-cut.json")
        with open(c3_path, "w") as f:
            json.dump(c3, f, indent=1)
        p3 = [(m, pr, vf if vf is None else gc.parse_time(cut), vt if vt is None
               else gc.parse_time(cut)) for m, pr, vf, vt in prices]
        tap.check("built: a price bound inside a built day (%s): the advice equals the rows' "
                  "calculation and hourly read" % cut,
                  self.same_as_rows(c3_path, path, p3))

        remeasured = self.path("built-remeasured.db")
        shutil.copyfile(path, remeasured)
        rows = ledger_db.peak_rows(remeasured)
        uuid = min(r[4] for r in rows if r[5] == "adv-n3" and not r[8])
        hours = sorted(r[0] for r in rows if days[3] <= r[0] < days[4])
        n = ledger_db.remeasure_device(remeasured, uuid, sorted(set(hours))[::2], 40960)
        got = ledger_db.peak_days_built(remeasured)
        problems = [] if got == [("gpu-adv", d) for d in days[1:3] + days[4:]] and n > 0 \
            else ["%d hours remeasured; built days %s" % (n, got)]
        tap.check("built: a GPU remeasured in half the hours of a built day: that day "
                  "unbuilt, the others kept; the advice equals the rows' calculation and "
                  "hourly read", problems + self.same_as_rows(cfg_path, remeasured, prices))

        pruned = self.path("built-pruned.db")
        shutil.copyfile(path, pruned)
        n = ledger_db.delete_usage_as_prune(pruned, "2026-11-01", "2026-12-01")
        got = ledger_db.peak_days_built(pruned)
        problems = [] if got == [("gpu-adv", d) for d in days[1:]] and n > 0 \
            else ["%d usage rows pruned; built days %s" % (n, got)]
        if self.run(cfg_path, pruned, "advise", "--period", PERIOD) != \
                self.row_read(cfg_path, pruned, "advise", "--period", PERIOD):
            problems.append("advise differs from the read of every hourly row")
        tap.check("built: the month's usage pruned (%d rows; peaks kept): the built days "
                  "kept, the advice byte-identical to the hourly read" % n, problems)

    def figures(self, cfg, hours_db):
        """The built days' other figures: the pod-hours without peak data
        (with hours stored as server mode stores them: usage, no peaks) and
        the fleet's GPU sizes, stored when a day is built and read from
        there; a re-collection of hours without peaks (usage alone
        changed) unbuilds their day."""
        tap = self.tap
        path = self.path("figures.db")
        shutil.copyfile(hours_db, path)
        cfg_path = self.path("config-hours.json")
        w0, w1 = gc.parse_time(WINDOW[0]), gc.parse_time(WINDOW[1])
        days = [gc.parse_time("2026-11-0%dT00:00:00Z" % d) for d in range(3, 8)]
        # the window's hours and the next day's first four without peaks,
        # the window's with more pods than a re-collection finds
        peakless = ledger_db.delete_hour_peaks(path, w0, w1) + \
            ledger_db.delete_hour_peaks(path, days[1], days[1] + 4 * 3600)
        ghosts = ledger_db.add_ghost_usage(path, w0, w1)
        self.run(cfg_path, path, "collect", "--from", "2026-11-08T00:00:00Z",
                 "--to", "2026-11-08T01:00:00Z")
        got = ledger_db.peak_days_built(path)
        bad = ledger_db.peak_day_mismatches(path)
        out = self.run(cfg_path, path, "advise", "--period", PERIOD)
        n = json.loads(out).get("pod_hours_without_peak_data")
        want = ledger_db.pod_hours_without_peak(path)
        stored = ledger_db.day_missing_total(path)
        tap.check("figures: days with hours without peaks built (%d peak rows deleted, %d ghost "
                  "usage rows): each day's pod-hours without peaks (%s stored) and GPU sizes "
                  "equal their rows' (SQL); the advice counts %s pod-hours, the rows %d, and is "
                  "byte-identical to the hourly read" % (peakless, ghosts, stored, n, want),
                  ([] if got == [("gpu-adv", d) for d in days] else ["built days %s" % got]) +
                  ["%d rows differ, first %s" % (len(bad), bad[:2])][:len(bad)] +
                  ([] if n == want == stored > 0 and peakless > 0 and ghosts > 0
                   else ["count %s, rows %d, stored %s" % (n, want, stored)]) +
                  ([] if out == self.row_read(cfg_path, path, "advise", "--period", PERIOD)
                   else ["advise differs from the read of every hourly row"]))

        tampered = self.path("figures-tampered.db")
        shutil.copyfile(path, tampered)
        changed = ledger_db.add_to_day_missing(tampered, 1000)
        sizes = ledger_db.delete_day_sizes(tampered)
        doc = json.loads(self.run(cfg_path, tampered, "advise", "--period", PERIOD))
        recs = sorted(str(x.get("recommendation")) for x in doc.get("right_sizing") or [])
        was = sorted(str(x.get("recommendation")) for x in json.loads(out).get("right_sizing")
                     or [])
        tap.check("figures: the built days' counts and sizes are read from what was stored "
                  "(+1000 in %d days: %s pod-hours; %d sizes deleted: the recommendations "
                  "change)" % (changed, doc.get("pod_hours_without_peak_data"), sizes),
                  ([] if changed == len(days) and
                   doc.get("pod_hours_without_peak_data") == n + 1000 * changed
                   else ["not read from the stored counts"]) +
                  ([] if sizes > 0 and recs != was else ["not read from the stored sizes"]))

        server = json.loads(json.dumps(cfg))
        server["collection"]["mode"] = "server"
        server.setdefault("billing", {})["basis"] = "used"
        server_path = self.path("config-figures-server.json")
        with open(server_path, "w") as f:
            json.dump(server, f, indent=1)
        self.run(server_path, path, "collect", "--from", WINDOW[0], "--to", WINDOW[1],
                 "--allow-shrink")  # the ghosts are not found again
        got, n2, want, same = self.missing_read(cfg_path, path)
        tap.check("figures: %s re-collected in server mode (usage rewritten, no peaks before or "
                  "after): that day unbuilt, the others kept; the advice counts %s pod-hours, "
                  "the rows %d (%s before), byte-identical to the hourly read"
                  % (WINDOW[0][:10], n2, want, n),
                  ([] if got == [("gpu-adv", d) for d in days[1:]] else ["built days %s" % got]) +
                  ([] if n2 == want != n else ["count %s, rows %d" % (n2, want)]) + same)

        # prune deletes usage alone (peaks and device models kept)
        pruned = self.path("figures-pruned.db")
        shutil.copyfile(path, pruned)
        self.run(cfg_path, pruned, "close", "--period", PERIOD, "--force",
                 "--now", "2026-12-02T00:00:00Z")
        self.run(cfg_path, pruned, "prune", "--before", "2026-12")
        got, n3, want, same = self.missing_read(cfg_path, pruned)
        tap.check("figures: the month closed and pruned: its built days unbuilt; the advice "
                  "counts %s pod-hours without peaks, the rows %d (%s before), byte-identical "
                  "to the hourly read" % (n3, want, n2),
                  ([] if got == [] else ["built days %s" % got]) +
                  ([] if n3 == want != n2 else ["count %s, rows %d" % (n3, want)]) + same)

    def missing_read(self, cfg_path, db):
        """db's built days, the advice's count of pod-hours without peaks,
        the rows' count, and [] when the advice equals the hourly read."""
        out = self.run(cfg_path, db, "advise", "--period", PERIOD)
        same = out == self.row_read(cfg_path, db, "advise", "--period", PERIOD)
        return (ledger_db.peak_days_built(db), json.loads(out).get("pod_hours_without_peak_data"),
                ledger_db.pod_hours_without_peak(db),
                [] if same else ["advise differs from the read of every hourly row"])

    def invoices(self, gen, cfg_path, db):
        tap = self.tap
        before = self.run(cfg_path, db, "invoice", "--period", PERIOD, "--format", "json")
        empty = self.path("no-peaks.db")
        shutil.copyfile(db, empty)
        n = ledger_db.delete_pod_peaks(empty)
        after = self.run(cfg_path, empty, "invoice", "--period", PERIOD, "--format", "json")
        tap.check("invoices: byte-identical with the peak table emptied (%d rows)" % n,
                  [] if before == after and n > 0 else ["rows %d; invoices differ" % n])
        with open(os.path.join(gen, "expected.json")) as f:
            exp = json.load(f)
        got = {i.get("team"): i.get("total") for i in json.loads(before).get("invoices") or []}
        want = {t: v["total"] for t, v in exp["invoices"].items()}
        tap.check("invoices: totals equal the generator's expected ones",
                  [] if got == want else ["got %s, expected %s" % (got, want)])
        doc = json.loads(self.run(cfg_path, empty, "advise", "--period", PERIOD))
        tap.check("invoices: advice on a database without peak rows says so",
                  [] if doc.get("pod_hours_without_peak_data", 0) > 0 and
                  "no peak data" in (doc.get("warning") or "") and not doc.get("right_sizing")
                  else ["got %s" % {k: doc.get(k) for k in ("pod_hours_without_peak_data",
                                                            "warning")}])

    def server(self, cfg):
        doc = json.loads(json.dumps(cfg))
        doc["collection"]["mode"] = "server"
        doc.setdefault("billing", {})["basis"] = "used"  # server mode sums basis used only
        path = self.path("config-server.json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        db = self.path("server.db")
        self.run(path, db, "collect", "--from", WINDOW[0], "--to", WINDOW[1])
        adv = json.loads(self.run(path, db, "advise", "--period", PERIOD))
        hours_without = ledger_db.pod_hours_without_peak(db)
        # the scenario's hosts all sum on the backend: no pod-hour has a peak,
        # and none may be made up from the hourly sums
        pod_hours = 10 * 4
        ok = (adv.get("pod_hours_without_peak_data") == hours_without == pod_hours and
              "server mode" in (adv.get("warning") or "") and not adv.get("right_sizing"))
        self.tap.check("server: the %d pod-hours summed on the backend are counted as without "
                       "peak data, and no advice is made from hourly sums" % pod_hours,
                       [] if ok else ["advise says %s (lines %s), the database %d"
                                      % (adv.get("pod_hours_without_peak_data"),
                                         [(x.get("workload"), x.get("peak_mib"))
                                          for x in adv.get("right_sizing") or []],
                                         hours_without)])

    def pages(self, cfg_path, db):
        md = self.run(cfg_path, db, "advise", "--period", PERIOD, "--format", "md")
        problems = [w for w in ("big-0", "vec", "ws", "MIG 1g.10gb", "8.97", "20.62",
                                "whole GPU NVIDIA L4", "5.40", "lower bound") if w not in md]
        problems += [w for w in ("tiny (", "train (", "emb (") if w in md]
        self.tap.check("pages: advise --format md lists the recommendations, not the "
                       "right-sized workloads", problems)
        out = self.path("report")
        self.run(cfg_path, db, "report", "--period", PERIOD, "--out", out)
        problems = []
        for ext in ("html", "md"):
            path = os.path.join(out, "report-%s-team-c.%s" % (PERIOD, ext))
            try:
                with open(path) as f:
                    text = f.read()
            except OSError as e:
                problems.append(str(e))
                continue
            if "Right-sizing" not in text or "3g.40gb" not in text or "20.69" not in text:
                problems.append("%s without the right-sizing section" % path)
        self.tap.check("pages: team-c's report page (HTML and Markdown) shows its "
                       "recommendation", problems)



def main():
    ap = harness.arguments(__doc__)
    return harness.run_driver(Suite, ap.parse_args(), harness.Tap(limit=2000, shown=6),
                              "advise", "gpuledger-advise-")


if __name__ == "__main__":
    sys.exit(main())
