#!/usr/bin/env python3
"""arith_test.py - exact arithmetic against a real Prometheus:
no wrapped arithmetic, no truncated identity.

Usage: python3 tests/integration/arith_test.py --bin build/gpuledger [--work DIR] [--keep]

One TSDB (OpenMetrics written here, 60 s samples, backfilled with promtool)
holds three days of January 2026, each collected into its own database:

* 2026-01-05 "memory": pod ns-huge/huge-0 (team huge) holds 2^48 - 1 MiB on
  its GPU for 24 hours (the largest value the parser accepted at ec4e86a:
  a day of it is 2.4e19 MiB.s, beyond int64), pod ns-small/small-0 (team
  small) holds 1000 MiB on a GPU of another node.
* 2026-01-06 "gpus": pod ns-gpus/many-0 (team many) requests 2^40
  nvidia.com/gpu (an allocation of 2^40 x 81000 MiB per step), pod
  ns-small/small-1 requests one GPU.
* 2026-01-07 "identity": two pods named `worker` in two namespaces of 1,601
  characters that differ only in the last one (teams team-a and team-b), a
  pod whose team label is a 300-character id, and a pod in namespace
  "team-" + 300 characters mapped by the rule ^team-(.+)$ -> $1 (a
  300-character team id from a regex capture).

Checks (the expected figures come from the exact integer model below, never
from the engine):

1. memory / gpus: every command (collect, invoice, export, summary, report)
   either fails with a clear error (non-zero exit, a message saying
   overflow/range that names the period or the device and hour) or exits 0
   with every figure equal to the model's -- for whatever is billed: a
   sample the engine skipped (and said so on stderr) is left out of the
   model. Never a wrapped, negative or rounded figure with exit 0.
2. prices: a GPU-Hours price whose conversion to a per-GB-hour price does not
   fit 128 bits (340282366920938.463463374608 per GPU-hour with capacity_gb
   80; 340282366920938463.463374607432 with the measured capacity) is a
   config error naming the price table's file:row, or exact amounts; never
   an invoice of 0.00.
3. identity: `run` exits 0; the two long-namespace pods are billed
   separately and exactly to their own teams; both 300-character team ids
   come out whole in invoice JSON and Markdown, FOCUS SubAccountId and
   InvoiceId, the team reports (HTML, Markdown) and the fleet page; every
   output file name is at most 255 bytes; the files of distinct teams are
   distinct; each team's file holds that team's id.
4. FOCUS conformance: every FOCUS CSV exported above (and `run`'s) passes
   focus_check.py as FOCUS 1.2 and, exported with --focus-version 1.3, as
   1.3, with its metadata file.
"""

import csv
import io
import json
import os
import sys
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import focus_check  # noqa: E402
import harness  # noqa: E402

STEP = 60
DAY = 86400
PERIOD = "2026-01"
MODEL = "NVIDIA A100-SXM4-80GB"
PRICE = Fraction("0.05")  # USD per GB-hour
DRIVER = 'DCGM_FI_DRIVER_VERSION="550.54.15"'
CAPACITY = 81920  # MiB of every card (allocation.model_capacity_mib in the configs)

D_MEM = 1767571200    # 2026-01-05T00:00:00Z
D_GPUS = D_MEM + DAY  # 2026-01-06
D_ID = D_MEM + 2 * DAY  # 2026-01-07

HUGE_MIB = 2 ** 48 - 1
MANY_GPUS = 2 ** 40

NS_A = "n" * 1600 + "a"
NS_B = "n" * 1600 + "b"
LONG_LABEL_TEAM = ("long-team-id-" * 24)[:300]
LONG_REGEX_TEAM = ("regex-capture-" * 22)[:300]
NS_REGEX = "team-" + LONG_REGEX_TEAM

