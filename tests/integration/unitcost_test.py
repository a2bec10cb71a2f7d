#!/usr/bin/env python3
"""unitcost_test.py - cost per unit of work from inference and training counters.

Usage: python3 tests/integration/unitcost_test.py --bin build/gpuledger [--work DIR] [--keep]

scenarios/unitcost.json (tests/gen/gencluster.py: a vLLM server whose
counters restart mid-period and miss half an hour of scrapes, a training
job counting steps, a pod with no work) is backfilled into a real Prometheus
and collected with work.presets ["vllm"] and a step counter. Checks:
  units     every pod's units per counter and hour in the database equal the
            generator's model (gencluster.work_expected), exactly, and the
            hand figures below: the restart and the gap lose nothing
  gap       the hour after the gap records the differences taken across it
  cost      `unit-cost --format json`: per workload memory GB-hours, cost,
            units per unit word and the cost per 1M tokens / 1k requests /
            step equal gencluster.unit_cost_expected, to the cent; the pod
            with no work says "no work recorded"
  formats   --format csv and md carry the same figures; run writes
            unit-cost-<period>.csv beside the FOCUS export
  report    the team pages show the section (table; chart in HTML)
  repull    collecting the window again leaves the same rows
  refuse    a counter with non-integral values fails the collection (exit
            != 0, naming the series and the time) and leaves the database
            as it was
  config    a bad work block (unknown preset, unit, missing query, a name
            twice, unknown key) fails with exit 3 naming the key
  presets   scenarios/unitcost-presets.json (SGLang, TGI with its token
            histograms' _sum beside _count and _bucket, Triton; a restart
            and a scrape gap), collected with work.presets ["sglang", "tgi",
            "triton"]: each counter's units per pod and hour and each
            workload's cost per unit equal the generator's model, and the
            hand totals below
  check     `check` prints "work counter NAME N series" per counter with N
            the generator's series at the probe time, NO DATA for a counter
            without series (exit 0), and exits 3 naming the counter when
            its series lack the pod label
"""

import csv
import io
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

SCENARIO = os.path.join(HERE, "scenarios", "unitcost.json")
PRESETS = os.path.join(HERE, "scenarios", "unitcost-presets.json")
PERIOD = "2026-11"
WINDOW = ("2026-11-02T00:00:00Z", "2026-11-02T06:00:00Z")
CLUSTER = "gpu-unit"
UNITS = {"vllm:prompt_tokens_total": "tokens", "vllm:generation_tokens_total": "tokens",
         "vllm:request_success_total": "requests", "train_steps_total": "steps"}
COUNTER = {"vllm:prompt_tokens_total": "vllm_prompt_tokens",
           "vllm:generation_tokens_total": "vllm_generation_tokens",
           "vllm:request_success_total": "vllm_requests", "train_steps_total": "train_steps"}

# By hand: 360 samples of vllm-0, 331 with one (the gap 03:50-04:20 drops
# 30); every step after the first adds per_step[(k-1) % n], whatever the
# restart (its sample is that step's increase) or the gap (the next sample
# carries it): prompt Σ over k=1..359 of [120, 80, 95, 101] = 89 × 396 +
# 120 + 80 + 95 = 35 539 tokens; generation 119 × 100 + 40 + 33 = 11 973;
# requests 89 × 6 + 1 + 2 + 0 = 537; train-0 239 steps (240 samples, 01:00
# to 05:00, the first one the baseline).
# The presets' counters as each server publishes them (the names in
# docs/configuration.md), their unit words and the counter names of the
# presets.
PRESET_COUNTERS = {
    "sglang:prompt_tokens_total": ("tokens", "sglang_prompt_tokens"),
    "sglang:generation_tokens_total": ("tokens", "sglang_generation_tokens"),
    "sglang:num_requests_total": ("requests", "sglang_requests"),
    "tgi_request_input_length_sum": ("tokens", "tgi_input_tokens"),
    "tgi_request_generated_tokens_sum": ("tokens", "tgi_generated_tokens"),
    "tgi_request_success": ("requests", "tgi_requests"),
    "nv_inference_request_success": ("requests", "triton_requests"),
    "nv_inference_count": ("inferences", "triton_inferences"),
}
# By hand: sglang-0 has 360 samples, each after the first adding
# per_step[(k-1) % n] (the restart's sample is that step's increase): prompt
# 119 × (310+250+275) + 310 + 250 = 99 925; generation 179 × 112 + 64 = 20 112;
# requests 119 × 6 + 2 + 1 = 717. tgi-0 from 01:00, 300 samples: input
# 149 × 400 + 180 = 59 780; generated 99 × 270 + 90 + 70 = 26 890; requests
# 299. triton-0 360 samples, the gap's work carried to 02:40: requests
# 179 × 9 + 5 = 1 616; inferences 179 × 72 + 40 = 12 928.
PRESET_HAND = {"sglang:prompt_tokens_total": 99925, "sglang:generation_tokens_total": 20112,
               "sglang:num_requests_total": 717, "tgi_request_input_length_sum": 59780,
               "tgi_request_generated_tokens_sum": 26890, "tgi_request_success": 299,
               "nv_inference_request_success": 1616, "nv_inference_count": 12928}
