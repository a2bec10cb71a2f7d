#!/usr/bin/env python3
"""pending_test.py - GPU demand left waiting: pods Pending with GPU requests.

Usage: python3 tests/integration/pending_test.py --bin build/gpuledger [--work DIR] [--keep]

scenarios/pending.json (tests/gen/gencluster.py) is backfilled into a real
Prometheus and collected; the same scenario without the waiting (the pods
that never run dropped, infer-0 starting when it stopped waiting) into a
second one. Checks:
  by-team   `summary --format json` pending_gpu.by_team equals the
            generator's model (gencluster.Cluster.pending) per cluster,
            team and model, exactly (GPU-hours, 9 decimals half-even of the
            micro-GPU-seconds), and the figures worked by hand below
  waits     the 10 longest waits: pods, first Pending instant and seconds
            waited (from the first to the last Pending sample) equal the generator's, longest
            first, and the count of pods that waited
  invoices  every invoice (lines and totals) equals the collection without
            the waiting, and the generator's expected totals: demand is
            never billed
  server    collection.mode server stores the same demand and invoices
  pages     the fleet page (HTML, Markdown) and the summary Markdown show
            the section; the run's metrics textfile carries
            gpuledger_pending_gpu_hours per team and model
  team      each team page (HTML and Markdown) of the open month shows the
            team's GPU-hours waiting per cluster and model and its longest
            waits, equal to the generator's (2 decimals half-even); a team
            without Pending pods has no such section; once the month is
            closed the team pages leave the section off (the fleet page
            keeps it)
"""

import json
import os
import re
import shutil
import sys
from html.parser import HTMLParser

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tests", "gen"))
sys.path.insert(0, HERE)

import gencluster as gc  # noqa: E402
import harness  # noqa: E402
from harness import tail  # noqa: E402

SCENARIO = os.path.join(HERE, "scenarios", "pending.json")
PERIOD = "2026-11"
WINDOW = ("2026-11-02T00:00:00Z", "2026-11-02T06:00:00Z")
CLUSTER = "gpu-pend"

# By hand, micro-GPU-seconds per 60 s step: a whole GPU 60·10^6; MIG 3g.40gb
# ⌊60·10^6·3/7⌋ = 25714285; a time-slicing share with no node counts whole.
#   team-a train-1: 2 GPUs × 360 steps        = 43 200 000 000 → 12 GPU-h, unknown
#   team-b infer-0: 1 GPU × 120 steps (to 02:00) = 7 200 000 000 → 2 GPU-h, unknown
#          warm-0: 1 GPU × 120 steps on gpu-p1  = 7 200 000 000 → 2 GPU-h, A100
#          batch-0..9: 1 GPU × (10+k) steps, Σ 145 = 8 700 000 000
#          → unknown 15 900 000 000 µGPU·s × 1000 / 3600 = 4 416 666 666.7 → 4.416666667
#   team-c vec-1: 3g × 210 steps (01:00-04:30) = 5 399 999 850
#          chat-1: 1 share × 180 steps (03:00-06:00) = 10 800 000 000
#          → 16 199 999 850 µGPU·s × 1000 / 3600 = 4 499 999 958.3 → 4.499999958
A100 = "NVIDIA A100-SXM4-80GB"
HAND = {("team-a", "unknown"): "12.000000000", ("team-b", "unknown"): "4.416666667",
        ("team-b", A100): "2.000000000", ("team-c", "unknown"): "4.499999958"}


def gpu_hours(us):
    """micro-GPU-seconds → GPU-hours, 9 decimals, half-even."""
    return "%d.%09d" % divmod(gc.div_half_even(us * 1000, 3600), 10 ** 9)


def hours2(v, per_hour):
    """v (micro-GPU-seconds or seconds) as hours to 2 decimals, half-even,
    as the pages print it for reading."""
    return "%d.%02d" % divmod(gc.div_half_even(v * 100, per_hour), 100)


SECTION = "GPU demand waiting (Pending pods)"