# (day, uuid, node, namespace, pod, team label or None, used, free, reserved, gpus requested)
PODS = [
    (D_MEM, "GPU-00000000-0000-4000-8000-0000000000a1", "node-m1", "ns-huge", "huge-0", "huge",
     HUGE_MIB, 1000, 500, 1),
    (D_MEM, "GPU-00000000-0000-4000-8000-0000000000a2", "node-m2", "ns-small", "small-0", "small",
     1000, 80000, 920, 1),
    (D_GPUS, "GPU-00000000-0000-4000-8000-0000000000b1", "node-g1", "ns-gpus", "many-0", "many",
     1000, 80000, 920, MANY_GPUS),
    (D_GPUS, "GPU-00000000-0000-4000-8000-0000000000b2", "node-g2", "ns-small", "small-1", "small",
     2000, 79000, 920, 1),
    (D_ID, "GPU-00000000-0000-4000-8000-0000000000c1", "node-i", NS_A, "worker", "team-a",
     1000, 80000, 920, 1),
    (D_ID, "GPU-00000000-0000-4000-8000-0000000000c2", "node-i", NS_B, "worker", "team-b",
     3000, 78000, 920, 1),
    (D_ID, "GPU-00000000-0000-4000-8000-0000000000c3", "node-i", "ml", "trainer",
     LONG_LABEL_TEAM, 5000, 76000, 920, 1),
    (D_ID, "GPU-00000000-0000-4000-8000-0000000000c4", "node-i", NS_REGEX, "job", None,
     7000, 74000, 920, 1),
]


# ---------------------------------------------------------------- data

def q(v):
    return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')


def openmetrics():
    lines = []
    fams = {"DCGM_FI_DEV_FB_USED": 6, "DCGM_FI_DEV_FB_FREE": 7, "DCGM_FI_DEV_FB_RESERVED": 8}
    for fam, col in fams.items():
        lines.append("# TYPE %s gauge" % fam)
        for i, p in enumerate(PODS):
            day, uuid, node, ns, pod = p[:5]
            labels = ('gpu="%d",UUID=%s,device="nvidia%d",modelName=%s,Hostname=%s,%s,'
                      'container="c",namespace=%s,pod=%s'
                      % (i % 4, q(uuid), i % 4, q(MODEL), q(node), DRIVER, q(ns), q(pod)))
            for t in range(day, day + DAY, STEP):
                lines.append("%s{%s} %d %d" % (fam, labels, p[col], t))
    lines.append("# TYPE kube_pod_labels gauge")
    for p in PODS:
        day, _, _, ns, pod, team = p[:6]
        extra = ',label_team=%s' % q(team) if team else ""
        for t in range(day, day + DAY, STEP):
            lines.append("kube_pod_labels{namespace=%s,pod=%s%s} 1 %d" % (q(ns), q(pod), extra, t))
    lines.append("# TYPE kube_pod_container_resource_requests gauge")
    for p in PODS:
        day, _, node, ns, pod = p[:5]
        for t in range(day, day + DAY, STEP):
            lines.append('kube_pod_container_resource_requests{namespace=%s,pod=%s,container="c",'
                         'node=%s,resource="nvidia_com_gpu",unit="integer"} %d %d'
                         % (q(ns), q(pod), q(node), p[9], t))
    lines.append("# TYPE kube_pod_status_phase gauge")
    for p in PODS:
        day, _, _, ns, pod = p[:5]
        for t in range(day, day + DAY, STEP):
            lines.append('kube_pod_status_phase{namespace=%s,pod=%s,phase="Running"} 1 %d'
                         % (q(ns), q(pod), t))
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the model

def half_even(x):
    """Fraction -> nearest integer, ties to even."""
    x = Fraction(x)
    f = x.numerator // x.denominator
    r = x - f
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and f % 2 == 1):
        f += 1
    return f


def dec(units, places):
    sign = "-" if units < 0 else ""
    s = str(abs(units)).rjust(places + 1, "0")
    return sign + (s[:-places] + "." + s[-places:] if places else s)


def gbh(mib_s):
    """GB-hours (GB = 10^9 bytes), 9 decimals, as printed."""
    return dec(half_even(Fraction(mib_s * 2 ** 20, 3600)), 9)


def gbh_read(mib_s):
    """GB-hours as the report pages print them: the 9-decimal
    figure rounded half-even to 2 decimals, thousands grouped with commas."""
    cents = half_even(Fraction(half_even(Fraction(mib_s * 2 ** 20, 3600)), 10 ** 7))
    whole, frac = divmod(abs(cents), 100)
    return "%s{:,}.%02d".format(whole) % ("-" if cents < 0 else "", frac)


def amount(mib_s, price_per_gbh):
    """USD amount of mib_s at a per-GB-hour price, cents, half-even."""
    return dec(half_even(Fraction(mib_s * 2 ** 20) * price_per_gbh * 100 / (36 * 10 ** 11)), 2)