HAND = {"vllm:prompt_tokens_total": 35539, "vllm:generation_tokens_total": 11973,
        "vllm:request_success_total": 537, "train_steps_total": 239}


def dump(db):
    """Every table's rows (what 'the database as it was' means)."""
    return ledger_db.dump(db)


def work_rows(db):
    return ledger_db.work_units(db)


class Suite(harness.ScenarioSuite):
    def config(self, name, doc):
        """doc written to NAME.json in the work directory: its path."""
        path = self.path(name + ".json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        return path

    def setup(self):
        _, self.cfg, self.cfg_path, self.db = self.collect_scenario(
            SCENARIO, WINDOW, edit=lambda cfg: cfg.update(run={"start": WINDOW[0]}),
            db=self.path("unitcost.db"))

    def main(self):
        tap = self.tap
        for t in ("promtool", "prometheus"):
            if not shutil.which(t):
                tap.fail("%s on PATH" % t, "not found (Debian package prometheus)")
                return
        self.start_engine()
        try:
            self.setup()
        except RuntimeError as e:
            tap.fail("generate, backfill and collect", e)
            return
        tap.setup("unitcost generated, backfilled, collected")
        with open(SCENARIO) as f:
            self.cl = gc.Cluster(json.load(f), os.path.dirname(SCENARIO))
        self.t0, self.t1 = gc.parse_time(WINDOW[0]), gc.parse_time(WINDOW[1])
        self.units()
        self.cost()
        self.repull()
        self.refuse()
        self.config_errors()
        self.check()
        self.presets()

    def units(self):
        tap = self.tap
        want = {}
        for (cl, ns, pod, metric), hours in gc.work_expected(self.cl, self.t0, self.t1).items():
            for h, u in hours.items():
                want[(cl, ns, pod, COUNTER[metric], h)] = u
        rows = work_rows(self.db)
        got = {r[:5]: r[5] for r in rows}
        tap.check("units: every pod's units per counter and hour equal the generator's model",
                  [] if got == want else ["got %s, expected %s" % (sorted(got.items()),
                                                                   sorted(want.items()))])
        totals = {}
        for (_, _, _, metric), hours in gc.work_expected(self.cl, self.t0, self.t1).items():
            totals[metric] = totals.get(metric, 0) + sum(hours.values())
        tap.check("units: the model's totals equal the hand calculation (restart and gap "
                  "lose nothing)", [] if totals == HAND else ["model %s, by hand %s"
                                                              % (totals, HAND)])
        h4 = gc.parse_time("2026-11-02T04:00:00Z")
        gaps = {r[3]: r[6] for r in rows if r[2] == "vllm-0" and r[4] == h4}
        other = [r for r in rows if r[6] and r[4] != h4]
        tap.check("gap: the 04:00 hour of vllm-0 records the differences taken across the gap",
                  [] if gaps and all(v == 1 for v in gaps.values()) and not other
                  else ["04:00 gaps %s, other hours with gaps %s" % (gaps, other)])

    def cost(self):
        tap = self.tap
        want = gc.unit_cost_expected(self.cl, self.t0, self.t1, UNITS)
        doc = json.loads(self.run(self.cfg_path, self.db, "unit-cost", "--period", PERIOD))
        got = {}
        for w in doc.get("workloads") or []:
            got[(w["cluster"], w["namespace"], w["kind"], w["name"])] = {
                "gb_hours": w["memory_used_gb_hours"], "cost": w["cost"],
                "units": {x["unit"]: (int(x["units"]), x["cost_per"]) for x in w["work"]}}
        tap.check("cost: per workload GB-hours, cost, units and cost per 1M tokens / 1k "
                  "requests / step equal the generator's, to the cent",
                  [] if got == want else ["got %s, expected %s" % (got, want)])
        with open(os.path.join(self.path("gen"), "expected.json")) as f:
            shares = gc.unit_cost_with_shares(self.cl, json.load(f), self.t0, self.t1, want)
        got_s = {(w["cluster"], w["namespace"], w["kind"], w["name"]):
                 (w.get("cost_with_idle_overhead"),
                  {x["unit"]: x.get("cost_per_with_idle_overhead") for x in w["work"]})
                 for w in doc.get("workloads") or []}
        tap.check("cost: with idle/overhead (policy proportional): each workload's share of "
                  "its team's idle and overhead lines, and the costs per unit of that, equal "
                  "the generator's invoices, to the cent",
                  [] if got_s == shares and doc.get("idle_overhead_policy") == "proportional"
                  else ["got %s, expected %s" % (got_s, shares)])
        idle = [w for w in doc.get("workloads") or [] if w["name"] == "idle-0"]
        tap.check("cost: a workload with cost and no work says \"no work recorded\"",
                  [] if idle and idle[0].get("note") == "no work recorded" and not idle[0]["work"]
                  else ["idle-0: %s" % idle])
        text = self.run(self.cfg_path, self.db, "unit-cost", "--period", PERIOD, "--format", "csv")
        rows = list(csv.DictReader(io.StringIO(text)))
        got_c = {(r["namespace"], r["workload"], r["unit"]): (r["cost"], r["units"], r["cost_per"])
                 for r in rows}
        want_c = {}
        for k, v in want.items():
            for u, (n, per) in v["units"].items():
                want_c[(k[1], k[3], u)] = (v["cost"], str(n), per or "")
            if not v["units"]:
                want_c[(k[1], k[3], "")] = (v["cost"], "", "")
        tap.check("formats: the CSV carries the same figures",
                  [] if got_c == want_c else ["got %s, expected %s" % (got_c, want_c)])
        md = self.run(self.cfg_path, self.db, "unit-cost", "--period", PERIOD, "--format", "md")
        miss = ["%s per 1M tokens" % v["units"]["tokens"][1] for v in want.values()
                if "tokens" in v["units"] and "%s per 1M tokens" % v["units"]["tokens"][1] not in md]
        tap.check("formats: the Markdown shows the cost per 1M tokens", miss)
        out = self.path("run-out")
        rc, _, err = self.eng.run(self.cfg_path, self.db, "run", "--out", out, "--now",
                                  "2026-11-02T06:30:00Z", timeout=300)
        comp = os.path.join(out, PERIOD, "unit-cost-%s.csv" % PERIOD)
        problems = []
        if not os.path.exists(comp):
            problems.append("run exit %s, no %s: %s" % (rc, comp, tail(err)))
        else:
            with open(comp, newline="") as f:
                if f.read() != text:
                    problems.append("%s differs from unit-cost --format csv" % comp)
        tap.check("formats: run writes unit-cost-<period>.csv beside the FOCUS export", problems)
        self.report(want)

    def report(self, want):
        """The team pages show the section: table and chart (HTML), table (Markdown)."""
        out = self.path("report")
        self.run(self.cfg_path, self.db, "report", "--period", PERIOD, "--out", out)
        problems = []
        for team, wl in (("team-a", "Deployment/vllm"), ("team-b", "Job/train-run-1")):
            k = [k for k in want if "%s/%s" % (k[2], k[3]) == wl][0]
            for u, (n, per) in want[k]["units"].items():
                label = {"tokens": "1M tokens", "requests": "1k requests", "steps": "step"}.get(u, "1 " + u)
                cell = "%s per %s" % (per, label)
                for ext in ("html", "md"):
                    path = os.path.join(out, "report-%s-%s.%s" % (PERIOD, team, ext))
                    text = open(path).read() if os.path.exists(path) else ""
                    if "Cost per unit of work" not in text or cell not in text:
                        problems.append("%s: no section or no %r" % (path, cell))
            html = os.path.join(out, "report-%s-%s.html" % (PERIOD, team))
            if os.path.exists(html) and 'aria-label="Cost per unit of work"' not in open(html).read():
                problems.append("%s: no chart" % html)
        b = os.path.join(out, "report-%s-team-b.md" % PERIOD)
        if os.path.exists(b) and "no work recorded" not in open(b).read():
            problems.append("%s: idle-0 without \"no work recorded\"" % b)
        self.tap.check("report: the team pages show the cost per unit of work (table, chart)",
                       problems)

    def repull(self):
        before = work_rows(self.db)
        self.run(self.cfg_path, self.db, "collect", "--from", WINDOW[0], "--to", WINDOW[1])
        after = work_rows(self.db)
        self.tap.check("repull: collecting the window again leaves the same rows",
                       [] if before == after and before else ["before %d rows, after %d"
                                                              % (len(before), len(after))])

    def refuse(self):
        doc = json.loads(json.dumps(self.cfg))
        doc["work"]["counters"].append({"name": "bad", "unit": "steps",
                                        "query": "bad_units_total{${cluster_selector}}"})
        path = self.config("config-bad", doc)
        before = dump(self.db)
        rc, _, err = self.eng.run(path, self.db, "collect", "--from", WINDOW[0], "--to",
                                  WINDOW[1], timeout=300)
        after = dump(self.db)
        problems = []
        if rc == 0:
            problems.append("exit 0")
        if "bad_units_total" not in err or "2026-11-02T" not in err or "whole number" not in err:
            problems.append("the message does not name the series, time and reason: %s"
                            % tail(err))
        if before != after:
            problems.append("the database changed: %s" % [t for t in before
                                                          if before[t] != after.get(t)])
        self.tap.check("refuse: a non-integral counter fails the collection, names the series "
                       "and leaves the database as it was", problems)

    def config_errors(self):
        """A bad work block fails with exit 3 and names the key."""
        cases = [
            ({"presets": ["vllm", "ollama"]}, "work.presets"),
            ({"counters": [{"name": "t", "unit": "Tokens", "query": "x_total"}]},
             "work.counters[0]"),
            ({"counters": [{"name": "t", "unit": "steps"}]}, "work.counters[0].query"),
            ({"counters": [{"name": "vllm_requests", "unit": "requests", "query": "x_total"}],
              "presets": ["vllm"]}, "vllm_requests"),
            ({"counter": []}, "work"),
        ]
        problems = []
        for work, key in cases:
            doc = json.loads(json.dumps(self.cfg))
            doc["work"] = work
            path = self.path("config-err.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            rc, _, err = self.eng.run(path, self.db, "unit-cost", "--period", PERIOD)
            if rc != 3 or key not in err:
                problems.append("%s: exit %s, %s" % (work, rc, tail(err)))
        self.tap.check("config: a bad work block fails with exit 3 naming the key", problems)

    def presets(self):
        """SGLang, TGI and Triton counters under their presets."""
        tap = self.tap
        try:
            _, _, path, db = self.collect_scenario(PRESETS, WINDOW, "-presets")
            doc = json.loads(self.run(path, db, "unit-cost", "--period", PERIOD))
        except RuntimeError as e:
            tap.fail("presets: generate, backfill, collect and unit-cost", e)
            return
        tap.setup("unitcost-presets generated, backfilled, collected")
        with open(PRESETS) as f:
            cl = gc.Cluster(json.load(f), os.path.dirname(PRESETS))
        exp = gc.work_expected(cl, self.t0, self.t1)
        want = {(c, ns, pod, PRESET_COUNTERS[m][1], h): u
                for (c, ns, pod, m), hours in exp.items() for h, u in hours.items()}
        got = {r[:5]: r[5] for r in work_rows(db)}
        tap.check("presets: every SGLang, TGI and Triton counter's units per pod and hour "
                  "equal the generator's model",
                  [] if got == want else ["got %s, expected %s" % (sorted(got.items()),
                                                                   sorted(want.items()))])
        totals = {m: sum(h.values()) for (_, _, _, m), h in exp.items()}
        tap.check("presets: the model's totals equal the hand calculation",
                  [] if totals == PRESET_HAND else ["model %s, by hand %s"
                                                    % (totals, PRESET_HAND)])
        want_c = gc.unit_cost_expected(cl, self.t0, self.t1,
                                       {m: v[0] for m, v in PRESET_COUNTERS.items()})
        got_c = {(w["cluster"], w["namespace"], w["kind"], w["name"]): {
            "gb_hours": w["memory_used_gb_hours"], "cost": w["cost"],
            "units": {x["unit"]: (int(x["units"]), x["cost_per"]) for x in w["work"]}}
            for w in doc.get("workloads") or []}
        kinds = sorted(k[2] + "/" + k[3] for k in want_c)
        tap.check("presets: per workload (%s) GB-hours, cost, units and cost per 1M tokens / "
                  "1k requests / 1k inferences equal the generator's, to the cent" % ", ".join(kinds),
                  [] if got_c == want_c and len(want_c) == 3
                  else ["got %s, expected %s" % (got_c, want_c)])

    def check(self):
        """check probes the work counters at an instant of the scenario."""
        at = "2026-11-02T03:00:00Z"
        t = gc.parse_time(at)
        want = {}
        for metric, _, samples in gc.work_series(self.cl):
            if metric in COUNTER:
                want.setdefault(COUNTER[metric], 0)
                want[COUNTER[metric]] += t in samples  # a sample at the probe time
        want["absent"] = 0
        doc = json.loads(json.dumps(self.cfg))
        doc["work"]["counters"].append({"name": "absent", "unit": "requests",
                                        "query": "absent_units_total{${cluster_selector}}"})
        path = self.config("config-check", doc)
        rc, out, err = self.eng.run(path, self.db, "check", "--at", at, timeout=300)
        got = {}
        for line in out.splitlines():
            words = line.split()
            if words[:2] == ["work", "counter"] and len(words) >= 5 and words[4] == "series":
                got[words[2]] = (int(words[3]), "NO DATA" in line)
        want_g = {k: (n, n == 0) for k, n in want.items()}
        self.tap.check("check: one line per work counter with the generator's series count, "
                       "NO DATA for a counter without series, exit 0",
                       [] if rc == 0 and got == want_g and min(want.values()) == 0 < max(want.values())
                       else ["exit %s, got %s, expected %s: %s" % (rc, got, want_g, tail(err))])
        doc["work"]["counters"][-1] = {
            "name": "no_pod", "unit": "tokens",
            "query": "sum by (namespace) (vllm:prompt_tokens_total{${cluster_selector}})"}
        path = self.config("config-check", doc)
        rc, out, err = self.eng.run(path, self.db, "check", "--at", at, timeout=300)
        problems = []
        if rc != 3 or "work counter no_pod" not in err or '"pod"' not in err:
            problems.append("exit %s: %s" % (rc, tail(err)))
        if "work counter train_steps" not in out:
            problems.append("the other counters' lines are missing: %s" % tail(out))
        self.tap.check("check: a work counter whose series lack the pod label exits 3 naming "
                       "the counter and the label", problems)


def main():
    ap = harness.arguments(__doc__)
    return harness.run_driver(Suite, ap.parse_args(), harness.Tap(limit=2000, shown=6),
                              "cost per unit of work", "gpuledger-unitcost-")


if __name__ == "__main__":
    sys.exit(main())