class Tables(HTMLParser):
    """The table rows (cell texts) under the <h2> named SECTION, up to the
    next <h2>: one list of rows per table."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.inside, self.h2, self.cell = [], False, None, None

    def handle_starttag(self, tag, attrs):
        if tag == "h2":
            self.h2 = []
        elif self.inside and tag == "table":
            self.tables.append([])
        elif self.inside and tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif self.inside and tag in ("td", "th") and self.tables and self.tables[-1]:
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "h2" and self.h2 is not None:
            self.inside = "".join(self.h2).strip() == SECTION
            self.h2 = None
        elif tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data):
        if self.h2 is not None:
            self.h2.append(data)
        elif self.cell is not None:
            self.cell.append(data)


def html_section(text):
    t = Tables()
    t.feed(text)
    return [rows[1:] for rows in t.tables]  # without the header rows


def md_section(text):
    """The Markdown section's tables (rows of cells, header and rule left out)."""
    head = "## " + SECTION + "\n"
    if head not in text:
        return []
    body = text.split(head, 1)[1].split("\n## ", 1)[0]
    tables, cur = [], None
    for line in body.split("\n"):
        if line.startswith("|"):
            if cur is None:
                cur = []
                tables.append(cur)
            cur.append([c.strip() for c in line.strip("|").split(" | ")])
        else:
            cur = None
    return [rows[2:] for rows in tables]


def team_model(by_key, by_pod, team):
    """A team page's section by the generator: [keys rows, waits rows], and
    the count of its pods that waited."""
    keys = sorted([k[0], k[2], hours2(v, 3600 * 10 ** 6)]
                  for k, v in by_key.items() if k[1] == team)
    waits = sorted(((k, v) for k, v in by_pod.items() if k[3] == team),
                   key=lambda kv: (-(kv[1][1] - kv[1][0]), -kv[1][2], kv[0]))
    rows = [[k[0], "%s/%s" % (k[1], k[2]), gc.fmt_time(v[0]), hours2(v[1] - v[0], 3600),
             hours2(v[2], 3600 * 10 ** 6)] for k, v in waits[:10]]
    return [keys, rows] if keys or rows else [], len(waits)


def without_waiting(scn):
    """The scenario as if nobody waited: pods that never run dropped, the
    rest starting when they stopped waiting."""
    out = json.loads(json.dumps(scn))
    pods = []
    for p in out["pods"]:
        pu = p.pop("pending_until", None)
        p.pop("pending_node", None)
        if pu is None:
            pods.append(p)
        elif gc.parse_time(pu) < gc.parse_time(p.get("to") or out["end"]):
            p["from"] = pu
            pods.append(p)
    out["pods"] = pods
    out["name"] += "-none"
    return out


def invoices(doc):
    """Per team: its total and its lines (what a bill says)."""
    return {inv.get("team"): (inv.get("total"),
                              sorted((l.get("cluster"), l.get("gpu_model"), l.get("kind"),
                                      l.get("mib_seconds"), l.get("amount"))
                                     for l in inv.get("lines") or []))
            for inv in doc.get("invoices") or []}