def model(day, hours=24, no_used=(), no_alloc=()):
    """Exact expected figures of `hours` of a day collected under basis used,
    the platform policy and allocation.model_capacity_mib = CAPACITY:
    ({team: {kind: mib_s}}, {team: (allocated mib_s, micro-GPU-seconds)}).
    Pods in no_used / no_alloc had their memory / GPU request samples
    skipped by the engine (which said so)."""
    secs = hours * 3600
    teams, alloc = {}, {}
    idle = overhead = 0
    for p in PODS:
        if p[0] != day:
            continue
        _, _, _, ns, pod, team, used, free, res, gpus = p
        if team is None:
            team = ns[len("team-"):]
        if pod in no_used:
            used = 0
        if used:
            teams.setdefault(team, {})["memory_used"] = used * secs
        if pod not in no_alloc:
            alloc[team] = (gpus * (CAPACITY - res) * secs, gpus * secs * 10 ** 6)
        # every card reports FB_RESERVED: the measured capacity (used + FREE +
        # RESERVED, used 0 when its samples were skipped) wins over the
        # configured one, so idle = FREE
        idle += free * secs
        overhead += res * secs
    teams["platform"] = {k: v for k, v in (("idle_share", idle), ("overhead_share", overhead))
                         if v}
    return teams, alloc


# ---------------------------------------------------------------- checks

def clear_error(rc, err, needles):
    """Problems of a failure that must be loud and say where: a non-zero
    exit that is no crash, an overflow/range message naming one of needles."""
    p = []
    low = err.lower()
    if rc <= 0 or rc > 125:
        p.append("exit %s" % rc)
    if not any(w in low for w in ("overflow", "64-bit", "128-bit", "range", "too large",
                                  "plausib", "bound")):
        p.append("no overflow/range message: %r" % harness.tail(err, 300))
    if needles and not any(n in err for n in needles):
        p.append("the message names none of %s: %r" % (needles, harness.tail(err, 300)))
    if "runtime error" in low or "sanitizer" in low:
        p.append("undefined behaviour reported: %r" % harness.tail(err, 300))
    return p


def skipped_reported(err):
    low = err.lower()
    return "skipp" in low and ("sample" in low or "bound" in low or "plausib" in low)


def invoice_problems(doc, teams, price=PRICE):
    """Every line and total of the invoice JSON against the model."""
    p = []
    got = {}
    for inv in doc.get("invoices", []):
        total = 0
        for line in inv["lines"]:
            kind = line["kind"]
            for key in ("mib_seconds", "gb_hours", "amount"):
                if line[key].startswith("-"):
                    p.append("team %s %s: negative %s %s" % (inv["team"][:40], kind, key,
                                                          line[key]))
            got.setdefault(inv["team"], {})[kind] = line
            total += int(line["amount"].replace(".", ""))
        if dec(total, 2) != inv["total"]:
            p.append("team %s: total %s is not the sum of its lines %s"
                     % (inv["team"][:40], inv["total"], dec(total, 2)))
    for team, kinds in teams.items():
        for kind, mib_s in kinds.items():
            line = got.get(team, {}).get(kind)
            if line is None:
                p.append("team %s: no %s line (expected %d MiB.s)" % (team[:40], kind, mib_s))
                continue
            want = (str(mib_s), gbh(mib_s), amount(mib_s, price))
            have = (line["mib_seconds"], line["gb_hours"], line["amount"])
            if have != want:
                p.append("team %s %s: (MiB.s, GB-h, amount) %s, expected %s"
                         % (team[:40], kind, have, want))
    for team, kinds in got.items():
        for kind in kinds:
            if kind not in teams.get(team, {}):
                p.append("team %s: unexpected %s line %s" % (team[:40], kind,
                                                             kinds[kind]["mib_seconds"]))
    return p


def allocation_problems(doc, alloc):
    p = []
    for inv in doc.get("invoices", []):
        for row in inv.get("allocated", []):
            want = alloc.get(inv["team"])
            if want is None:
                p.append("team %s: unexpected allocation %s" % (inv["team"][:40],
                                                                row["mib_seconds"]))
                continue
            mib_s, micro = want
            have = (row["mib_seconds"], row["gb_hours"], row["gpu_hours"])
            exp = (str(mib_s), gbh(mib_s), dec(half_even(Fraction(micro * 1000, 3600)), 9))
            if have != exp:
                p.append("team %s allocation (MiB.s, GB-h, GPU-h) %s, expected %s"
                         % (inv["team"][:40], have, exp))
    return p


def focus_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def focus_problems(text, teams, price=PRICE):
    """FOCUS rows of one day: per (team, kind) one row whose quantity and cost
    are the model's; BilledCost never negative."""
    p = []
    seen = set()
    for r in focus_rows(text):
        team, kind = r["SubAccountId"], r["x_ChargeKind"]
        if r["BilledCost"].startswith("-") or r["ListCost"].startswith("-"):
            p.append("team %s %s: negative cost %s" % (team[:40], kind, r["BilledCost"]))
        mib_s = teams.get(team, {}).get(kind)
        if mib_s is None:
            p.append("unexpected FOCUS row team %s kind %s" % (team[:40], kind))
            continue
        seen.add((team, kind))
        want = (gbh(mib_s), amount(mib_s, price), "GL-%s-%s" % (PERIOD, team))
        have = (r["PricingQuantity"], r["BilledCost"], r["InvoiceId"])
        if have != want:
            p.append("team %s %s: FOCUS (quantity, BilledCost, InvoiceId) %s, expected %s"
                     % (team[:40], kind, tuple(x[:60] for x in have),
                        tuple(x[:60] for x in want)))
        lc = Fraction(r["PricingQuantity"]) * Fraction(r["ListUnitPrice"])
        if Fraction(r["ListCost"]) != lc:
            p.append("team %s %s: ListCost %s is not ListUnitPrice x PricingQuantity"
                     % (team[:40], kind, r["ListCost"]))
    for team, kinds in teams.items():
        for kind in kinds:
            if (team, kind) not in seen:
                p.append("no FOCUS row for team %s kind %s" % (team[:40], kind))
    return p


def summary_problems(doc, teams):
    """The fleet summary of one model: used = Σ memory_used, idle and
    overhead as the platform lines, and it reconciles."""
    p = []
    used = sum(k.get("memory_used", 0) for t, k in teams.items() if t != "platform")
    idle = teams["platform"]["idle_share"]
    overhead = teams["platform"]["overhead_share"]
    for m in doc.get("models", []):
        if m["memory_used"] != gbh(used) or m["idle"] != gbh(idle):
            p.append("model %s: used %s idle %s, expected %s %s"
                     % (m["gpu_model"], m["memory_used"], m["idle"], gbh(used), gbh(idle)))
        r_u = Fraction(m["reserved"]) + Fraction(m["unattributed"])
        if abs(r_u - Fraction(gbh(overhead))) > Fraction(2, 10 ** 9):
            p.append("model %s: overhead %s, expected %s" % (m["gpu_model"], r_u, gbh(overhead)))
        if not m["reconciles"]:
            p.append("model %s does not reconcile" % m["gpu_model"])
        for k, v in m.items():
            if isinstance(v, str) and v.startswith("-"):
                p.append("model %s: negative %s %s" % (m["gpu_model"], k, v))
    if not doc.get("models"):
        p.append("no model rows")
    return p