class Suite(harness.ScenarioSuite):
    def collect(self, name, scn_path):
        """Generates, backfills and collects one scenario (its metrics into a
        textfile of its own); its config and db."""
        def metrics(cfg):
            os.makedirs(self.path("tf-" + name), exist_ok=True)
            cfg["metrics"] = {"textfile": self.path("tf-" + name, "gpuledger.prom")}
        return self.collect_scenario(scn_path, WINDOW, "-" + name, metrics,
                                     self.path(name + ".db"))

    def main(self):
        tap = self.tap
        for t in ("promtool", "prometheus"):
            if not shutil.which(t):
                tap.fail("%s on PATH" % t, "not found (Debian package prometheus)")
                return
        self.start_engine()
        with open(SCENARIO) as f:
            scn = json.load(f)
        none_path = self.path("pending-none.json")
        with open(none_path, "w") as f:
            json.dump(without_waiting(scn), f, indent=1)
        try:
            gen, cfg, cfg_path, db = self.collect("pending", SCENARIO)
            _, _, cfg_none, db_none = self.collect("none", none_path)
        except RuntimeError as e:
            tap.fail("generate, backfill and collect", e)
            return
        tap.setup("pending and its no-waiting twin generated, backfilled, collected")
        cl = gc.Cluster(scn, os.path.dirname(SCENARIO))
        start, end = gc.parse_time(WINDOW[0]), gc.parse_time(WINDOW[1])
        by_key, by_pod = cl.pending(start, end, cfg)
        summary = json.loads(self.run(cfg_path, db, "summary", "--period", PERIOD,
                                      "--format", "json"))
        pend = summary.get("pending_gpu") or {}

        got = {(r.get("cluster"), r.get("team"), r.get("gpu_model")): r.get("gpu_hours")
               for r in pend.get("by_team") or []}
        want = {k: gpu_hours(v) for k, v in by_key.items()}
        tap.check("by-team: pending GPU-hours per cluster, team and model equal the generator's",
                  [] if got == want else ["got %s, expected %s" % (got, want)])
        hand = {(k[1], k[2]): v for k, v in want.items()}
        tap.check("by-team: the generator's figures equal the hand calculation",
                  [] if hand == HAND
                  else ["generator %s, by hand %s" % (sorted(want.items()), HAND)])

        want_w = sorted(((k[2], k[1], k[3], gc.fmt_time(v[0]), v[1] - v[0], gpu_hours(v[2]))
                         for k, v in by_pod.items()), key=lambda r: (-r[4], r))[:10]
        got_w = [(w.get("pod"), w.get("namespace"), w.get("team"), w.get("first_pending"),
                  w.get("waited_seconds"), w.get("gpu_hours"))
                 for w in pend.get("longest_waits") or []]
        tap.check("waits: the longest waits (pod, first Pending, seconds, GPU-hours) equal the "
                  "generator's, longest first",
                  [] if got_w == want_w and pend.get("pods") == len(by_pod)
                  else ["got %s (pods %r), expected %s" % (got_w, pend.get("pods"), want_w)])

        inv = invoices(json.loads(self.run(cfg_path, db, "invoice", "--period", PERIOD,
                                           "--format", "json")))
        inv_none = invoices(json.loads(self.run(cfg_none, db_none, "invoice", "--period",
                                                PERIOD, "--format", "json")))
        tap.check("invoices: equal to the collection without the Pending pods",
                  [] if inv == inv_none and inv else ["with %s, without %s" % (inv, inv_none)])
        with open(os.path.join(gen, "expected.json")) as f:
            exp = json.load(f)
        totals = {t: v[0] for t, v in inv.items()}
        want_t = {t: v["total"] for t, v in exp["invoices"].items()}
        tap.check("invoices: totals equal the generator's expected ones",
                  [] if totals == want_t else ["got %s, expected %s" % (totals, want_t)])
        self.server_mode(cfg, pend, inv)
        self.pages(cfg, cfg_path, db, want)
        self.team_pages(cfg_path, db, by_key, by_pod, inv)

    def server_mode(self, cfg, pend, inv):
        """collection.mode server (hourly sums on the backend where a node's
        hour allows it) stores the same demand and invoices as raw."""
        doc = json.loads(json.dumps(cfg))
        doc["collection"]["mode"] = "server"
        doc.pop("metrics", None)
        path = self.path("config-server.json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        db = self.path("server.db")
        self.run(path, db, "collect", "--from", WINDOW[0], "--to", WINDOW[1])
        got = json.loads(self.run(path, db, "summary", "--period", PERIOD, "--format",
                                  "json")).get("pending_gpu")
        got_inv = invoices(json.loads(self.run(path, db, "invoice", "--period", PERIOD,
                                               "--format", "json")))
        self.tap.check("server mode: the same demand waiting and invoices as raw",
                       [] if got == pend and got_inv == inv
                       else ["pending %s vs raw %s; invoices %s vs raw %s"
                             % (got, pend, got_inv, inv)])

    def pages(self, cfg, cfg_path, db, want):
        tap = self.tap
        md = self.run(cfg_path, db, "summary", "--period", PERIOD, "--format", "md")
        rows = ["| %s | %s | %s | %s |" % (k[1], k[0], k[2], v) for k, v in sorted(want.items())]
        tap.check("pages: the summary Markdown lists pending GPU-hours per team",
                  [r for r in rows if r not in md])
        out = self.path("report")
        self.run(cfg_path, db, "report", "--period", PERIOD, "--out", out)
        problems = []
        for ext in ("html", "md"):
            path = os.path.join(out, "fleet-%s.%s" % (PERIOD, ext))
            if not os.path.exists(path):
                problems.append("no %s" % path)
                continue
            with open(path) as f:
                text = f.read()
            if "GPU demand waiting" not in text or "train-1" not in text:
                problems.append("%s without the demand waiting section" % path)
        tap.check("pages: the fleet page (HTML and Markdown) shows the demand waiting", problems)
        rc, _, err = self.eng.run(cfg_path, db, "run", "--out", self.path("run-out"), "--now",
                                  "2026-11-02T06:30:00Z", timeout=300)
        series = {}
        try:
            with open(cfg["metrics"]["textfile"]) as f:
                for line in f:
                    m = re.match(r'gpuledger_pending_gpu_hours\{(.*)\} (\S+)$', line)
                    if m:
                        lab = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
                        series[(lab.get("cluster"), lab.get("team"), lab.get("model"),
                                lab.get("period"))] = m.group(2)
        except OSError as e:
            series = {"error": str(e), "run exit": rc, "stderr": tail(err)}
        want_m = {k + (PERIOD,): v for k, v in want.items()}
        tap.check("pages: gpuledger_pending_gpu_hours per cluster, team and model in the "
                  "metrics textfile",
                  [] if series == want_m else ["got %s, expected %s" % (series, want_m)])

    def team_sections(self, out, teams):
        """{(team, ext): (section tables, page text)} of the report in out."""
        got = {}
        for team in teams:
            for ext, read in (("html", html_section), ("md", md_section)):
                path = os.path.join(out, "report-%s-%s.%s" % (PERIOD, team, ext))
                try:
                    with open(path) as f:
                        text = f.read()
                except OSError as e:
                    got[(team, ext)] = (None, str(e))
                    continue
                got[(team, ext)] = (read(text), text)
        return got

    def team_pages(self, cfg_path, db, by_key, by_pod, inv):
        tap = self.tap
        teams = sorted(inv)
        waiting = sorted({k[1] for k in by_key})
        out = self.path("report")  # written by pages() from the open month
        problems = []
        for (team, ext), (tables, text) in sorted(self.team_sections(out, teams).items()):
            want, pods = team_model(by_key, by_pod, team)
            if tables != want:
                problems.append("%s %s: got %s, expected %s" % (team, ext, tables, want))
            elif want and "Longest waits (%d of %d pods)" % (len(want[1]), pods) not in text:
                problems.append("%s %s: no count of %d pods" % (team, ext, pods))
        shown = [t for t in teams if team_model(by_key, by_pod, t)[0]]
        if len(shown) < 2 or len(shown) == len(teams):
            problems.append("the scenario should give some team pages the section and leave "
                            "it off one: shown on %s of %s" % (shown, teams))
        tap.check("team: each team page's demand waiting (per cluster and model, longest "
                  "waits) equals the generator's; none on a team without Pending pods",
                  problems)
        no_page = [t for t in waiting if t not in teams]
        tap.note("teams with Pending pods but no invoice (demand on the fleet page only): %s"
                 % (no_page or "none"))

        closed_db = self.path("closed.db")
        shutil.copyfile(db, closed_db)
        self.run(cfg_path, closed_db, "close", "--period", PERIOD, "--force",
                 "--now", "2026-12-05T00:00:00Z")
        out = self.path("report-closed")
        self.run(cfg_path, closed_db, "report", "--period", PERIOD, "--out", out)
        problems = ["%s %s still shows the section" % k
                    for k, (tables, text) in sorted(self.team_sections(out, teams).items())
                    if tables or SECTION in (text or "")]
        with open(os.path.join(out, "fleet-%s.md" % PERIOD)) as f:
            if SECTION not in f.read():
                problems.append("the closed month's fleet page lost the section")
        tap.check("team: a closed month's team pages leave demand waiting off (its fleet page "
                  "keeps it)", problems)


def main():
    ap = harness.arguments(__doc__)
    return harness.run_driver(Suite, ap.parse_args(), harness.Tap(limit=2000, shown=6),
                              "pending GPU demand", "gpuledger-pending-")


if __name__ == "__main__":
    sys.exit(main())