class ArithSuite(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = None

    def config(self, name, prices=None, run_start=None):
        cfg = {
            "prometheus": {"url": self.prom.url()},
            "collection": {"step_seconds": STEP, "chunk_hours": 6},
            "teams": {"rules": [{"pod_label": "team"},
                                {"namespace_regex": "^team-(.+)$", "team": "$1"}]},
            "prices": prices or {"entries": [{"model_pattern": "^NVIDIA A100", "unit": "GB-Hours",
                                              "price": "0.05", "currency": "USD",
                                              "valid_from": "2026-01-01T00:00:00Z"}]},
            "allocation": {"model_capacity_mib": {MODEL: CAPACITY}},
            "billing": {"currency": "USD"},
        }
        if run_start:
            cfg["run"] = {"start": run_start, "delay_minutes": 0, "repull_hours": 0,
                          "out_dir": self.path("out-" + name)}
        path = self.path(name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def main(self):
        om = self.path("arith.om")
        with open(om, "w") as f:
            f.write(openmetrics())
        rc, out = harness.backfill(om, self.path("tsdb"), timeout=300)
        if rc != 0:
            self.tap.fail("promtool backfill", harness.tail(out))
            return
        self.prom = harness.Prometheus(self.work, self.path("tsdb"))
        self.prom.start()
        self.engine = harness.Engine(os.path.abspath(self.args.bin), self.work, timeout=300)
        # a day of 2^48 - 1 MiB; an hour of a 2^40-GPU request
        self.overflow_day("memory", D_MEM, 24, "huge-0", ["huge"])
        self.overflow_day("gpus", D_GPUS, 1, "many-0", ["many"])
        self.prices()
        self.identity()

    # ---- int64 overflow

    def collect(self, cfg, db, day, hours=24):
        return self.engine.run(cfg, db, "collect", "--from", iso(day), "--to",
                               iso(day + hours * 3600))

    def overflow_day(self, name, day, hours, pod, team_needles):
        cfg = self.config(name)
        db = self.path(name + ".db")
        rc, _, cerr = self.collect(cfg, db, day, hours)
        title = "%s: " % name
        if rc != 0:
            p = clear_error(rc, cerr, [pod, "2026-01-0"])
            self.tap.check(title + "collect fails loudly (overflow naming the pod/device and hour)",
                           p)
            # nothing was stored: the later commands have nothing to bill
            self.tap.note("%s: collect refused the chunk; nothing stored to invoice" % name)
            return
        self.tap.ok(title + "collect exit 0")
        collected = True
        skipped = (pod,) if (collected and skipped_reported(cerr)) else ()
        if skipped:
            self.tap.note("%s: the engine reported skipped samples; the model leaves %s's "
                          "out" % (name, pod))
        if name == "memory":
            teams, alloc = model(day, hours, no_used=skipped)
        else:
            teams, alloc = model(day, hours, no_alloc=skipped)
        needles = team_needles + [PERIOD]
        # invoice
        rc, out, err = self.engine.run(cfg, db, "invoice", "--period", PERIOD)
        if rc != 0:
            p = clear_error(rc, err, needles)
            self.tap.check(title + "invoice: a clear error, never a wrapped figure", p)
        else:
            doc = json.loads(out)
            p = invoice_problems(doc, teams) + allocation_problems(doc, alloc)
            self.tap.check(title + "invoice exit 0: every line, amount and allocation is the "
                           "exact model's (no wrapped figure)", p)
        # FOCUS
        rc, out, err = self.engine.run(cfg, db, "export", "--period", PERIOD)
        if rc != 0:
            self.tap.check(title + "export: a clear error, never a wrapped figure",
                           clear_error(rc, err, needles))
        else:
            self.tap.check(title + "export exit 0: every FOCUS row is the exact model's",
                           focus_problems(out, teams) if collected else [])
            # the FinOps Foundation's FOCUS rules on the implausible values
            focus_check.export_and_check(self.tap, self.engine, cfg, db, PERIOD,
                                         self.path(name), "arith " + name)
        # summary
        rc, out, err = self.engine.run(cfg, db, "summary", "--period", PERIOD)
        if rc != 0:
            self.tap.check(title + "summary: a clear error naming the period",
                           clear_error(rc, err, [PERIOD]))
        else:
            self.tap.check(title + "summary exit 0: the model's figures, reconciling",
                           summary_problems(json.loads(out), teams) if collected else [])
        # report
        rep = self.path("reports-" + name)
        rc, out, err = self.engine.run(cfg, db, "report", "--period", PERIOD, "--out", rep)
        if rc != 0:
            self.tap.check(title + "report: a clear error, never a wrapped figure",
                           clear_error(rc, err, needles))
        else:
            p = []
            for f in sorted(os.listdir(rep)) if os.path.isdir(rep) else []:
                text = open(os.path.join(rep, f), encoding="utf-8").read()
                for team, kinds in teams.items():
                    for kind, mib_s in kinds.items():
                        if kind == "memory_used" and f.startswith("report-") and \
                                ("-%s." % team) in f and gbh_read(mib_s) not in text:
                            p.append("%s does not show %s GB-h" % (f, gbh_read(mib_s)))
            self.tap.check(title + "report exit 0: the team pages show the model's GB-hours", p)

    # ---- a price near the int128 limit

    def prices(self):
        db = self.path("identity-prices.db")
        cfg0 = self.config("prices-base")
        rc, _, err = self.collect(cfg0, db, D_ID)
        if rc != 0:
            self.tap.fail("prices: collect the identity day", harness.tail(err))
            return
        teams, _ = model(D_ID)
        cases = [
            # capacity_gb 80 is ignored: the measured capacity converts
            ("with capacity_gb 80", "340282366920938.463463374608", "80",
             Fraction(CAPACITY * 2 ** 20, 10 ** 9)),
            ("with the measured capacity", "340282366920938463.463374607432", "",
             Fraction(CAPACITY * 2 ** 20, 10 ** 9)),
        ]
        for label, price, cap, cap_gb in cases:
            table = self.path("prices-%d.csv" % len(cap))
            with open(table, "w") as f:
                f.write("model_pattern,unit,price,currency,valid_from,valid_to,capacity_gb\n"
                        "^NVIDIA A100,GPU-Hours,%s,USD,2026-01-01T00:00:00Z,,%s\n" % (price, cap))
            cfg = self.config("prices-%d" % len(cap), prices={"file": table})
            rc, out, err = self.engine.run(cfg, db, "invoice", "--period", PERIOD)
            name = "prices: GPU-Hours price %s %s" % (price, label)
            if rc != 0:
                p = []
                if rc != 3:
                    p.append("exit %s (expected 3, a config error)" % rc)
                if "%s:2" % os.path.basename(table) not in err:
                    p.append("the error does not name %s:2: %r"
                             % (os.path.basename(table), harness.tail(err, 300)))
                self.tap.check(name + ": a config error naming file:row", p)
                continue
            # exit 0: the exact per-GB-hour price (12 decimals, half-even)
            per_gbh = Fraction(half_even(Fraction(price) / cap_gb * 10 ** 12), 10 ** 12)
            doc = json.loads(out)
            p = []
            for inv in doc["invoices"]:
                if inv["total"] in ("0.00", "-0.00"):
                    p.append("team %s: total 0.00" % inv["team"][:40])
            p += invoice_problems(doc, teams, per_gbh)
            self.tap.check(name + ": exit 0 with exact amounts (never 0.00)", p)

    # ---- identity

    def identity(self):
        cfg = self.config("identity", run_start=iso(D_ID))
        db = self.path("identity.db")
        rc, _, err = self.engine.run(cfg, db, "run", "--now", iso(D_ID + DAY))
        run_ok = self.tap.check("identity: run exits 0", [] if rc == 0 else
                                ["exit %s: %s" % (rc, harness.tail(err))])
        teams, _ = model(D_ID)
        ids = sorted(teams)
        # figures: the long-namespace pods stay apart
        rc, out, err = self.engine.run(cfg, db, "invoice", "--period", PERIOD)
        p = ["invoice exit %s: %s" % (rc, harness.tail(err))] if rc != 0 else \
            invoice_problems(json.loads(out), teams)
        self.tap.check("identity: pods in 1,601-character namespaces differing in the last "
                       "character are billed apart, each to its own team, exactly; the "
                       "300-character team ids are billed whole", p)
        if not run_ok:
            return
        out = self.path("out-identity", PERIOD)
        # file names
        p = []
        names = []
        for root, dirs, files in os.walk(self.path("out-identity")):
            for f in dirs + files:
                names.append(os.path.join(root, f))
                if len(f.encode()) > 255:
                    p.append("file name of %d bytes: %s..." % (len(f.encode()), f[:60]))
                if f.endswith(".tmp"):
                    p.append("temporary file left: %s" % f[:80])
        self.tap.check("identity: every output file name is at most 255 bytes", p)
        # invoices: one JSON and one Markdown per team, each with the whole id
        inv_dir = os.path.join(out, "invoices")
        files = sorted(os.listdir(inv_dir)) if os.path.isdir(inv_dir) else []
        p = []
        by_team = {}
        for f in files:
            path = os.path.join(inv_dir, f)
            if f.endswith(".json"):
                doc = json.load(open(path, encoding="utf-8"))
                if doc["team"] in by_team:
                    p.append("two invoice files for team %s" % doc["team"][:40])
                by_team[doc["team"]] = (doc, f)
        for team in ids:
            if team not in by_team:
                p.append("no invoice JSON holds team id %s... (%d chars) whole"
                         % (team[:40], len(team)))
                continue
            doc, f = by_team[team]
            mdf = f[:-len(".json")] + ".md"
            if mdf not in files:
                p.append("no %s beside %s" % (mdf[:60], f[:60]))
            elif "`%s`" % team not in open(os.path.join(inv_dir, mdf), encoding="utf-8").read():
                p.append("%s does not hold the whole team id" % mdf[:60])
            if doc["invoice_id"] != "GL-%s-%s" % (PERIOD, team):
                p.append("invoice_id %s... is not GL-%s-<whole team id>"
                         % (doc["invoice_id"][:60], PERIOD))
        if len(files) != 2 * len(ids):
            p.append("%d invoice files, expected %d" % (len(files), 2 * len(ids)))
        self.tap.check("identity: one invoice JSON and Markdown per team, the whole id and "
                       "invoice id inside (300-character ids from a pod label and a regex "
                       "capture)", p)
        doc = {"invoices": [d for d, _ in by_team.values()]}
        self.tap.check("identity: the invoice files hold the model's figures",
                       invoice_problems(doc, teams))
        # FOCUS
        focus = os.path.join(out, "focus-%s.csv" % PERIOD)
        if os.path.exists(focus):
            text = open(focus, encoding="utf-8", newline="").read()
            p = focus_problems(text, teams)
            subs = {r["SubAccountId"] for r in focus_rows(text)}
            for team in ids:
                if team not in subs:
                    p.append("no FOCUS row with SubAccountId = whole id %s..." % team[:40])
        else:
            p = ["no %s" % focus]
        self.tap.check("identity: FOCUS SubAccountId and InvoiceId hold the whole team ids, "
                       "figures exact", p)
        if os.path.exists(focus):
            focus_check.check_file(self.tap, "arith identity run output", focus, "1.2")
        focus_check.export_and_check(self.tap, self.engine, cfg, db, PERIOD,
                                     self.path("identity"), "arith identity")
        # summary
        p = []
        for ext in ("json", "md"):
            if not os.path.exists(os.path.join(out, "summary-%s.%s" % (PERIOD, ext))):
                p.append("no summary-%s.%s" % (PERIOD, ext))
        if not p:
            doc = json.load(open(os.path.join(out, "summary-%s.json" % PERIOD)))
            p = summary_problems(doc, teams)
        self.tap.check("identity: the fleet summary is written and is the model's", p)
        # reports
        rep = os.path.join(out, "reports")
        files = sorted(os.listdir(rep)) if os.path.isdir(rep) else []
        p = []
        pages = {}
        for f in files:
            if f.startswith("report-") and f.endswith(".md"):
                text = open(os.path.join(rep, f), encoding="utf-8").read()
                owners = [t for t in ids if "GL-%s-%s" % (PERIOD, t) in text]
                if len(owners) != 1:
                    p.append("%s names %d team invoices" % (f[:60], len(owners)))
                    continue
                if owners[0] in pages:
                    p.append("two report pages for team %s" % owners[0][:40])
                pages[owners[0]] = f
        for team in ids:
            f = pages.get(team)
            if not f:
                p.append("no Markdown report for team %s... (%d chars)" % (team[:40], len(team)))
                continue
            html = f[:-3] + ".html"
            if html not in files:
                p.append("no %s" % html[:60])
            elif team not in open(os.path.join(rep, html), encoding="utf-8").read():
                p.append("%s does not hold the whole team id" % html[:60])
            mib_s = teams[team].get("memory_used")
            if mib_s and gbh_read(mib_s) not in open(os.path.join(rep, f),
                                                     encoding="utf-8").read():
                p.append("%s does not show %s GB-h" % (f[:60], gbh_read(mib_s)))
        fleet = os.path.join(rep, "fleet-%s.html" % PERIOD)
        if not os.path.exists(fleet):
            p.append("no fleet-%s.html" % PERIOD)
        else:
            text = open(fleet, encoding="utf-8").read()
            for team in (LONG_LABEL_TEAM, LONG_REGEX_TEAM):
                if team not in text:
                    p.append("the fleet page lacks the whole id %s..." % team[:40])
        if len(files) != 2 * len(ids) + 2:
            p.append("%d report files, expected %d" % (len(files), 2 * len(ids) + 2))
        self.tap.check("identity: one HTML and Markdown report per team with the whole id, "
                       "and the fleet page", p)

    def cleanup(self):
        if self.prom:
            self.prom.stop()


def iso(t):
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def main():
    args = harness.arguments(__doc__).parse_args()
    tap = harness.Tap()
    return harness.run_driver(ArithSuite, args, tap, "arith test run", "gpuledger-arith-")


if __name__ == "__main__":
    sys.exit(main())
