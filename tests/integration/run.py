#!/usr/bin/env python3
"""gpuledger integration driver: a real Prometheus loaded with a generated
cluster, the engine run end to end, and its figures compared exactly with
what tests/gen/gencluster.py computed from the scenario.

Usage: python3 tests/integration/run.py --bin build/gpuledger [--work DIR]
                                        [--scenario FILE] [--sharing FILE|none] [--keep]

Prints one line per check, "ok - NAME" or "not ok - NAME: REASON", and
otherwise only "# ..." comments; exits 1 when any check failed. A check that
cannot run (promtool/prometheus missing) is "not ok - NAME skipped: WHY"
under CI=true and "ok - # SKIP NAME: WHY" otherwise.

Steps: generate data (once) -> promtool tsdb create-blocks-from openmetrics
-> prometheus on a free 127.0.0.1 port (--query.lookback-delta=59s) ->
spot-check the served samples against the generator -> gpuledger collect /
invoice --format json / export / summary --format json -> compare invoices
(memory_used per team; idle/overhead lines wherever they sit), the FOCUS CSV
and the fleet summary with tests/gen's expected figures ->
re-collect the same window (unchanged), collect in two halves (same totals)
-> config / price-table failures (exit 3) -> a fault-injecting proxy:
HTTP 400 bad_data (exit 4), 503 + Retry-After twice (retried, succeeds),
NaN / +Inf / -5 sample values (skipped, reported, the rest billed).

Sharing-aware attribution: tests/integration/scenarios/sharing.json
is generated beside the main scenario (in the background), backfilled into
the same TSDB (its time range does not overlap) and served by the same
Prometheus. The engine then runs once per config of the scenario's "runs"
(device copies split evenly / by allocation, per-process, basis max, idle
policies platform / proportional / unbilled, identity_labels exported), each
into its own database: collect, invoice, summary, anomalies and export are
compared in full with the generator's expected-RUN.json, the engine's own
figures must reconcile per model (capacity = billed + idle + overhead -
excess, to 1e-6 GB-h; amounts to the cent), and the issue's named checks
(a third each, allocation share, own memory, completed pod, allocation
sizes, used vs max, excess devices, unallocated use, default mode, exported
mode, compute indicator, idle = FB_FREE) use figures summed straight from
the scenario rather than from the series. Every FOCUS CSV
(main scenario, every config of every scenario) is also exported with
--focus-version 1.3 and both are checked, with their metadata files, by
focus_check.py (the FinOps Foundation's rules: one "not ok" per failed rule
naming scenario, file, rule id and row); under the proportional policy the
1.3 split rows must add up to the generator's origin charges (check_splits).
GPULEDGER_IT_VERBOSE=1 prints every problem of a failing check (the check
line shows four).
Prometheus and the proxy are stopped at exit, also on failure.
"""

import copy
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from decimal import Decimal, getcontext
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gen"))
import focus_check  # noqa: E402
import gencluster as gc  # noqa: E402
import harness  # noqa: E402
import platforms  # noqa: E402
from harness import tail  # noqa: E402

getcontext().prec = 100
ENGINE_TIMEOUT = 150

FOCUS_COLUMNS = [
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency",
    "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass",
    "ChargeDescription", "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart",
    "ConsumedQuantity", "ConsumedUnit", "ContractedCost", "ContractedUnitPrice",
    "EffectiveCost", "InvoiceId", "InvoiceIssuerName", "ListCost", "ListUnitPrice",
    "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "RegionId",
    "RegionName", "ResourceId", "ResourceName", "ResourceType", "ServiceCategory",
    "ServiceName", "ServiceSubcategory", "SkuId", "SkuMeter", "SkuPriceDetails", "SkuPriceId",
    "SubAccountId",
    "SubAccountName", "Tags", "x_ChargeKind", "x_CorrectedPeriod", "x_CostCenter",
    "x_Cluster", "x_GpuModel", "x_ComputeIndicator", "x_Estimated",
]
NUMERIC_COLUMNS = {"BilledCost", "ConsumedQuantity", "ContractedCost", "ContractedUnitPrice",
                   "EffectiveCost", "ListCost", "ListUnitPrice", "PricingQuantity",
                   "x_ComputeIndicator"}
DATETIME_COLUMNS = {"BillingPeriodEnd", "BillingPeriodStart", "ChargePeriodEnd",
                    "ChargePeriodStart"}
UNTYPED_COLUMNS = {"x_Estimated"}   # boolean: interfaces.md does not say bare or quoted
STRING_COLUMNS = set(FOCUS_COLUMNS) - NUMERIC_COLUMNS - DATETIME_COLUMNS - UNTYPED_COLUMNS
NON_NULL_COLUMNS = {"BilledCost", "BillingAccountId", "BillingCurrency", "BillingPeriodEnd",
                    "BillingPeriodStart", "ChargeCategory", "ChargeDescription",
                    "ChargePeriodEnd", "ChargePeriodStart", "ConsumedQuantity", "ConsumedUnit",
                    "ContractedCost", "EffectiveCost", "InvoiceIssuerName", "ListCost",
                    "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName",
                    "ServiceCategory", "ServiceName", "SubAccountId", "x_ChargeKind",
                    "x_Cluster", "x_GpuModel", "SkuPriceId", "InvoiceId"}
PLAIN_DECIMAL = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")
DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
FLEET_KINDS = ("idle_share", "overhead_share")


# ---------------------------------------------------------------- invoices

def price_ids(exp, data):
    """The rows with SkuPriceId (gpu-memory/<model>|<pattern>@<valid_from>)
    replaced by the generator's price id when it names a price of
    exp, after checking its SkuId part (an unknown one stays as it is and
    fails the row checks)."""
    by_key = {p["price_key"]: pid for pid, p in exp.get("prices", {}).items()}
    for d in data:
        sku, _, key = d.get("SkuPriceId", "").partition("|")
        if key in by_key and sku == d.get("SkuId") == "gpu-memory/" + d.get("x_GpuModel", ""):
            d["SkuPriceId"] = by_key[key]
    return data


def check_splits(tap, label, text, exp):
    """FOCUS 1.3 proportional split rows against the generator's origin
    charges (exp["fleet"]: each (cluster, model, kind, price)'s idle or
    overhead before the split, per day): GB-hours, ratios and amounts add up."""
    origins = {}
    for l in exp.get("fleet", []):
        key = (l["cluster"], l["gpu_model"], l["kind"], "gpu-memory/%s|%s" % (
            l["gpu_model"], exp["prices"][l["price_id"]]["price_key"]))
        origins[key] = {"days": {d["day"]: d["gb_hours"] for d in l["days"]},
                        "amount": l["amount"]}
    p, n = focus_check.split_problems(text, origins, exp["minor_units"])
    if not n:
        p.append("no proportional split rows")
    # the check is not vacuous: a split row moved by 2e-9 x (rows + 1) GB-h
    # (beyond any rounding), or its ratio changed, or dropped, is reported
    data = list(csv.reader(io.StringIO(text, newline="")))
    head = data[0]
    split = [i for i, r in enumerate(data) if i and dict(zip(head, r)).get(
        "AllocatedMethodId") == focus_check.PROPORTIONAL and not dict(zip(head, r))["ChargeClass"]]
    if split:
        i = split[0]
        cq, md = head.index("ConsumedQuantity"), head.index("AllocatedMethodDetails")

        def mutated(fn):
            rows = [list(r) for r in data]
            fn(rows)
            out = io.StringIO(newline="")
            csv.writer(out, lineterminator="\r\n").writerows(rows)
            return out.getvalue()

        def more_gbh(rows):
            rows[i][cq] = str(Decimal(rows[i][cq]) + Decimal("2e-9") * (len(split) + 1))

        def other_ratio(rows):
            rows[i][md] = re.sub(r'"AllocatedRatio":\s*([0-9.]+)', lambda m: '"AllocatedRatio":%s'
                                 % (Decimal(m.group(1)) + Decimal("1e-9")), rows[i][md], 1)

        for what, fn in (("a split row's GB-hours off", more_gbh),
                         ("a split row's AllocatedRatio off", other_ratio),
                         ("a split row dropped", lambda rows: rows.pop(i))):
            if not focus_check.split_problems(mutated(fn), origins, exp["minor_units"])[0]:
                p.append("the split check misses %s (row %d)" % (what, i + 1))
    tap.check("%s: FOCUS 1.3 split rows (%d) add up to the %d origin charges they split "
              "(GB-hours per day, AllocatedRatio = 1, amounts)" % (label, n, len(origins)), p)


def half_even_9(x):
    """A Fraction rounded half-even to 9 decimals, as text."""
    n = x * 10 ** 9
    q, r = divmod(n.numerator, n.denominator)
    if 2 * r > n.denominator or (2 * r == n.denominator and q % 2):
        q += 1
    return "%s%d.%09d" % ("-" if q < 0 else "", abs(q) // 10 ** 9, abs(q) % 10 ** 9)


def dec(s):
    return Decimal(str(s))


def invoices_by_team(doc):
    out = {}
    for inv in doc.get("invoices", []):
        out[inv.get("team")] = inv
    return out


def line_problems(team, i, got, exp):
    p = []
    for k in ("cluster", "gpu_model", "kind", "price_id", "price_valid_from",
              "price_valid_to", "pricing_unit", "mib_seconds", "gb_hours", "amount"):
        if got.get(k) != exp[k]:
            p.append("%s line %d %s: got %r, expected %r" % (team, i, k, got.get(k), exp[k]))
    try:
        if dec(got.get("unit_price")) != dec(exp["unit_price"]):
            p.append("%s line %d unit_price: got %r, expected %s"
                     % (team, i, got.get("unit_price"), exp["unit_price"]))
    except Exception:
        p.append("%s line %d unit_price %r is not a decimal" % (team, i, got.get("unit_price")))
    if got.get("estimated") is not False:
        p.append("%s line %d estimated: got %r, expected false" % (team, i, got.get("estimated")))
    for k in ("mib_seconds", "gb_hours", "amount", "unit_price"):
        if not isinstance(got.get(k), str):
            p.append("%s line %d %s is not a string" % (team, i, k))
    return p


def line_order_problems(team, lines):
    """Lines ordered by cluster, gpu_model, kind, price_valid_from. The order
    of kinds is not pinned (alphabetical or memory/reserved/idle/overhead), so
    only their grouping is checked."""
    p = []
    keys = [(l.get("cluster") or "", l.get("gpu_model") or "", l.get("kind") or "",
             l.get("price_valid_from") or "") for l in lines]
    cm = [k[:2] for k in keys]
    if cm != sorted(cm):
        p.append("%s: lines not ordered by cluster, gpu_model: %s" % (team, cm))
    seen = []
    for k in keys:
        if not seen or seen[-1] != k[:3]:
            if k[:3] in seen:
                p.append("%s: lines of %s are not together" % (team, k[:3]))
            seen.append(k[:3])
    for a, b in zip(keys, keys[1:]):
        if a[:3] == b[:3] and a[3] > b[3]:
            p.append("%s: %s lines not ordered by price_valid_from" % (team, a[:3]))
    return p


def compare_invoices(tap, label, doc, exp, per_team=True, memory_only=False):
    """Compare `invoice --format json` output with expected. With a tap,
    emits checks (one per team when per_team, else a single one); returns
    the problems found."""
    if tap is None:
        per_team = False
    all_problems = []
    minor = exp["minor_units"]
    got = invoices_by_team(doc)
    p = []
    if doc.get("period") != exp["period"]:
        p.append("period %r, expected %r" % (doc.get("period"), exp["period"]))
    missing = sorted(set(exp["teams"]) - set(got))
    if missing:
        p.append("no invoice for %s" % missing)
    for team, inv in sorted(got.items(), key=lambda kv: str(kv[0])):
        if team in exp["teams"]:
            continue
        kinds = {l.get("kind") for l in inv.get("lines", [])}
        if not kinds or not kinds <= set(FLEET_KINDS):
            p.append("unexpected invoice for team %r with kinds %s (memory %s)" % (
                team, sorted(map(str, kinds)),
                [(l.get("gpu_model"), l.get("mib_seconds")) for l in inv.get("lines", [])]))
    for team, inv in sorted(got.items(), key=lambda kv: str(kv[0])):
        p += line_order_problems(team, inv.get("lines", []))
    if per_team:
        tap.check("%s: invoice set of teams, line order" % label, p)
    all_problems += p
    for team, e in exp["teams"].items():
        inv = got.get(team)
        if inv is None:
            continue
        p = []
        for k, v in (("invoice_id", e["invoice_id"]), ("period", exp["period"]),
                     ("period_start", exp["period_start"]), ("period_end", exp["period_end"]),
                     ("team", team), ("team_name", e["team_name"]),
                     ("cost_center", e["cost_center"]), ("currency", exp["currency"])):
            if inv.get(k) != v:
                p.append("%s %s: got %r, expected %r" % (team, k, inv.get(k), v))
        lines = inv.get("lines", [])
        mem = [l for l in lines if l.get("kind") == "memory_used"]
        other = [l for l in lines if l.get("kind") != "memory_used"]
        for l in other:
            if l.get("kind") not in FLEET_KINDS:
                p.append("%s: unexpected line kind %r (billing basis used)" % (team, l.get("kind")))
        if len(mem) != len(e["lines"]):
            p.append("%s: %d memory_used lines, expected %d: got %s" % (
                team, len(mem), len(e["lines"]),
                [(l.get("gpu_model"), l.get("price_id"), l.get("mib_seconds")) for l in mem]))
        else:
            for i, (gl, el) in enumerate(zip(mem, e["lines"])):
                p += line_problems(team, i, gl, el)
        try:
            total_lines = sum(gc.to_units(l.get("amount"), minor) for l in lines)
            if gc.to_units(inv.get("total"), minor) != total_lines:
                p.append("%s total %r is not the sum of its lines %s"
                         % (team, inv.get("total"), gc.units_to_str(total_lines, minor)))
            if not other and inv.get("total") != e["total"]:
                p.append("%s total: got %r, expected %r" % (team, inv.get("total"), e["total"]))
        except Exception as ex:
            p.append("%s: bad amounts (%s)" % (team, ex))
        if per_team:
            tap.check("%s: invoice %s lines and total" % (label, team), p)
        all_problems += p
    if not memory_only:
        p = compare_fleet_lines(doc, exp)
        if per_team:
            tap.check("%s: idle and overhead lines (specification: Arithmetic, idle = FB_FREE)" % label, p)
        all_problems += p
    if tap is not None and not per_team:
        tap.check(label, all_problems)
    return all_problems


def fleet_key(l):
    return (l.get("cluster"), l.get("gpu_model"), l.get("kind"), l.get("price_id"))


def compare_fleet_lines(doc, exp):
    """Idle/overhead lines may sit on a platform team's invoice (the specification's default)
    or be spread over teams: compare MiB.s summed over invoices, and the
    amounts when one invoice holds the whole key."""
    p = []
    got = {}
    for inv in doc.get("invoices", []):
        for l in inv.get("lines", []):
            if l.get("kind") in FLEET_KINDS:
                got.setdefault(fleet_key(l), []).append((inv.get("team"), l))
    expd = {fleet_key(l): l for l in exp["fleet"]}
    for k in sorted(set(got) | set(expd), key=str):
        if k not in expd:
            p.append("unexpected %s line %s: %s"
                     % (k[2], k, [l.get("mib_seconds") for _, l in got[k]]))
            continue
        if k not in got:
            p.append("missing %s line for %s (expected %s MiB.s)"
                     % (k[2], k, expd[k]["mib_seconds"]))
            continue
        try:
            tot = sum(int(l.get("mib_seconds")) for _, l in got[k])
        except Exception:
            p.append("%s: bad mib_seconds" % (k,))
            continue
        if str(tot) != expd[k]["mib_seconds"]:
            p.append("%s: %d MiB.s on %s, expected %s" % (k, tot, [t for t, _ in got[k]],
                                                           expd[k]["mib_seconds"]))
        elif len(got[k]) == 1:
            l = got[k][0][1]
            for f in ("gb_hours", "amount"):
                if l.get(f) != expd[k][f]:
                    p.append("%s %s: got %r, expected %r" % (k, f, l.get(f), expd[k][f]))
    return p


# ---------------------------------------------------------------- FOCUS CSV

def raw_csv(text):
    """Rows of (value, was_quoted) fields, read straight from the text."""
    rows, row, i, n = [], [], 0, len(text)
    while i < n:
        if text[i] == '"':
            j, buf = i + 1, []
            while True:
                if j >= n:
                    raise ValueError("unterminated quoted field")
                c = text[j]
                if c == '"':
                    if j + 1 < n and text[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    j += 1
                    break
                buf.append(c)
                j += 1
            row.append(("".join(buf), True))
            i = j
        else:
            j = i
            while j < n and text[j] not in ",\r\n":
                if text[j] == '"':
                    raise ValueError("quote inside unquoted field at offset %d" % j)
                j += 1
            row.append((text[i:j], False))
            i = j
        if i >= n:
            rows.append(row)
            break
        c = text[i]
        if c == ",":
            i += 1
            if i >= n:
                row.append(("", False))
                rows.append(row)
            continue
        if c == "\r" and i + 1 < n and text[i + 1] == "\n":
            i += 2
        elif c in "\r\n":
            i += 1
        else:
            raise ValueError("text after a quoted field at offset %d" % i)
        rows.append(row)
        row = []
    return rows


def check_focus(tap, label, text, doc, exp):
    """FOCUS CSV checks against expected and the engine's own invoices."""
    minor = exp["minor_units"]
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
        raw = raw_csv(text)
    except Exception as e:
        tap.fail("%s: FOCUS CSV parses" % label, e)
        return
    rows = [r for r in rows if r]
    raw = [r for r in raw if not (len(r) == 1 and r[0] == ("", False))]
    p = []
    if not rows:
        tap.fail("%s: FOCUS header and column order" % label, "empty output")
        return
    if rows[0] != FOCUS_COLUMNS:
        extra = [c for c in rows[0] if c not in FOCUS_COLUMNS]
        p.append("header %s, expected %s (unexpected: %s)" % (rows[0], FOCUS_COLUMNS, extra))
    tap.check("%s: FOCUS header and column order" % label, p)
    if p:
        return
    if [[v for v, _ in r] for r in raw] != rows:
        tap.fail("%s: FOCUS raw field format" % label, "raw reader and csv module disagree")
        return
    data = price_ids(exp, [dict(zip(FOCUS_COLUMNS, r)) for r in rows[1:]])
    # raw format: nulls bare, numbers / date-times bare, strings quoted, ASCII
    p = []
    for ri, r in enumerate(raw[1:], start=2):
        if len(r) != len(FOCUS_COLUMNS):
            p.append("row %d has %d fields" % (ri, len(r)))
            continue
        for col, (v, q) in zip(FOCUS_COLUMNS, r):
            if v == "":
                if q:
                    p.append("row %d %s: empty quoted string \"\" (null must be a bare empty field)"
                             % (ri, col))
                if col in NON_NULL_COLUMNS:
                    p.append("row %d %s is null" % (ri, col))
                continue
            if not all(32 <= ord(ch) < 127 for ch in v):
                p.append("row %d %s: non-ASCII %r" % (ri, col, v))
            if col in NUMERIC_COLUMNS:
                if q:
                    p.append("row %d %s: number %r is quoted" % (ri, col, v))
                if not PLAIN_DECIMAL.match(v):
                    p.append("row %d %s: %r is not a plain decimal" % (ri, col, v))
            elif col in DATETIME_COLUMNS:
                if q:
                    p.append("row %d %s: date-time %r is quoted" % (ri, col, v))
                if not DATETIME.match(v):
                    p.append("row %d %s: %r is not YYYY-MM-DDTHH:MM:SSZ" % (ri, col, v))
            elif col in STRING_COLUMNS and not q:
                p.append("row %d %s: string %r is not quoted" % (ri, col, v))
            if col in STRING_COLUMNS and v[:1] in ("=", "+", "-", "@"):
                p.append("row %d %s: %r starts with a formula character" % (ri, col, v))
    tap.check("%s: FOCUS raw field format (nulls bare, numbers plain)" % label, p)

    # ListCost / ContractedCost exact products, EffectiveCost = BilledCost
    p = []
    for ri, d in enumerate(data, start=2):
        try:
            if dec(d["ListCost"]) != dec(d["ListUnitPrice"]) * dec(d["PricingQuantity"]):
                p.append("row %d ListCost %s != %s x %s" % (ri, d["ListCost"], d["ListUnitPrice"],
                                                          d["PricingQuantity"]))
            qty = dec(d["PricingQuantity"])
            if dec(d["ContractedCost"]) != dec(d["ContractedUnitPrice"]) * qty:
                p.append("row %d ContractedCost %s != %s x %s" % (
                    ri, d["ContractedCost"], d["ContractedUnitPrice"], d["PricingQuantity"]))
            if dec(d["EffectiveCost"]) != dec(d["BilledCost"]):
                p.append("row %d EffectiveCost %s != BilledCost %s" % (ri, d["EffectiveCost"],
                                                                      d["BilledCost"]))
            if "." in d["ListCost"] and d["ListCost"].endswith("0"):
                p.append("row %d ListCost %s: trailing zeros not trimmed" % (ri, d["ListCost"]))
        except Exception as e:
            p.append("row %d: bad number (%s)" % (ri, e))
    tap.check("%s: FOCUS ListCost = ListUnitPrice x PricingQuantity exactly" % label, p)

    # memory_used rows: one per line x day, exact figures
    exp_rows = {}
    for team, e in exp["teams"].items():
        for l in e["lines"]:
            for d in l["days"]:
                exp_rows[(team, l["cluster"], l["gpu_model"], "memory_used", l["price_id"],
                          d["day"] + "T00:00:00Z")] = (e, l, d)
    got_rows = {}
    p = []
    for ri, d in enumerate(data, start=2):
        if d["x_ChargeKind"] != "memory_used":
            continue
        k = (d["SubAccountId"], d["x_Cluster"], d["x_GpuModel"], d["x_ChargeKind"],
             d["SkuPriceId"], d["ChargePeriodStart"])
        if k in got_rows:
            p.append("duplicate row %s (rows %d and %d)" % (k, got_rows[k][0], ri))
        got_rows[k] = (ri, d)
    for k in sorted(set(exp_rows) - set(got_rows)):
        p.append("missing row %s" % (k,))
    for k in sorted(set(got_rows) - set(exp_rows)):
        p.append("unexpected row %s (PricingQuantity %s)" % (k, got_rows[k][1]["PricingQuantity"]))
    tap.check("%s: FOCUS one memory_used row per invoice line x UTC day" % label, p)

    p_cost, p_qty, p_cols = [], [], []
    p0 = exp["period_start"]
    p1 = exp["period_end"]
    for k in sorted(set(exp_rows) & set(got_rows)):
        e, l, dd = exp_rows[k]
        ri, d = got_rows[k]
        try:
            if dec(d["BilledCost"]) != dec(dd["billed_cost"]):
                p_cost.append("%s BilledCost %s, expected %s"
                              % (k, d["BilledCost"], dd["billed_cost"]))
            # a GPU-Hours price: PricingQuantity in GPU-hours at the listed
            # price; ConsumedQuantity stays GB-hours
            pr = exp["prices"][l["price_id"]]
            gpuh = pr["unit"] == "GPU-Hours"
            want_q = {"ConsumedQuantity": dec(dd["gb_hours"]), "PricingQuantity": dec(dd["gb_hours"])}
            want_p = dec(pr["price"]) if gpuh else dec(l["unit_price"])
            if gpuh:
                gh = Fraction(int(dd["mib_seconds"]) * 1048576, 10 ** 9 * 3600) / \
                    Fraction(pr["capacity_gb"])
                want_q["PricingQuantity"] = Decimal(half_even_9(gh))
            for col, v in want_q.items():
                if dec(d[col]) != v:
                    p_qty.append("%s %s %s, expected %s" % (k, col, d[col], v))
            for col in ("ListUnitPrice", "ContractedUnitPrice"):
                if dec(d[col]) != want_p:
                    p_qty.append("%s %s %s, expected %s" % (k, col, d[col], want_p))
            if d["PricingUnit"] != pr["unit"]:
                p_qty.append("%s PricingUnit %s, expected %s" % (k, d["PricingUnit"], pr["unit"]))
        except Exception as ex:
            p_cost.append("%s: bad number (%s)" % (k, ex))
        day0 = gc.parse_time(dd["day"] + "T00:00:00Z")
        want = {
            "BillingPeriodStart": p0, "BillingPeriodEnd": p1,
            "ChargePeriodStart": gc.fmt_time(day0), "ChargePeriodEnd": gc.fmt_time(day0 + 86400),
            "ChargeCategory": "Usage", "ChargeClass": "",
            "ConsumedUnit": "GB-Hours", "BillingCurrency": exp["currency"],
            "InvoiceId": e["invoice_id"], "SubAccountName": e["team_name"],
            "x_CostCenter": e["cost_center"] or "", "x_CorrectedPeriod": "",
            "ServiceCategory": "Compute",
        }
        for col, v in want.items():
            if d[col] != v:
                p_cols.append("%s %s %r, expected %r" % (k, col, d[col], v))
        if d["Tags"]:
            try:
                tags = json.loads(d["Tags"])
                if not isinstance(tags, dict) or any(isinstance(v, (dict, list))
                                                     for v in tags.values()):
                    p_cols.append("%s Tags %r is not a flat object" % (k, d["Tags"]))
            except ValueError:
                p_cols.append("%s Tags %r is not JSON" % (k, d["Tags"]))
    tap.check("%s: FOCUS daily BilledCost = largest-remainder split of the line amount" % label,
              p_cost)
    tap.check("%s: FOCUS PricingQuantity/ConsumedQuantity = day's GB-hours, unit prices" % label,
              p_qty)
    tap.check("%s: FOCUS period, category, unit, invoice and team columns" % label, p_cols)

    # the daily rows of every line (all kinds) sum to the engine's own line amount
    p = []
    sums = {}
    for d in data:
        k = (d["SubAccountId"], d["x_Cluster"], d["x_GpuModel"], d["x_ChargeKind"], d["SkuPriceId"])
        try:
            sums[k] = sums.get(k, 0) + gc.to_units(d["BilledCost"], minor)
        except Exception as ex:
            p.append("%s: BilledCost %r (%s)" % (k, d["BilledCost"], ex))
    lines = {}
    for inv in doc.get("invoices", []):
        for l in inv.get("lines", []):
            lines[(inv.get("team"), l.get("cluster"), l.get("gpu_model"), l.get("kind"),
                   l.get("price_id"))] = l
    for k in sorted(set(lines) | set(sums), key=str):
        if k not in lines:
            p.append("CSV rows for %s have no invoice line" % (k,))
        elif k not in sums:
            if lines[k].get("mib_seconds") not in ("0", None):
                p.append("invoice line %s has no CSV rows" % (k,))
        elif gc.units_to_str(sums[k], minor) != lines[k].get("amount"):
            p.append("%s: daily rows sum to %s, line amount %s"
                     % (k, gc.units_to_str(sums[k], minor), lines[k].get("amount")))
    tap.check("%s: FOCUS daily rows of each line sum to the invoice line amount" % label, p)

    # idle / overhead rows, summed over teams per (cluster, model, kind, price, day)
    p = []
    got_f = {}
    for d in data:
        if d["x_ChargeKind"] in FLEET_KINDS:
            k = (d["x_Cluster"], d["x_GpuModel"], d["x_ChargeKind"], d["SkuPriceId"],
                 d["ChargePeriodStart"][:10])
            got_f.setdefault(k, []).append(d)
    exp_f = {}
    for l in exp["fleet"]:
        for dd in l["days"]:
            exp_f[(l["cluster"], l["gpu_model"], l["kind"], l["price_id"], dd["day"])] = dd
    for k in sorted(set(got_f) | set(exp_f), key=str):
        if k not in got_f:
            p.append("no row for %s" % (k,))
        elif k not in exp_f:
            p.append("unexpected rows for %s" % (k,))
        elif len(got_f[k]) == 1:
            d = got_f[k][0]
            # GB-hours in ConsumedQuantity; PricingQuantity too unless the
            # price is per GPU-hour (checked on the memory_used rows)
            if dec(d["ConsumedQuantity"]) != dec(exp_f[k]["gb_hours"]) or (
                    d["PricingUnit"] == "GB-Hours" and d["PricingQuantity"] != d["ConsumedQuantity"]):
                p.append("%s Consumed/PricingQuantity %s/%s, expected %s"
                         % (k, d["ConsumedQuantity"], d["PricingQuantity"], exp_f[k]["gb_hours"]))
            if dec(d["BilledCost"]) != dec(exp_f[k]["billed_cost"]):
                p.append("%s BilledCost %s, expected %s"
                         % (k, d["BilledCost"], exp_f[k]["billed_cost"]))
    tap.check("%s: FOCUS idle and overhead rows" % label, p)


# ---------------------------------------------------------------- fault proxy

class FaultProxy(harness.LoopbackServer):
    """HTTP server on 127.0.0.1 in a thread, in front of the real Prometheus.
    mode "bad_data": every /api/v1/ request answers 400 bad_data;
    mode "retry": the first `n503` /api/v1/ requests answer 503 Retry-After: 1;
    mode "badvalues": query_range answers are proxied with the samples listed
    in `mutations` {(uuid, gpu_i_id, ns, pod, t): "NaN"} replaced."""

    ERROR_TEXT = "fault injected by gpuledger tests: unknown function \"rate2\""

    def __init__(self, upstream_port, mode, mutations=None, n503=2, cluster=None):
        self.upstream = upstream_port
        self.mode = mode
        self.mutations = dict(mutations or {})
        self.applied = set()
        self.n503 = n503
        self.sent503 = 0
        self.log = []       # (time, key, status)
        self.lock = threading.Lock()
        self.cluster = cluster
        super().__init__(post=True)

    def handle(self, h, body):
        path = urllib.parse.urlsplit(h.path).path
        key = (h.command, h.path, body)
        api = path.startswith("/api/v1/")
        with self.lock:
            now = time.monotonic()
            if api and self.mode == "bad_data":
                self.log.append((now, key, 400))
                doc = {"status": "error", "errorType": "bad_data", "error": self.ERROR_TEXT}
                self.reply(h, 400, json.dumps(doc).encode())
                return
            if api and self.mode == "retry" and self.sent503 < self.n503:
                self.sent503 += 1
                self.log.append((now, key, 503))
                self.reply(h, 503, b"Service Unavailable (fault injected)\n", "text/plain",
                           (("Retry-After", "1"),))
                return
            self.log.append((now, key, 200))
        headers = {}
        if h.headers.get("Content-Type"):
            headers["Content-Type"] = h.headers["Content-Type"]
        status, data, ctype = self.relay(h, self.upstream, body, headers)
        if self.mode == "badvalues" and path.endswith("/query_range") and status == 200:
            params = urllib.parse.parse_qs(urllib.parse.urlsplit(h.path).query)
            if body:
                params.update(urllib.parse.parse_qs(body.decode("utf-8", "replace")))
            data = self.mutate(data, (params.get("query") or [""])[0])
        self.reply(h, status, data, ctype)

    def mutate(self, data, query):
        try:
            doc = json.loads(data)
        except ValueError:
            return data
        changed = False
        only_used = ("FB_USED" in query and "FB_FREE" not in query
                     and "FB_RESERVED" not in query)
        for r in doc.get("data", {}).get("result", []):
            m = r.get("metric", {})
            name = m.get("__name__")
            if not (name == "DCGM_FI_DEV_FB_USED" or (name is None and only_used)):
                continue
            idn = self.cluster.identity(m)
            if idn is None or "UUID" not in m:
                continue
            for v in r.get("values", []):
                k = (m["UUID"], m.get("GPU_I_ID", ""), idn[0], idn[1], int(float(v[0])))
                if k in self.mutations:
                    v[1] = self.mutations[k]
                    with self.lock:
                        self.applied.add(k)
                    changed = True
        return json.dumps(doc).encode() if changed else data


# ---------------------------------------------------------------- generator vs hand

TINY = {
    "name": "tiny", "start": "2026-10-01T22:00:00Z", "end": "2026-10-02T02:00:00Z",
    "window": {"from": "2026-10-01T23:00:00Z", "to": "2026-10-02T01:00:00Z"},
    "namespaces": [{"name": "team-x"}, {"name": "team-y"}, {"name": "other"}],
    "pods": [
        {"namespace": "team-x", "name": "p1", "uid": "u1", "container": "c", "node": "n1",
         "requests": {"nvidia.com/gpu": 1}},
        {"namespace": "team-y", "name": "p2", "uid": "u2", "container": "c", "node": "n2",
         "requests": {"nvidia.com/gpu": 2}},
        {"namespace": "other", "name": "p3", "uid": "u3", "container": "c", "node": "n2",
         "requests": {"nvidia.com/gpu": 1}},
    ],
    "nodes": [
        {"name": "n1", "gaps": [{"from": "2026-10-01T23:10:00Z", "to": "2026-10-01T23:20:00Z"}],
         "gpus": [{"gpu": 0, "uuid": "GPU-a", "pci_bus_id": "0", "model": "M1",
                   "capacity_mib": 1000, "reserved_mib": 10, "mode": "exclusive",
                   "occupants": [{"pod": "team-x/p1", "used_mib": 100}]}]},
        {"name": "n2",
         "gpus": [{"gpu": 0, "uuid": "GPU-b", "pci_bus_id": "0", "model": "M1",
                   "capacity_mib": 1000, "reserved_mib": 10, "mode": "process",
                   "unattributed_mib": 5,
                   "occupants": [{"pod": "team-y/p2", "vgpu": ["1", "2"], "used_mib": 200},
                                 {"pod": "other/p3", "from": "2026-10-02T00:30:00Z",
                                  "used_mib": 50}]}]},
    ],
    "prices": [
        {"model_pattern": "^M1$", "unit": "GB-Hours", "price": "0.36",
         "valid_from": "2026-10-01T00:00:00Z", "valid_to": "2026-10-02T00:00:00Z"},
        {"model_pattern": "^M1$", "unit": "GB-Hours", "price": "0.72",
         "valid_from": "2026-10-02T00:00:00Z", "valid_to": ""},
    ],
}
# Worked by hand (window 23:00-01:00, 60 s steps, 1 MiB.s = 1048576/3.6e12 GB-h):
#  p1 (team x): 120 steps - 10 in the gap; 50 x 100 MiB x 60 s = 300000 at 0.36
#     (0.0873813333 GB-h -> 0.087381333, x0.36 = 0.0314 -> 0.03); 60 steps = 360000
#     at 0.72 (0.1048576 GB-h, x0.72 = 0.0755 -> 0.08)
#  p2 (team y, two vgpu slots, counted once): 60 x 200 x 60 = 720000 per price
#     (0.2097152 GB-h; 0.0755 -> 0.08 and 0.1510 -> 0.15)
#  p3 (namespace "other" -> unallocated): 30 x 50 x 60 = 90000 at 0.72
#     (0.0262144 GB-h, 0.0189 -> 0.02)
#  idle: A 890/step (50 steps, then 60), B 785 (then 735 after 00:30 when p3 runs)
#     0.36: 50*890*60 + 60*785*60 = 5496000; 0.72: 60*890*60 + 30*785*60 + 30*735*60 = 5940000
#  overhead: A 10/step, B 10 reserved + 5 unattributed:
#     0.36: 50*10*60 + 60*15*60 = 84000; 0.72: 60*10*60 + 60*15*60 = 90000
TINY_EXPECTED = {
    "x": [("prices.csv:2", "300000", "0.087381333", "0.03"),
          ("prices.csv:3", "360000", "0.104857600", "0.08")],
    "y": [("prices.csv:2", "720000", "0.209715200", "0.08"),
          ("prices.csv:3", "720000", "0.209715200", "0.15")],
    "unallocated": [("prices.csv:3", "90000", "0.026214400", "0.02")],
    "fleet": [("idle_share", "prices.csv:2", "5496000"), ("idle_share", "prices.csv:3", "5940000"),
              ("overhead_share", "prices.csv:2", "84000"),
              ("overhead_share", "prices.csv:3", "90000")],
}


def check_tiny_scenario(work):
    path = os.path.join(work, "cfg", "tiny.json")
    with open(path, "w") as f:
        json.dump(TINY, f)
    try:
        exp = gc.load_scenario(path).expected()
    except Exception as e:
        return ["tiny scenario: %s" % e]
    got = {t: [(l["price_id"], l["mib_seconds"], l["gb_hours"], l["amount"]) for l in inv["lines"]]
           for t, inv in exp["teams"].items()}
    got["fleet"] = [(l["kind"], l["price_id"], l["mib_seconds"]) for l in exp["fleet"]]
    want = TINY_EXPECTED
    p = []
    for k in sorted(set(got) | set(want)):
        if got.get(k) != want.get(k):
            p.append("%s: got %s, worked by hand %s" % (k, got.get(k), want.get(k)))
    if exp["teams"].get("x", {}).get("lines", [{}])[0].get("days") != \
            [{"day": "2026-10-01", "mib_seconds": "300000", "gb_hours": "0.087381333",
              "billed_cost": "0.03"}]:
        p.append("x daily rows %s" % exp["teams"].get("x"))
    return p


def pick_bad_samples(cl, t_from, t_to):
    """Three FB_USED pod samples in [t_from, t_to) to turn into NaN, +Inf and
    -5: one per device where possible (MIG and exported_* identities first),
    only from (device, pod) pairs with a single series (no vgpu copies, whose
    max would hide the bad value)."""
    cands = {}
    for labels, samples in cl.series[gc.USED].items():
        d = dict(labels)
        idn = cl.identity(d)
        if idn is None or "vgpu" in d:
            continue
        key = (d["UUID"], d.get("GPU_I_ID", ""), idn[0], idn[1])
        ts = sorted(t for t in samples if t_from <= t < t_to and samples[t] > 0)
        if ts:
            cands.setdefault(key, []).append(ts)
    keys = [k for k, v in cands.items() if len(v) == 1]
    keys.sort(key=lambda k: (k[1] == "", k[0], k[2], k[3]))
    keys = keys[:3] or []
    out = {}
    span = (t_to - t_from) // cl.step
    for i, (value, key) in enumerate(zip(("NaN", "+Inf", "-5"), (keys * 3)[:3])):
        ts = cands[key][0]
        want = t_from + (span * (2 * i + 1) // 6) * cl.step
        t = min(ts, key=lambda x: (abs(x - want), x))
        while key + (t,) in out:
            t = ts[(ts.index(t) + 1) % len(ts)]
        out[key + (t,)] = value
    return out


# ---------------------------------------------------------------- the run

class Run(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = None
        self.proxies = []
        self.sharing = None
        self.sharing_ok = False
        self.extras = []

    def write_config(self, name, url, mutate=None, prices_file=None):
        cfg = copy.deepcopy(self.base_config)
        cfg["prometheus"]["url"] = url
        cfg["prices"]["file"] = prices_file or os.path.join(self.gen, "prices.csv")
        if mutate:
            mutate(cfg)
        path = self.path("cfg", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
        return path

    def engine_step(self, name, cfg, db, *args, want=0):
        rc, out, err = self.engine.run(cfg, db, *args)
        if rc != want:
            self.tap.fail(name, "exit %s (expected %s): %s" % (rc, want, tail(err)))
            return None
        return out, err

    def main(self):
        tap = self.tap
        a = self.args
        scenario = os.path.abspath(a.scenario)
        self.gen = self.path("gen")
        # a reused --work directory starts clean (a stale database would hide bugs)
        for d in ("gen", "gen-sharing", "tsdb", "tsdb-sharing", "db", "cfg", "out", "prom") + \
                tuple("%s-%s" % (a, os.path.basename(x)[:-5]) for x in platforms.EXTRA_FILES
                      for a in ("gen", "tsdb")):
            shutil.rmtree(self.path(d), ignore_errors=True)
        for d in ("db", "cfg", "out", "prom"):
            os.makedirs(self.path(d))
        self.sharing = None
        if a.sharing and a.sharing != "none":
            # its generator runs beside everything up to the Prometheus start
            self.sharing = Sharing(self, os.path.abspath(a.sharing))
            self.sharing.start_generator()
        if a.extra != "none":
            # DRA, HAMi, fleet-summary scenarios: same Prometheus
            for path in (a.extra.split(",") if a.extra else platforms.EXTRA_FILES):
                x = platforms.extra_for(self, Sharing, os.path.abspath(path))
                x.start_generator()
                self.extras.append(x)
        t0 = time.time()
        p = subprocess.run([sys.executable, os.path.join(REPO, "tests", "gen", "gencluster.py"),
                            scenario, self.gen], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            tap.fail("generator writes the scenario", tail(p.stderr.decode(errors="replace")))
            return
        files = [f for f in ("data.om", "config.json", "prices.csv", "expected.json")
                 if not os.path.isfile(os.path.join(self.gen, f))]
        if files:
            tap.fail("generator writes the scenario", "missing %s" % files)
            return
        tap.setup("generator writes data.om, config.json, prices.csv, expected.json (%.1fs)"
               % (time.time() - t0))
        with open(os.path.join(self.gen, "expected.json")) as f:
            self.exp = json.load(f)
        with open(os.path.join(self.gen, "config.json")) as f:
            self.base_config = json.load(f)
        qdir = os.path.join(REPO, "queries")
        if os.path.isdir(qdir) and "queries_dir" not in self.base_config.get("collection", {}):
            self.base_config.setdefault("collection", {})["queries_dir"] = qdir
        self.cl = gc.load_scenario(scenario)
        self.check_generator()

        # config / price failures need no Prometheus
        have_bin = os.path.isfile(a.bin) and os.access(a.bin, os.X_OK)
        if not have_bin:
            tap.fail("engine binary present", "%s is missing or not executable" % a.bin)
        else:
            tap.setup("engine binary present (%s)" % a.bin)
            self.engine = harness.Engine(os.path.abspath(a.bin), self.work,
                                         log=self.path("out", "engine.log"),
                                         timeout=ENGINE_TIMEOUT)

        missing = [t for t in ("promtool", "prometheus") if not shutil.which(t)]
        if missing:
            tap.skip("real Prometheus tests", "%s not found on PATH" % ", ".join(missing))
            if self.sharing:
                self.sharing.wait_generator()
            for x in self.extras:
                x.wait_generator()
            if have_bin:
                self.config_failures(None)
            return
        if not self.start_prometheus():
            return
        self.check_served()
        if not have_bin:
            return
        self.config_failures(self.prom.url())
        self.full_run()
        self.http_faults()
        if self.sharing and self.sharing_ok:
            self.sharing.main()
        for x in self.extras:
            if x.backfilled:
                x.main()

    # ---- generator self-checks
    def check_generator(self):
        tap, exp = self.tap, self.exp
        p = gc.self_check(self.cl, exp)
        if exp["pod_totals"] != self.cl.direct_pod_totals(self.cl.win_from, self.cl.win_to):
            p.append("pod totals differ from the occupants")
        tap.check("generator: expected figures cross-check (samples vs occupants, sums)", p)
        # hand-checkable arithmetic of the helpers
        p = []
        if gc.round_half_even(Fraction(5, 1000), 2) != "0.00" or \
                gc.round_half_even(Fraction(15, 1000), 2) != "0.02" or \
                gc.round_half_even(Fraction(-25, 1000), 2) != "-0.02":
            p.append("round_half_even")
        if gc.largest_remainder(905, [1, 1]) != [453, 452] or \
                gc.largest_remainder(683, [1, 2, 1]) != [171, 341, 171]:
            p.append("largest_remainder")
        # 123456000 MiB.s = 129452998656000 B.s / 3.6e12 = 35.9591662933... GB-h
        # (interfaces.md's example prints 35.960630044, which the formula does not give)
        if gc.round_half_even(gc.mib_s_to_gbh(123456000), 9) != "35.959166293":
            p.append("gb_hours of 123456000 MiB.s")
        if gc.round_half_even(gc.mib_s_to_gbh(123456000) * Fraction("0.05"), 2) != "1.80":
            p.append("amount of the interfaces.md example")
        tap.check("generator: arithmetic helpers (half-even, largest remainder, GB-hours)", p)

        p = check_tiny_scenario(self.work)
        tap.check("generator: a tiny scenario gives the hand-computed figures", p)

    # ---- Prometheus
    def start_prometheus(self):
        """Backfills the main scenario and (in parallel) the sharing one, then
        serves both from one TSDB (their time ranges do not overlap)."""
        tap = self.tap
        tsdb = self.path("tsdb")
        t0 = time.time()
        main_p = harness.backfill_start(os.path.join(self.gen, "data.om"), tsdb, self.work)
        self.sharing_ok = False
        if self.sharing and self.sharing.wait_generator():
            t1 = time.time()
            rc, out = harness.backfill(os.path.join(self.sharing.gen, "data.om"),
                                       self.path("tsdb-sharing"), self.work)
            if rc != 0:
                tap.fail("sharing: promtool backfill", tail(out))
            else:
                self.sharing_ok = True
                tap.setup("sharing: promtool backfill of %d lines (%.1fs)" % (
                    self.sharing.exps[None].get("data_lines", 0), time.time() - t1))
        for x in self.extras:
            x.backfilled = False
            if not x.wait_generator():
                continue
            t1 = time.time()
            rc, out = harness.backfill(os.path.join(x.gen, "data.om"),
                                       self.path("tsdb-%s" % x.prefix), self.work)
            if rc != 0:
                tap.fail("%s: promtool backfill" % x.prefix, tail(out))
                continue
            x.backfilled = True
            tap.setup("%s: promtool backfill of %d lines (%.1fs)" % (
                x.prefix, x.exps[None].get("data_lines", 0), time.time() - t1))
        rc, out = harness.backfill_wait(main_p)
        if rc != 0:
            tap.fail("promtool backfill", tail(out))
            return False
        tap.setup("promtool backfill of %d lines (%.1fs)" % (self.exp.get("data_lines", 0),
                                                         time.time() - t0))
        srcs = ["tsdb-sharing"] if self.sharing_ok else []
        srcs += ["tsdb-%s" % x.prefix for x in self.extras if x.backfilled]
        for src in (self.path(d) for d in srcs):
            for b in os.listdir(src):
                if os.path.isfile(os.path.join(src, b, "meta.json")):
                    os.rename(os.path.join(src, b), os.path.join(tsdb, b))
        self.prom = harness.Prometheus(self.path("prom"), tsdb)
        try:
            t0 = time.time()
            self.prom.start()
        except RuntimeError as e:
            tap.fail("prometheus ready", e)
            return False
        tap.setup("prometheus ready on %s (%.1fs)" % (self.prom.url(), time.time() - t0))
        return True

    def check_served(self):
        """The served samples at step instants are exactly the generated ones."""
        cl = self.cl
        times = {cl.win_from, (cl.win_from + cl.win_to) // 2 // cl.step * cl.step,
                 cl.win_to - cl.step, cl.win_to}
        for n in cl.scn.get("nodes", []):                  # inside every scrape gap
            for g in n.get("gaps", []):
                times.add(gc.parse_time(g["from"]) + cl.step)
        for obj in cl.scn.get("namespaces", []) + cl.scn.get("pods", []):
            for ch in obj.get("changes", []):               # around every label change
                times |= {gc.parse_time(ch["at"]) - cl.step, gc.parse_time(ch["at"])}
        times = sorted(times)
        p = self.served_problems(cl, times)
        self.tap.check("prometheus serves the generated samples at step instants "
                       "(lookback 59s, gap empty)", p)

    def served_problems(self, cl, times):
        p = []
        for t in times:
            want = {}
            for k, v in cl.samples_at(t).items():
                want[(k[0], frozenset(k[1:]))] = v
            try:
                res = self.prom.query('{__name__=~"DCGM_FI_.*|kube_.*|hami_.*"}', t)
            except Exception as e:
                p.append("query at %s: %s" % (gc.fmt_time(t), e))
                continue
            got = {}
            for r in res:
                m = dict(r["metric"])
                name = m.pop("__name__")
                got[(name, frozenset(m.items()))] = float(r["value"][1])
            if set(got) != set(want):
                miss = [dict(k[1]).get("pod", k[0]) for k in set(want) - set(got)][:3]
                extra = [dict(k[1]).get("pod", k[0]) for k in set(got) - set(want)][:3]
                p.append("%s: %d series served, %d generated (missing %s, extra %s)"
                         % (gc.fmt_time(t), len(got), len(want), miss, extra))
                continue
            bad = [k for k in want if float(want[k]) != got[k]]
            if bad:
                p.append("%s: %d values differ" % (gc.fmt_time(t), len(bad)))
        return p

    # ---- the main comparison
    def full_run(self):
        tap, exp, cl = self.tap, self.exp, self.cl
        cfg = self.write_config("main.json", self.prom.url())
        os.makedirs(self.path("db"), exist_ok=True)
        db = self.path("db", "full.db")
        wf, wt = exp["window"]["from"], exp["window"]["to"]
        t0 = time.time()
        r = self.engine_step("collect full window", cfg, db, "collect", "--from", wf, "--to", wt)
        if r is None:
            return
        tap.setup("collect %s .. %s (%.1fs)" % (wf, wt, time.time() - t0))
        doc1 = self.invoice(cfg, db, "invoice")
        if doc1 is not None:
            compare_invoices(tap, "full", doc1, exp)
            tap.check("full: invoice info blocks (waste, allocated, compute_indicator, "
                      "anomalies)", Sharing.block_problems(exp, doc1))
        csv1 = self.export(cfg, db, "export")
        if csv1 is not None and doc1 is not None:
            check_focus(tap, "full", csv1, doc1, exp)
        if csv1 is not None:
            # the FinOps Foundation's rules (focus_check.py): 1.2 and 1.3
            focus_check.check_file(tap, "full", self.path("out", "export.csv"), "1.2")
            t13 = focus_check.export_and_check(tap, self.engine, cfg, db, exp["period"],
                                               self.path("out", "full"), "full",
                                               versions=("1.3",))["1.3"]
            if t13 is not None and exp["config"]["policy"] == "proportional":
                check_splits(tap, "full", t13, exp)
        self.check_summary(cfg, db)
        # keep a copy for the missing-price test (engine exited: database closed)
        self.db_copy = self.path("db", "copy.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                shutil.copyfile(db + suffix, self.db_copy + suffix)
        self.missing_price()

        # re-collect the same window: nothing changes
        r = self.engine_step("re-collect the same window", cfg, db, "collect", "--from", wf,
                             "--to", wt)
        if r is not None:
            doc2 = self.invoice(cfg, db, "invoice after re-collect")
            csv2 = self.export(cfg, db, "export after re-collect")
            p = []
            if doc2 is not None and doc1 is not None and doc2 != doc1:
                p.append("invoice JSON changed")
            if doc2 is not None:
                p += compare_invoices(None, "re-collect", doc2, exp)
            if csv1 is not None and csv2 is not None and \
                    sorted(csv1.splitlines()) != sorted(csv2.splitlines()):
                p.append("FOCUS CSV changed")
            tap.check("re-collecting the same window leaves invoices and export unchanged", p)

        # two halves into a fresh database
        mid = gc.fmt_time(cl.win_from + ((cl.win_to - cl.win_from) // 3600 // 2 + 3) * 3600)
        db2 = self.path("db", "halves.db")
        ok = self.engine_step("collect first half", cfg, db2, "collect", "--from", wf,
                              "--to", mid) is not None
        ok = ok and self.engine_step("collect second half", cfg, db2, "collect", "--from", mid,
                                     "--to", wt) is not None
        if ok:
            doc3 = self.invoice(cfg, db2, "invoice after halves")
            if doc3 is not None:
                p = compare_invoices(None, "halves", doc3, exp)
                if doc1 is not None and not p and doc3 != doc1:
                    p.append("invoice JSON differs from the one-window run")
                tap.check("collecting in two halves (%s .. %s .. %s) gives the same totals"
                          % (wf, mid, wt), p)

    def check_summary(self, cfg, db):
        """summary --format json (interfaces.md, sharing-aware outputs) against
        the generator's fleet sums: per model, then per device, GB-hours."""
        r = self.engine_step("summary", cfg, db, "summary", "--period", self.exp["period"],
                             "--format", "json")
        if r is None:
            return
        try:
            doc = json.loads(r[0])
        except ValueError as e:
            self.tap.fail("full: fleet summary", "stdout is not JSON (%s): %s" % (e, tail(r[0])))
            return
        with open(self.path("out", "summary.json"), "w") as f:
            f.write(r[0])
        core = ("capacity", "memory_used", "reserved", "unattributed", "idle", "excess")
        for what, fields, keyf in (
                ("models", core, lambda m: (m.get("cluster"), m.get("gpu_model"))),
                ("devices", core,
                 lambda m: (m.get("cluster"), m.get("uuid"), m.get("gpu_i_id") or None))):
            p = []
            if doc.get("period") != self.exp["period"]:
                p.append("period %r" % doc.get("period"))
            got = {keyf(m): m for m in doc.get(what) or []}
            want = {keyf(m): m for m in self.exp["summary"][what]}
            if what == "models":
                for m in want.values():   # basis used: nothing reserved-unused is billed
                    k = keyf(m)
                    if k in got and got[k].get("reserved_unused_billed") not in \
                            ("0", "0.000000000"):
                        p.append("%s reserved_unused_billed %r, expected 0.000000000"
                                 % (k, got[k].get("reserved_unused_billed")))
            for k in sorted(set(got) - set(want), key=str):
                p.append("unexpected %s" % (k,))
            for k in sorted(want, key=str):
                if k not in got:
                    p.append("missing %s" % (k,))
                    continue
                for f in fields:
                    try:
                        ok = dec(got[k].get(f)) == dec(want[k][f])
                    except Exception:
                        ok = False
                    if not ok:
                        p.append("%s %s: got %r, expected %s" % (k, f, got[k].get(f), want[k][f]))
            self.tap.check("full: fleet summary per %s (capacity = used + reserved + "
                           "unattributed + idle; idle = FB_FREE)" % what[:-1], p)

    def invoice(self, cfg, db, name):
        r = self.engine_step(name, cfg, db, "invoice", "--period", self.exp["period"],
                             "--format", "json")
        if r is None:
            return None
        try:
            doc = json.loads(r[0])
        except ValueError as e:
            self.tap.fail(name, "stdout is not JSON (%s): %s" % (e, tail(r[0])))
            return None
        if not isinstance(doc, dict) or not isinstance(doc.get("invoices"), list):
            self.tap.fail(name, "no \"invoices\" array: %s" % tail(r[0]))
            return None
        with open(self.path("out", re.sub(r"[^a-z0-9]+", "-", name) + ".json"), "w") as f:
            f.write(r[0])
        return doc

    def export(self, cfg, db, name):
        out = self.path("out", re.sub(r"[^a-z0-9]+", "-", name) + ".csv")
        if os.path.exists(out):
            os.unlink(out)
        r = self.engine_step(name, cfg, db, "export", "--period", self.exp["period"],
                             "--out", out)
        if r is None:
            return None
        if not os.path.isfile(out):
            self.tap.fail(name, "--out %s was not written" % out)
            return None
        with open(out, newline="") as f:
            return f.read()

    # ---- config and price-table failures (exit 3)
    def config_failures(self, url):
        tap = self.tap
        url = url or "http://127.0.0.1:9"
        os.makedirs(self.path("db"), exist_ok=True)
        db = self.path("db", "fail.db")
        window = ("collect", "--from", self.exp["window"]["from"], "--to",
                  gc.fmt_time(self.cl.win_from + 3600))

        def run(name, cfg, *args):
            rc, _, err = self.engine.run(cfg, db, *args, timeout=60)
            return rc, err

        cfg = self.write_config("unknown-key.json", url,
                                lambda c: c["collection"].__setitem__("chunk_hourz", 6))
        rc, err = run("unknown key", cfg, *window)
        p = [] if rc == 3 else ["exit %s, expected 3" % rc]
        if "chunk_hourz" not in err or "collection" not in err:
            p.append("stderr does not name collection.chunk_hourz: %s" % tail(err, 300))
        tap.check("config with an unknown key (collection.chunk_hourz) exits 3 naming the key",
                  p)

        bad = self.path("cfg", "bad-syntax.json")
        with open(bad, "w") as f:
            f.write('{\n  "prometheus": {"url": "%s"},\n  "prices": {"file": "%s"},\n'
                    '  "billing": {"currency": USD}\n}\n'
                    % (url, os.path.join(self.gen, "prices.csv")))
        rc, err = run("config syntax error", bad, *window)
        p = [] if rc == 3 else ["exit %s, expected 3" % rc]
        if "bad-syntax.json:4" not in err:
            p.append("stderr does not name bad-syntax.json:4: %s" % tail(err, 300))
        tap.check("config with a JSON syntax error on line 4 exits 3 naming file:line", p)

        with open(os.path.join(self.gen, "prices.csv"), newline="") as f:
            rows = list(csv.reader(f))
        last = len(rows) - 1
        # (title, file, line index (0 = header), column, bad value)
        cases = [("bad price 1.2.3", "prices-bad-price.csv", min(3, last), 2, "1.2.3"),
                 ("bad date", "prices-bad-date.csv", min(4, last), 4, "2026-13-01T00:00:00Z")]
        for title, fname, idx, col, value in cases:
            out = copy.deepcopy(rows)
            out[idx][col] = value
            path = self.path("cfg", fname)
            with open(path, "w", newline="") as f:
                csv.writer(f, lineterminator="\n").writerows(out)
            cfg = self.write_config("cfg-" + fname + ".json", url, prices_file=path)
            rc, err = run("prices " + title, cfg, "prices", "--file", path)
            p = [] if rc == 3 else ["exit %s, expected 3" % rc]
            if fname not in err:
                p.append("stderr does not name %s" % fname)
            if not re.search(r"(:%d\b|line %d\b|row %d\b)" % (idx + 1, idx + 1, idx + 1), err):
                p.append("stderr does not name line %d" % (idx + 1))
            if p:
                p.append("stderr: %s" % tail(err, 300))
            tap.check("price table with a %s (line %d) exits 3 naming file and row"
                      % (title, idx + 1), p)

    def missing_price(self):
        models = sorted({l["gpu_model"] for inv in self.exp["teams"].values()
                         for l in inv["lines"]})
        if not models:
            self.tap.fail("invoice with a model without price", "the scenario bills nothing")
            return
        model = models[-1]
        with open(os.path.join(self.gen, "prices.csv"), newline="") as f:
            rows = list(csv.reader(f))
        path = self.path("cfg", "prices-missing-model.csv")
        with open(path, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(
                [rows[0]] + [r for r in rows[1:] if not re.search(r[0], model)])
        cfg = self.write_config("missing-model.json", self.prom.url(), prices_file=path)
        rc, _, err = self.engine.run(cfg, self.db_copy, "invoice", "--period",
                                     self.exp["period"], "--format", "json", timeout=60)
        p = [] if rc == 3 else ["exit %s, expected 3" % rc]
        if model not in err:
            p.append("stderr does not name the model: %s" % tail(err, 300))
        self.tap.check("invoice with no price for %s exits 3 naming the model" % model, p)

    # ---- HTTP faults through the proxy
    def http_faults(self):
        tap, cl = self.tap, self.cl
        os.makedirs(self.path("db"), exist_ok=True)

        # 400 bad_data -> exit 4 naming the URL path and the error
        px = FaultProxy(self.prom.port, "bad_data", cluster=cl)
        self.proxies.append(px)
        cfg = self.write_config("fault-400.json", px.url(),
                                lambda c: c["prometheus"].update(timeout_seconds=10))
        wf = gc.fmt_time(cl.win_from)
        wt = gc.fmt_time(cl.win_from + 3600)
        rc, _, err = self.engine.run(cfg, self.path("db", "f400.db"), "collect", "--from", wf,
                                     "--to", wt, timeout=120)
        p = [] if rc == 4 else ["exit %s, expected 4" % rc]
        paths = sorted({urllib.parse.urlsplit(k[1]).path for _, k, s in px.log if s == 400})
        if not paths:
            p.append("the engine sent no /api/v1/ request")
        elif not any(pp in err for pp in paths):
            p.append("stderr names none of the failed paths %s" % paths)
        if FaultProxy.ERROR_TEXT not in err and "rate2" not in err:
            p.append("stderr lacks the error text")
        if "400" not in err and "bad_data" not in err:
            p.append("stderr lacks the status (400 / bad_data)")
        if p:
            p.append("stderr: %s" % tail(err, 400))
        tap.check("HTTP 400 bad_data: exit 4, stderr names the URL path and the error", p)
        px.close()

        # 503 + Retry-After: 1 twice, then the real answers
        px = FaultProxy(self.prom.port, "retry", cluster=cl)
        self.proxies.append(px)
        cfg = self.write_config("fault-503.json", px.url(),
                                lambda c: c["prometheus"].update(timeout_seconds=10, retries=3))
        t_from = max(cl.win_from, cl.win_to - 12 * 3600)
        t_to = min(cl.win_to, t_from + 2 * 3600)
        db = self.path("db", "f503.db")
        rc, _, err = self.engine.run(cfg, db, "collect", "--from", gc.fmt_time(t_from), "--to",
                                     gc.fmt_time(t_to), timeout=120)
        p = [] if rc == 0 else ["collect exit %s, expected 0: %s" % (rc, tail(err, 300))]
        if px.sent503 != 2:
            p.append("%d requests got 503" % px.sent503)
        for i, (t503, key, s) in enumerate(px.log):
            if s != 503:
                continue
            nxt = [t for t, k, _ in px.log[i + 1:] if k == key]
            if not nxt:
                p.append("request %s was not retried" % (key[1][:80],))
            elif nxt[0] - t503 < 0.9:
                p.append("retried after %.2fs, Retry-After was 1s" % (nxt[0] - t503))
        if rc == 0:
            doc = self.invoice(cfg, db, "invoice after 503 retries")
            if doc is not None:
                exp = self.cl.expected(t_from, t_to)
                p += compare_invoices(None, "retry", doc, exp)
        tap.check("HTTP 503 with Retry-After: 1 twice: retried after >= 1s, collect succeeds", p)
        px.close()

        # NaN / +Inf / -5 samples are skipped, reported, the rest billed
        t_from = max(cl.win_from, cl.win_from + ((cl.win_to - cl.win_from) // 7200 - 2) * 3600)
        t_to = min(cl.win_to, t_from + 3 * 3600)
        muts = pick_bad_samples(cl, t_from, t_to)
        tap.note("bad samples injected: %s" % ", ".join(
            "%s %s/%s@%s" % (v, k[2], k[3], gc.fmt_time(k[4])) for k, v in sorted(
                muts.items(), key=lambda kv: kv[0][4])))
        px = FaultProxy(self.prom.port, "badvalues", mutations=muts, cluster=cl)
        self.proxies.append(px)
        cfg = self.write_config("fault-values.json", px.url())
        db = self.path("db", "fvalues.db")
        rc, _, err = self.engine.run(cfg, db, "collect", "--from", gc.fmt_time(t_from), "--to",
                                     gc.fmt_time(t_to), timeout=120)
        p = [] if rc == 0 else ["collect exit %s, expected 0" % rc]
        if px.applied != set(muts):
            p.append("the engine never fetched %s" % sorted(set(muts) - px.applied))
        low = err.lower()
        for word, alts in (("NaN", ("nan",)), ("+Inf", ("inf",)), ("-5", ("-5", "negative"))):
            if not any(x in low for x in alts):
                p.append("stderr does not report the %s sample" % word)
        if p:
            p.append("stderr: %s" % tail(err, 400))
        if rc == 0:
            doc = self.invoice(cfg, db, "invoice after bad values")
            if doc is not None:
                exp = self.cl.expected(t_from, t_to, exclude=set(muts))
                p += compare_invoices(None, "bad values", doc, exp, memory_only=True)
        tap.check("NaN, +Inf and -5 samples are skipped and reported, the rest billed", p)
        px.close()

    def cleanup(self):
        if self.sharing and self.sharing.proc and self.sharing.proc.poll() is None:
            self.sharing.proc.kill()
            self.sharing.proc.wait()
        for px in self.proxies:
            try:
                px.close()
            except Exception:
                pass
        if self.prom:
            self.prom.stop()


# ---------------------------------------------------------------- sharing

def fr(s):
    """Decimal text -> Fraction (None for None / bad text)."""
    try:
        return Fraction(str(s))
    except (ValueError, TypeError, ZeroDivisionError):
        return None


def close_to(got, exact):
    """got (decimal text) is exact rounded to the number of decimals it
    prints (any rounding direction of the last half unit)."""
    g = fr(got)
    if g is None:
        return False
    s = str(got)
    places = len(s.split(".", 1)[1]) if "." in s else 0
    return abs(g - Fraction(exact)) <= Fraction(1, 2 * 10 ** places)


def same_dec(a, b):
    fa, fb = fr(a), fr(b)
    return fa is not None and fa == fb


def line_key(l):
    return (l.get("cluster"), l.get("gpu_model"), l.get("kind"), l.get("price_id"))


class Sharing:
    """The "sharing" scenario: one generated cluster served by the
    same Prometheus as the main scenario, and the engine run once per config
    of the scenario's "runs" (attribution mode, split, basis, idle policy,
    identity labels), each into its own database, each compared in full with
    the generator's expected-RUN.json; then the named checks of the issue,
    with figures summed straight from the scenario."""

    prefix = "sharing"

    def __init__(self, run, scenario):
        self.r = run
        self.tap = run.tap
        self.scenario = scenario
        self.gen = run.path("gen-%s" % self.prefix)
        self.proc = None
        self.exps = {}
        self.out = {}     # run name -> {"doc", "summary", "anomalies", "csv"}
        self.cl = None

    # ---- generator (started early: it takes a few seconds)
    def start_generator(self):
        self.t0 = time.time()
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "tests", "gen", "gencluster.py"),
             self.scenario, self.gen], stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def wait_generator(self):
        out, err = self.proc.communicate()
        if self.proc.returncode != 0:
            self.tap.fail("%s: generator writes the scenario and its runs" % self.prefix,
                          tail(err.decode(errors="replace")))
            return False
        self.cl = gc.load_scenario(self.scenario)
        names = [None] + [r["name"] for r in self.cl.runs]
        for n in names:
            with open(os.path.join(self.gen, "expected%s.json" % ("-" + n if n else ""))) as f:
                self.exps[n] = json.load(f)
        self.tap.ok("%s: generator writes data.om and config/expected for %d engine "
                    "configs, model self-checks pass (%.1fs)" % (self.prefix, len(names),
                                                                 time.time() - self.t0))
        return True

    def label(self, name):
        return "%s/%s" % (self.prefix, name or self.base_name)

    base_name = "device-even"

    def config(self, name):
        with open(os.path.join(self.gen, "config%s.json" % ("-" + name if name else ""))) as f:
            cfg = json.load(f)
        cfg["prometheus"]["url"] = self.r.prom.url()
        cfg["prices"]["file"] = os.path.join(self.gen, "prices.csv")
        qdir = os.path.join(REPO, "queries")
        if os.path.isdir(qdir) and "queries_dir" not in cfg.get("collection", {}):
            cfg.setdefault("collection", {})["queries_dir"] = qdir
        path = self.r.path("cfg", "%s-%s.json" % (self.prefix, name or "base"))
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
        return path

    # ---- all runs
    def main(self):
        self.check_served()
        for name in self.exps:
            self.run_one(name)
        self.named_checks()

    def check_served(self):
        cl = self.cl
        times = {cl.win_from, cl.win_to - cl.step}
        for p in cl.scn["pods"]:
            for k in ("from", "to", "completed_at"):
                if p.get(k):
                    t = gc.parse_time(p[k])
                    times |= {t - cl.step, t}
        times = sorted(t for t in times if cl.start <= t < cl.end)
        p = self.r.served_problems(cl, times)
        self.tap.check("%s: prometheus serves the generated samples (%d instants, FB, "
                       "compute, HAMi and kube-state-metrics series)" % (self.prefix, len(times)),
                       p)

    def run_one(self, name):
        exp = self.exps[name]
        label = self.label(name)
        cfg = self.config(name)
        db = self.r.path("db", "%s-%s.db" % (self.prefix, name or "base"))
        wf, wt = exp["window"]["from"], exp["window"]["to"]
        eng = self.r.engine
        t0 = time.time()
        rc, out, err = eng.run(cfg, db, "collect", "--from", wf, "--to", wt)
        if rc != 0:
            self.tap.fail("%s: collect" % label, "exit %s: %s" % (rc, tail(err)))
            return
        res = {"collect_s": time.time() - t0, "collect_err": err}
        period = exp["period"]
        for key, args in (("doc", ("invoice", "--period", period, "--format", "json")),
                          ("summary", ("summary", "--period", period, "--format", "json")),
                          ("anomalies", ("anomalies", "--period", period, "--format", "json"))):
            rc, out, err = eng.run(cfg, db, *args)
            if rc != 0:
                res[key] = None
                res[key + "_err"] = "%s exit %s: %s" % (args[0], rc, tail(err, 300))
                continue
            try:
                res[key] = json.loads(out)
            except ValueError as e:
                res[key] = None
                res[key + "_err"] = "%s: stdout is not JSON (%s): %s" % (args[0], e, tail(out, 200))
            with open(self.r.path("out", "%s-%s-%s.json" % (self.prefix, name or "base",
                                                              args[0])), "w") as f:
                f.write(out)
        csvp = self.r.path("out", "%s-%s.csv" % (self.prefix, name or "base"))
        rc, out, err = eng.run(cfg, db, "export", "--period", period, "--out", csvp)
        res["csv"] = None
        if rc == 0 and os.path.isfile(csvp):
            with open(csvp, newline="") as f:
                res["csv"] = f.read()
        else:
            res["csv_err"] = "export exit %s: %s" % (rc, tail(err, 300))
        self.out[name] = res
        c = exp["config"]
        desc = "%s, split %s, basis %s, idle %s, identity %s" % (
            c["attribution"], c["split"], c["basis"], c["policy"], c["identity_labels"])
        self.tap.ok("%s: collect %s .. %s (%s; %.1fs)" % (label, wf, wt, desc, res["collect_s"]))

        def need(key):
            if res.get(key) is None:
                return [res.get(key + "_err", "no output")]
            return None

        self.tap.check("%s: invoices (every line of every team, amounts, totals)" % label,
                       need("doc") or self.invoice_problems(exp, res["doc"]))
        self.tap.check("%s: invoice info blocks (waste, allocated, compute_indicator, "
                       "anomalies)" % label, need("doc") or self.block_problems(exp, res["doc"]))
        self.tap.check("%s: fleet summary per model and device" % label,
                       need("summary") or self.summary_problems(exp, res["summary"]))
        self.tap.check("%s: anomalies --format json" % label,
                       need("anomalies") or anomaly_problems(
                           exp["anomalies"], (res["anomalies"] or {}).get("anomalies"),
                           exp["step_seconds"]) + ([] if res["anomalies"].get("period") == period
                                                   else ["period %r" % res["anomalies"].get(
                                                       "period")]))
        self.tap.check("%s: FOCUS rows (quantity, BilledCost, x_Estimated, x_ComputeIndicator)"
                       % label, need("csv") or self.focus_problems(exp, res["csv"]))
        if name is None and res.get("csv") is not None and res.get("doc") is not None:
            check_focus(self.tap, label, res["csv"], res["doc"], exp)
        if res.get("csv") is not None:
            # the FinOps Foundation's rules (focus_check.py): 1.2 and 1.3
            focus_check.check_file(self.tap, label, csvp, "1.2")
            t13 = focus_check.export_and_check(
                self.tap, eng, cfg, db, period,
                self.r.path("out", "%s-%s" % (self.prefix, name or "base")), label,
                versions=("1.3",))["1.3"]
            if t13 is not None and c["policy"] == "proportional":
                check_splits(self.tap, label, t13, exp)
        self.tap.check("%s: reconciliation per model under idle policy %s (engine figures: "
                       "to 1e-6 GB-h and to the cent)" % (label, c["policy"]),
                       need("doc") or need("summary") or
                       self.reconcile_problems(exp, res["doc"], res["summary"]))

    # ---- generic comparisons
    @staticmethod
    def invoice_problems(exp, doc):
        p = []
        minor = exp["minor_units"]
        if doc.get("period") != exp["period"]:
            p.append("period %r" % doc.get("period"))
        got = invoices_by_team(doc)
        for team in sorted(set(exp["invoices"]) - set(got)):
            p.append("no invoice for %s" % team)
        for team in sorted(set(got) - set(exp["invoices"]), key=str):
            inv = got[team]
            if team in exp["info_only"] and not inv.get("lines") and \
                    fr(inv.get("total")) == 0:
                continue   # allocation / waste only: an invoice is optional
            p.append("unexpected invoice for %r: %s" % (team, [
                (l.get("gpu_model"), l.get("kind"), l.get("mib_seconds"))
                for l in inv.get("lines", [])]))
        for team, e in sorted(exp["invoices"].items()):
            inv = got.get(team)
            if inv is None:
                continue
            for k in ("invoice_id", "team_name", "cost_center"):
                if inv.get(k) != e[k]:
                    p.append("%s %s: got %r, expected %r" % (team, k, inv.get(k), e[k]))
            p += line_order_problems(team, inv.get("lines", []))
            gl = {}
            for l in inv.get("lines", []):
                if line_key(l) in gl:
                    p.append("%s: two lines %s" % (team, line_key(l)))
                gl[line_key(l)] = l
            el = {line_key(l): l for l in e["lines"]}
            for k in sorted(set(gl) - set(el), key=str):
                p.append("%s: unexpected line %s (%s MiB.s)" % (team, k, gl[k].get("mib_seconds")))
            for k in sorted(set(el) - set(gl), key=str):
                p.append("%s: missing line %s (expected %s MiB.s)"
                         % (team, k, el[k]["mib_seconds"]))
            for k in sorted(set(el) & set(gl), key=str):
                g, w = gl[k], el[k]
                for f in ("price_valid_from", "price_valid_to", "pricing_unit", "mib_seconds",
                          "gb_hours", "amount"):
                    if g.get(f) != w[f]:
                        p.append("%s %s %s: got %r, expected %r" % (team, k[1:3], f, g.get(f),
                                                                    w[f]))
                if not same_dec(g.get("unit_price"), w["unit_price"]):
                    p.append("%s %s unit_price: got %r, expected %s"
                             % (team, k[1:3], g.get("unit_price"), w["unit_price"]))
                if k[2] == "memory_used" and g.get("estimated") is not w["estimated"]:
                    p.append("%s %s estimated: got %r, expected %r"
                             % (team, k[1:3], g.get("estimated"), w["estimated"]))
            if inv.get("total") != e["total"]:
                p.append("%s total: got %r, expected %r" % (team, inv.get("total"), e["total"]))
            try:
                s = sum(gc.to_units(l.get("amount"), minor) for l in inv.get("lines", []))
                if gc.to_units(inv.get("total"), minor) != s:
                    p.append("%s total %r is not the sum of its lines" % (team, inv.get("total")))
            except Exception as ex:
                p.append("%s: bad amounts (%s)" % (team, ex))
        return p

    @staticmethod
    def block_problems(exp, doc):
        p = []
        got = invoices_by_team(doc)
        step = exp["step_seconds"]
        want_all = dict(exp["info_only"])
        want_all.update(exp["invoices"])
        for team, e in sorted(want_all.items()):
            inv = got.get(team)
            if inv is None:
                continue
            for block in ("waste", "allocated"):
                rows = inv.get(block)
                if not isinstance(rows, list):
                    p.append("%s: no %r array" % (team, block))
                    continue
                gm = {(x.get("cluster"), x.get("gpu_model")): x for x in rows
                      if not (block == "waste" and x.get("mib_seconds") == "0")}
                wm = {(x["cluster"], x["gpu_model"]): x for x in e[block]}
                for k in sorted(set(gm) ^ set(wm), key=str):
                    p.append("%s %s %s: %s" % (team, block, k, "unexpected %s MiB.s" % gm[k].get(
                        "mib_seconds") if k in gm else "missing (expected %s MiB.s)"
                        % wm[k]["mib_seconds"]))
                for k in sorted(set(gm) & set(wm), key=str):
                    for f in ("mib_seconds", "gb_hours"):
                        if gm[k].get(f) != wm[k][f]:
                            p.append("%s %s %s %s: got %r, expected %s" % (
                                team, block, k[1], f, gm[k].get(f), wm[k][f]))
                    if block == "allocated" and not close_to(
                            gm[k].get("gpu_hours"),
                            Fraction(int(wm[k]["gpu_micro_seconds"]), 3600 * 10 ** 6)):
                        p.append("%s allocated %s gpu_hours: got %r, expected %s" % (
                            team, k[1], gm[k].get("gpu_hours"), wm[k]["gpu_hours"]))
            rows = inv.get("compute_indicator")
            if not isinstance(rows, list):
                p.append("%s: no compute_indicator array" % team)
            else:
                gm = {(x.get("cluster"), x.get("gpu_model")): x for x in rows}
                wm = {(x["cluster"], x["gpu_model"]): x for x in e["compute_indicator"]}
                for k in sorted(set(gm) ^ set(wm), key=str):
                    p.append("%s compute_indicator %s %s" % (team, k, "unexpected"
                                                             if k in gm else "missing"))
                for k in sorted(set(gm) & set(wm), key=str):
                    g, w = gm[k], wm[k]
                    exact = Fraction(w["busy_ppm_sum"], w["device_steps"] * 10 ** 6)
                    if not close_to(g.get("busy_ratio"), exact):
                        p.append("%s compute %s busy_ratio: got %r, expected %s"
                                 % (team, k[1], g.get("busy_ratio"), w["busy_ratio"]))
                    if g.get("device_steps") != w["device_steps"]:
                        p.append("%s compute %s device_steps: got %r, expected %d"
                                 % (team, k[1], g.get("device_steps"), w["device_steps"]))
            rows = inv.get("anomalies")
            if not isinstance(rows, list):
                p.append("%s: no anomalies array" % team)
            else:
                p += ["%s: %s" % (team, x) for x in anomaly_problems(e["anomalies"], rows, step)]
        return p

    @staticmethod
    def summary_problems(exp, doc):
        p = []
        if doc.get("period") != exp["period"]:
            p.append("period %r" % doc.get("period"))
        for what, keyf in (("models", lambda m: (m.get("cluster"), m.get("gpu_model"))),
                           ("devices", lambda m: (m.get("cluster"), m.get("uuid"),
                                                  m.get("gpu_i_id") or None))):
            got = {keyf(m): m for m in doc.get(what) or []}
            want = {keyf(m): m for m in exp["summary"][what]}
            fields = list(gc.SUMMARY_FIELDS)   # devices too: excess per device (specification: Arithmetic)
            for k in sorted(set(got) - set(want), key=str):
                p.append("unexpected %s %s" % (what[:-1], k))
            for k in sorted(want, key=str):
                if k not in got:
                    p.append("missing %s %s" % (what[:-1], k))
                    continue
                for f in fields:
                    if not same_dec(got[k].get(f), want[k][f]):
                        p.append("%s %s: got %r, expected %s" % (k[1:], f, got[k].get(f),
                                                                 want[k][f]))
                if got[k].get("reconciles") is not True:
                    p.append("%s %s: reconciles %r" % (what[:-1], k[1:], got[k].get("reconciles")))
        p += Sharing.device_identity_problems(doc)
        return p

    @staticmethod
    def device_identity_problems(doc):
        """Engine figures only (specification: Arithmetic): every device row of summary --format
        json adds up exactly: capacity + excess = memory_used +
        reserved_unused_billed + reserved + unattributed + idle (GB-h with 9
        decimals, each rounded once: compared in MiB.s-exact Fractions would
        need the MiB.s; the 9-decimal figures may differ by rounding, so the
        check allows 5e-9 per term)."""
        p = []
        for d in doc.get("devices") or []:
            q = {f: fr(d.get(f)) for f in gc.SUMMARY_FIELDS}
            if any(v is None for v in q.values()):
                p.append("device %s: fields %s" % (d.get("uuid"), q))
                continue
            lhs = q["capacity"] + q["excess"]
            rhs = q["memory_used"] + q["reserved_unused_billed"] + q["reserved"] + \
                q["unattributed"] + q["idle"]
            if abs(lhs - rhs) > Fraction(35, 10 ** 9):
                p.append("device %s/%s: capacity %s + excess %s != used %s + reserved_unused_billed "
                         "%s + reserved %s + unattributed %s + idle %s" % (
                             d.get("uuid"), d.get("gpu_i_id"), d.get("capacity"), d.get("excess"),
                             d.get("memory_used"), d.get("reserved_unused_billed"),
                             d.get("reserved"), d.get("unattributed"), d.get("idle")))
        return p

    @staticmethod
    def focus_problems(exp, text):
        p = []
        try:
            rows = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
        except Exception as e:
            return ["CSV does not parse: %s" % e]
        if not rows or rows[0] != FOCUS_COLUMNS:
            return ["header %s" % (rows[0] if rows else None)]
        data = price_ids(exp, [dict(zip(FOCUS_COLUMNS, r)) for r in rows[1:]])
        days_ci = {(c["team"], c["cluster"], c["gpu_model"], c["day"]): c
                   for c in exp["compute_days"]}
        period_ci = {(team, c["cluster"], c["gpu_model"]): c
                     for team, inv in exp["invoices"].items() for c in inv["compute_indicator"]}
        want = {}
        for team, inv in exp["invoices"].items():
            for l in inv["lines"]:
                for d in l["days"]:
                    want[(team, l["cluster"], l["gpu_model"], l["kind"], l["price_id"],
                          d["day"])] = (l, d)
        got = {}
        for ri, d in enumerate(data, start=2):
            k = (d["SubAccountId"], d["x_Cluster"], d["x_GpuModel"], d["x_ChargeKind"],
                 d["SkuPriceId"], d["ChargePeriodStart"][:10])
            if k in got:
                p.append("duplicate row %s" % (k,))
            got[k] = d
        for k in sorted(set(want) - set(got)):
            p.append("missing row %s" % (k,))
        for k in sorted(set(got) - set(want)):
            p.append("unexpected row %s (%s GB-h)" % (k, got[k]["PricingQuantity"]))
        for k in sorted(set(want) & set(got)):
            l, dd = want[k]
            d = got[k]
            if not same_dec(d["ConsumedQuantity"], dd["gb_hours"]) or (
                    d["PricingUnit"] == "GB-Hours" and d["PricingQuantity"] != d["ConsumedQuantity"]):
                p.append("%s Consumed/PricingQuantity %s/%s, expected %s" % (
                    k, d["ConsumedQuantity"], d["PricingQuantity"], dd["gb_hours"]))
            if not same_dec(d["BilledCost"], dd["billed_cost"]):
                p.append("%s BilledCost %s, expected %s" % (k, d["BilledCost"],
                                                           dd["billed_cost"]))
            if k[3] != "memory_used":
                continue
            est = d["x_Estimated"].strip().lower()
            if est not in ("true", "false") or (est == "true") != l["estimated"]:
                p.append("%s x_Estimated %r, expected %s" % (k, d["x_Estimated"],
                                                            str(l["estimated"]).lower()))
            ci = days_ci.get((k[0], k[1], k[2], k[5]))
            pci = period_ci.get(k[:3])
            got_ci = d["x_ComputeIndicator"]
            if ci is None:
                if got_ci != "":
                    p.append("%s x_ComputeIndicator %r, expected null (no busy data)"
                             % (k, got_ci))
                continue
            exact_day = Fraction(ci["busy_ppm_sum"], ci["device_steps"] * 10 ** 6)
            ok = got_ci != "" and close_to(got_ci, exact_day)
            if not ok and got_ci != "" and pci is not None:   # the period's value also fits
                ok = close_to(got_ci, Fraction(pci["busy_ppm_sum"],
                                               pci["device_steps"] * 10 ** 6))
            if not ok:
                p.append("%s x_ComputeIndicator %r, expected %s (the team's busy ratio on "
                         "that model that day)" % (k, got_ci, ci["busy_ratio"]))
            elif fr(got_ci) > 1:
                p.append("%s x_ComputeIndicator %r above 1" % (k, got_ci))
        return p

    @staticmethod
    def reconcile_problems(exp, doc, sdoc):
        """Engine figures only: per model, capacity = billed + idle + overhead
        - excess in the summary; the invoice lines add up to the same
        capacity (unbilled: plus the summary's idle and overhead); and the
        engine's line amounts add up, per model, to the model's amounts."""
        p = []
        policy = exp["config"]["policy"]
        eps = Fraction(1, 10 ** 6)
        lines = {}
        amounts = {}
        for inv in doc.get("invoices", []):
            for l in inv.get("lines", []):
                k = (l.get("cluster"), l.get("gpu_model"))
                lines[k] = lines.get(k, 0) + (fr(l.get("gb_hours")) or 0)
                try:
                    amounts[k] = amounts.get(k, 0) + gc.to_units(l.get("amount"),
                                                                exp["minor_units"])
                except Exception:
                    p.append("bad amount %r" % l.get("amount"))
        want_amounts = {}
        for inv in exp["invoices"].values():
            for l in inv["lines"]:
                k = (l["cluster"], l["gpu_model"])
                want_amounts[k] = want_amounts.get(k, 0) + gc.to_units(l["amount"],
                                                                       exp["minor_units"])
        for m in sdoc.get("models") or []:
            k = (m.get("cluster"), m.get("gpu_model"))
            q = {f: fr(m.get(f)) for f in gc.SUMMARY_FIELDS}
            if any(v is None for v in q.values()):
                p.append("%s: summary fields %s" % (k, {f: m.get(f) for f in gc.SUMMARY_FIELDS}))
                continue
            rhs = q["memory_used"] + q["reserved_unused_billed"] + q["reserved"] + \
                q["unattributed"] + q["idle"] - q["excess"]
            if abs(rhs - q["capacity"]) > eps:
                p.append("%s: capacity %s != used + reserved_unused_billed + reserved + "
                         "unattributed + idle - excess = %s" % (k[1], m.get("capacity"),
                                                                float(rhs)))
            billed = lines.get(k, 0)
            if policy == "unbilled":
                billed += q["idle"] + q["reserved"] + q["unattributed"]
            if abs(billed - (q["capacity"] + q["excess"])) > eps:
                p.append("%s: invoice lines%s %s GB-h != capacity + excess %s GB-h" % (
                    k[1], " + idle + overhead" if policy == "unbilled" else "",
                    float(billed), float(q["capacity"] + q["excess"])))
            if amounts.get(k, 0) != want_amounts.get(k, 0):
                p.append("%s: line amounts sum to %s, expected %s" % (
                    k[1], gc.units_to_str(amounts.get(k, 0), exp["minor_units"]),
                    gc.units_to_str(want_amounts.get(k, 0), exp["minor_units"])))
        models = {(m.get("cluster"), m.get("gpu_model")) for m in sdoc.get("models") or []}
        for k in sorted(set(lines) - models, key=str):
            p.append("invoice lines for %s but no summary row" % (k,))
        if policy == "unbilled":
            kinds = {l.get("kind") for inv in doc.get("invoices", []) for l in inv.get("lines", [])}
            if kinds & set(FLEET_KINDS):
                p.append("idle/overhead lines billed under policy unbilled")
        return p

    # ---- the issue's named checks, figures straight from the scenario
    def gpu(self, uuid, gi=""):
        for n, g, gaps in self.cl._gpus():
            if g["uuid"] == uuid and str((g.get("mig") or {}).get("id", "")) == gi:
                return n, g, gaps
        raise KeyError(uuid)

    def pod(self, key):
        return self.cl.pods[key]

    def team_of(self, p):
        """Team of a scenario pod by the scenario's own rules (pod label,
        namespace label, ^team-(.+)$, default)."""
        if p.get("labels", {}).get("team"):
            return p["labels"]["team"]
        ns = self.cl.namespaces.get(p["namespace"], {})
        if ns.get("labels", {}).get("team"):
            return ns["labels"]["team"]
        m = re.match(r"^team-(.+)$", p["namespace"])
        return m.group(1) if m else "unallocated"

    def mem_lines(self, name, model, teams):
        """{(team, price_id): MiB.s} of memory_used lines in a run's output."""
        doc = (self.out.get(name) or {}).get("doc")
        if doc is None:
            return None
        out = {}
        for inv in doc.get("invoices", []):
            if inv.get("team") not in teams:
                continue
            for l in inv.get("lines", []):
                if l.get("kind") == "memory_used" and l.get("gpu_model") == model:
                    k = (inv.get("team"), l.get("price_id"))
                    out[k] = out.get(k, 0) + int(l.get("mib_seconds") or 0)
        return out

    def estimated_flags(self, name, model, teams):
        doc = self.out[name]["doc"]
        return {(inv.get("team"), l.get("price_id")): l.get("estimated")
                for inv in doc.get("invoices", []) if inv.get("team") in teams
                for l in inv.get("lines", [])
                if l.get("kind") == "memory_used" and l.get("gpu_model") == model}

    def invoice(self, name, team):
        doc = (self.out.get(name) or {}).get("doc")
        return None if doc is None else invoices_by_team(doc).get(team)

    def skip_if_missing(self, title, *names):
        miss = [n or "device-even" for n in names if (self.out.get(n) or {}).get("doc") is None]
        if miss:
            self.tap.fail(title, "the engine run(s) %s produced no invoices" % miss)
            return True
        return False

    def named_checks(self):
        cl = self.cl
        step = cl.step
        w0, w1 = cl.win_from, cl.win_to
        steps = list(cl._steps(w0, w1))
        n_ts, g_ts, _ = self.gpu("GPU-a1000000-0000-4000-8000-000000000001")
        model_ts = g_ts["model"]
        occ_ts = cl._occupants(g_ts)
        usable_ts = g_ts["capacity_mib"] - g_ts["reserved_mib"]
        reps_ts = int(n_ts["labels"]["nvidia.com/gpu.replicas"])

        def split_direct(weights_of):
            out, whole_sum = {}, 0
            for t in steps:
                active, whole = cl._gpu_state(g_ts, occ_ts, t)
                act = sorted(active, key=lambda x: (x[0]["pod"]["namespace"], x[0]["pod"]["name"]))
                w = weights_of([o for o, _ in act], t)
                parts = gc.largest_remainder(whole * step, w)
                whole_sum += whole * step
                pid = cl.price_for(model_ts, t)["id"]
                for (o, _), q in zip(act, parts):
                    k = (self.team_of(o["pod"]), pid)
                    out[k] = out.get(k, 0) + q
            return out, whole_sum

        teams_ts = {self.team_of(o["pod"]) for o in occ_ts}

        def running(p, t):
            lo, hi, done = cl.pod_window(p)
            return lo <= t < hi and (done is None or t < done)

        # 1. device mode, even split
        title = ("sharing: three pods time-sliced on one GPU in device mode (virtual-GPU "
                 "copies) each pay a third, never 300%")
        if not self.skip_if_missing(title, None):
            want, whole_sum = split_direct(lambda pods, t: [1] * len(pods))
            got = self.mem_lines(None, model_ts, teams_ts)
            p = []
            if got != want:
                p.append("memory_used MiB.s per (team, price) %s, expected %s" % (got, want))
            if sum(got.values()) != whole_sum:
                p.append("the pods together pay %d MiB.s, the GPU's copies say %d (x%s)" % (
                    sum(got.values()), whole_sum,
                    round(sum(got.values()) / whole_sum, 3) if whole_sum else "-"))
            est = self.estimated_flags(None, model_ts, teams_ts)
            if not est or any(v is not True for v in est.values()):
                p.append("lines not marked estimated: %s" % est)
            self.tap.check(title, p)

        # 2. device mode, split by allocation share
        title = ("sharing: the same three pods with split \"allocation\" pay their allocation "
                 "share (2:1:1 replicas)")
        if not self.skip_if_missing(title, "device-allocation"):
            def alloc_w(pods, t):
                w = []
                for o in pods:
                    p = o["pod"]
                    u = p.get("requests", {}).get("nvidia.com/gpu", 0) if running(p, t) else 0
                    w.append(u * (usable_ts // reps_ts))
                return w if any(w) else [1] * len(pods)
            want, _ = split_direct(alloc_w)
            got = self.mem_lines("device-allocation", model_ts, teams_ts)
            self.tap.check(title, [] if got == want else [
                "memory_used MiB.s per (team, price) %s, expected %s" % (got, want)])

        # 3. process mode: each pays its own memory
        n_ps, g_ps, _ = self.gpu("GPU-a2000000-0000-4000-8000-000000000002")
        title = ("sharing: three pods time-sliced on one GPU in per-process mode each pay "
                 "their own memory")
        if not self.skip_if_missing(title, "process"):
            want = {}
            for o in cl._occupants(g_ps):
                for t in steps:
                    if o["from"] <= t < o["to"]:
                        k = (self.team_of(o["pod"]), cl.price_for(g_ps["model"], t)["id"])
                        want[k] = want.get(k, 0) + gc.value_at(
                            o["used"], (t - cl.start) // step) * step
            teams = {k[0] for k in want}
            got = self.mem_lines("process", g_ps["model"], teams)
            p = [] if got == want else ["memory_used MiB.s %s, expected %s" % (got, want)]
            est = self.estimated_flags("process", g_ps["model"], teams)
            if any(v is not False for v in est.values()):
                p.append("process-mode lines marked estimated: %s" % est)
            self.tap.check(title, p)

        # 4. completed pod with a lingering request
        title = ("sharing: a completed pod whose request series lingers gets no allocation "
                 "after it stops running")
        batch = self.pod("ts/batch-0")
        lo, hi, done = cl.pod_window(batch)
        if not self.skip_if_missing(title, None):
            p = []
            n_run = sum(1 for t in steps if running(batch, t))
            want_mib = n_run * (usable_ts // reps_ts) * step
            want_gpu = Fraction(n_run * step, reps_ts * 3600)
            inv = self.invoice(None, self.team_of(batch)) or {}
            a = [x for x in inv.get("allocated") or [] if x.get("gpu_model") == model_ts]
            if len(a) != 1:
                p.append("allocated block %s" % inv.get("allocated"))
            else:
                if a[0].get("mib_seconds") != str(want_mib):
                    p.append("allocated %s MiB.s, expected %d (%d running steps x %d MiB, none "
                             "after %s)" % (a[0].get("mib_seconds"), want_mib, n_run,
                                            usable_ts // reps_ts, gc.fmt_time(done)))
                if not close_to(a[0].get("gpu_hours"), want_gpu):
                    p.append("gpu_hours %r, expected %s" % (a[0].get("gpu_hours"),
                                                           float(want_gpu)))
            try:   # the request series really lingers in Prometheus
                t = done + 2 * 3600
                req = self.r.prom.query('kube_pod_container_resource_requests{pod="%s"}'
                                        % batch["name"], t)
                ph = self.r.prom.query('kube_pod_status_phase{pod="%s"}' % batch["name"], t)
                phases = {r["metric"].get("phase"): r["value"][1] for r in ph}
                if not req or phases != {"Running": "0", "Succeeded": "1"}:
                    p.append("at %s Prometheus has requests %s and phases %s (scenario error)"
                             % (gc.fmt_time(t), [r["value"][1] for r in req], phases))
            except Exception as e:
                p.append("query: %s" % e)
            self.tap.check(title, p)

        # 5. allocated GB-hours: replica of a replicas=4 node, MIG 1g.10gb slice, whole GPU
        title = ("sharing: allocated GB-hours: one replica of a replicas=4 node = usable/4, "
                 "a MIG 1g.10gb pod = the slice's usable memory, a whole-GPU pod = usable "
                 "capacity (GPU-hours 1/4, 1/7, 1)")
        if not self.skip_if_missing(title, None):
            p = []
            _, g_mig, _ = self.gpu("GPU-d1000000-0000-4000-8000-000000000020", "1")
            _, g_big, _ = self.gpu("GPU-c1000000-0000-4000-8000-000000000010")
            cases = [("ts/embed-0", model_ts, usable_ts // reps_ts, Fraction(1, reps_ts)),
                     ("mig/vec-0", g_mig["model"], g_mig["capacity_mib"] - g_mig["reserved_mib"],
                      Fraction(1, 7)),
                     ("research/big-0", g_big["model"],
                      g_big["capacity_mib"] - g_big["reserved_mib"], Fraction(1))]
            for key, model, per, frac in cases:
                pd = self.pod(key)
                n_run = sum(1 for t in steps if running(pd, t))
                inv = self.invoice(None, self.team_of(pd)) or {}
                a = [x for x in inv.get("allocated") or [] if x.get("gpu_model") == model]
                want = n_run * per * step
                if len(a) != 1 or a[0].get("mib_seconds") != str(want):
                    p.append("%s: allocated %s, expected %d MiB.s (%d MiB x %d steps)" % (
                        key, [(x.get("gpu_model"), x.get("mib_seconds")) for x in a], want,
                        per, n_run))
                elif not same_dec(a[0].get("gb_hours"), gc.round_half_even(
                        gc.mib_s_to_gbh(want), 9)):
                    p.append("%s: gb_hours %r" % (key, a[0].get("gb_hours")))
                else:   # micro-GPU-seconds, floored per step (interfaces.md)
                    us = n_run * (frac * step * 10 ** 6).__floor__()
                    if not close_to(a[0].get("gpu_hours"), Fraction(us, 3600 * 10 ** 6)):
                        p.append("%s: gpu_hours %r, expected %s (%d micro-GPU-s)" % (
                            key, a[0].get("gpu_hours"), gc.round_half_even(
                                Fraction(us, 3600 * 10 ** 6), 9), us))
            self.tap.check(title, p)

        # 6. basis used vs max
        title = ("sharing: basis used vs max on a pod that allocated a whole H100 and used "
                 "2 GiB (memory_used only vs + reserved_unused line; waste shown in both)")
        if not self.skip_if_missing(title, "process", "process-max"):
            p = []
            _, g_big, _ = self.gpu("GPU-c1000000-0000-4000-8000-000000000010")
            big = self.pod("research/big-0")
            team = self.team_of(big)
            used = sum(gc.value_at(o["used"], (t - cl.start) // step) * step
                       for o in cl._occupants(g_big) if o["pod"] is big
                       for t in steps if o["from"] <= t < o["to"])
            alloc = len(steps) * (g_big["capacity_mib"] - g_big["reserved_mib"]) * step
            pid = cl.price_for(g_big["model"], w0)["id"]
            for run, kinds in (("process", {"memory_used": used}),
                               ("process-max", {"memory_used": used,
                                                "reserved_unused": alloc - used})):
                inv = self.invoice(run, team) or {}
                got = {l.get("kind"): int(l.get("mib_seconds") or 0)
                       for l in inv.get("lines", []) if l.get("gpu_model") == g_big["model"]
                       and l.get("price_id") == pid and l.get("kind") in
                       ("memory_used", "reserved_unused")}
                if got != kinds:
                    p.append("%s: lines %s, expected %s" % (run, got, kinds))
                waste = [x.get("mib_seconds") for x in inv.get("waste") or []
                         if x.get("gpu_model") == g_big["model"]]
                if waste != [str(alloc - used)]:
                    p.append("%s: waste %s, expected [%d]" % (run, waste, alloc - used))
                e = self.exps[run]["invoices"].get(team, {})
                if inv.get("total") != e.get("total"):
                    p.append("%s: total %r, expected %r" % (run, inv.get("total"),
                                                            e.get("total")))
            self.tap.check(title, p)

        # 7. excess devices
        title = ("sharing: a pod that requested one GPU and holds memory on two: excess_devices "
                 "anomaly on the smaller device, billed as used")
        if not self.skip_if_missing(title, "process"):
            spill = self.pod("sim/spill-0")
            per_dev = {}
            for n, g, gaps in cl._gpus():
                for o in cl._occupants(g):
                    if o["pod"] is spill:
                        per_dev[g["uuid"]] = sum(
                            gc.value_at(o["used"], (t - cl.start) // step) * step
                            for t in steps if o["from"] <= t < o["to"])
            small = min(per_dev, key=lambda u: (per_dev[u], u))
            self.tap.check(title, self.anomaly_named("process", "excess_devices", spill,
                                                     {small: per_dev[small]}))

        # 8. unallocated use
        title = ("sharing: a pod using memory on a GPU of a node where it requested none: "
                 "unallocated_use anomaly, billed as used")
        if not self.skip_if_missing(title, "process"):
            sneak = self.pod("team-scratch/sneak-0")
            (n, g, o), = cl.occupancy("team-scratch/sneak-0")
            ts = [t for t in steps if o["from"] <= t < o["to"]]
            q = sum(gc.value_at(o["used"], (t - cl.start) // step) * step for t in ts)
            p = self.anomaly_named("process", "unallocated_use", sneak, {g["uuid"]: q},
                                   first=ts[0], last=ts[-1])
            got = self.mem_lines("process", g["model"], {self.team_of(sneak)})
            if sum((got or {}).values()) != q:
                p.append("team %s billed %s MiB.s, expected %d" % (self.team_of(sneak), got, q))
            self.tap.check(title, p)

        # 9. dcgm-exporter default mode with sharing
        title = ("sharing: dcgm-exporter default mode (no device series; the busy GPU's series "
                 "carry one pod's labels): device capacity, used and idle (= FB_FREE) right")
        n_t4, g_t4, gaps_t4 = self.gpu("GPU-e1000000-0000-4000-8000-000000000030")
        p = []
        occ = cl._occupants(g_t4)
        cap = len(steps) * g_t4["capacity_mib"] * step
        wsum = sum(cl._gpu_state(g_t4, occ, t)[1] * step for t in steps)
        free = cap - len(steps) * g_t4["reserved_mib"] * step - wsum
        for run in (None, "process"):
            sdoc = (self.out.get(run) or {}).get("summary")
            if sdoc is None:
                p.append("%s: no summary" % (run or "device-even"))
                continue
            dv = [d for d in sdoc.get("devices") or [] if d.get("uuid") == g_t4["uuid"]]
            if len(dv) != 1:
                p.append("%s: device rows %s" % (run or "device-even", dv))
                continue
            for f, q in (("capacity", cap), ("memory_used", wsum), ("idle", free),
                         ("unattributed", 0), ("excess", 0)):
                if not same_dec(dv[0].get(f), gc.round_half_even(gc.mib_s_to_gbh(q), 9)):
                    p.append("%s: %s %r, expected %s" % (run or "device-even", f, dv[0].get(f),
                                                         gc.round_half_even(gc.mib_s_to_gbh(q), 9)))
        self.tap.check(title, p)

        # 10. honorLabels false: exported mode never bills the exporter pod
        n_l4, g_l4, _ = self.gpu("GPU-f1000000-0000-4000-8000-000000000040")
        _, g_l4b, _ = self.gpu("GPU-f1000000-0000-4000-8000-000000000041")
        exporter = self.pod(n_l4["scrape"]["exporter_pod"])
        title = ("sharing: scrapes with honorLabels false, identity_labels \"exported\": the "
                 "exporter's own pod is never billed; its idle GPU's %d MiB are unattributed"
                 % g_l4b.get("idle_used_mib", 0))
        if not self.skip_if_missing(title, "exported"):
            p = []
            res = self.out["exported"]
            blob = json.dumps([res.get("doc"), res.get("anomalies")])
            if exporter["name"] in blob or exporter["name"] in (res.get("csv") or ""):
                p.append("the exporter pod %s appears in invoices, anomalies or FOCUS"
                         % exporter["name"])
            if self.team_of(exporter) in invoices_by_team(res["doc"]):
                p.append("team %r (the exporter's) has an invoice" % self.team_of(exporter))
            dv = [d for d in (res.get("summary") or {}).get("devices") or []
                  if d.get("uuid") == g_l4b["uuid"]]
            want = gc.round_half_even(gc.mib_s_to_gbh(
                len(steps) * g_l4b["idle_used_mib"] * step), 9)
            if len(dv) != 1 or not same_dec(dv[0].get("unattributed"), want) or \
                    not same_dec(dv[0].get("memory_used"), "0"):
                p.append("idle L4 device row %s, expected unattributed %s and memory_used 0"
                         % (dv, want))
            det = self.pod("vision/det-0")
            (n, g, o), = cl.occupancy("vision/det-0")
            q = sum(gc.value_at(o["used"], (t - cl.start) // step) * step for t in steps)
            got = self.mem_lines("exported", g["model"], {self.team_of(det)})
            if sum((got or {}).values()) != q:
                p.append("%s billed %s, expected %d MiB.s (exported_pod labels)"
                         % (det["name"], got, q))
            self.tap.check(title, p)
        title = ("sharing: the same scrape under identity_labels \"auto\" bills the exporter "
                 "pod for its idle GPU (unallocated_use): why mode \"exported\" exists")
        if not self.skip_if_missing(title, "process"):
            q = len(steps) * g_l4b["idle_used_mib"] * step
            p = self.anomaly_named("process", "unallocated_use", exporter, {g_l4b["uuid"]: q})
            self.tap.check(title, p)

        # 11. compute indicator on a device shared by three pods
        title = ("sharing: compute indicator on a GPU shared by three pods stays <= 1.0 and "
                 "equals the device's time-weighted busy ratio over each team's steps "
                 "(counted once per step); GPU_UTIL fallback where profiling is off")
        if not self.skip_if_missing(title, None):
            p = []
            cases = []
            for team in sorted(teams_ts):
                ts = [t for t in steps if any(o["from"] <= t < o["to"] and
                                              self.team_of(o["pod"]) == team for o in occ_ts)]
                cases.append((team, g_ts, ts, False))
            occ4 = cl._occupants(g_t4)
            ts = [t for t in steps if cl._gpu_state(g_t4, occ4, t)[0]]
            cases.append((self.team_of(occ4[0]["pod"]), g_t4, ts, True))
            for team, g, ts, util in cases:
                exact = Fraction(cl.direct_busy(g["uuid"], "", ts, util), len(ts) * 10 ** 6)
                inv = self.invoice(None, team) or {}
                ci = [x for x in inv.get("compute_indicator") or []
                      if x.get("gpu_model") == g["model"]]
                if len(ci) != 1:
                    p.append("%s: compute_indicator %s" % (team, inv.get("compute_indicator")))
                    continue
                if not close_to(ci[0].get("busy_ratio"), exact) or fr(ci[0].get("busy_ratio")) > 1:
                    p.append("%s: busy_ratio %r, expected %s (mean over %d device steps)"
                             % (team, ci[0].get("busy_ratio"), gc.round_half_even(exact, 6),
                                len(ts)))
                if ci[0].get("device_steps") != len(ts):
                    p.append("%s: device_steps %r, expected %d" % (team, ci[0].get(
                        "device_steps"), len(ts)))
            self.tap.check(title, p)

        # 12b. a process source over virtual-GPU copies (Arithmetic: capacity = device used +
        # FREE + RESERVED, device used = the pods' sum in process mode without a device series)
        title = ("sharing: attribution \"process\" over virtual-GPU copies (a misdeclared "
                 "source): with no device series, device used is the sum of the pods' copies, "
                 "so capacity = that sum + FB_FREE + FB_RESERVED (specification: Arithmetic), idle stays FB_FREE, "
                 "no excess, and collect warns that the pods look like device copies")
        if (self.out.get("process") or {}).get("summary") is None:
            self.tap.fail(title, "the process run produced no summary")
        else:
            cap = free = 0
            for t in steps:
                active, whole = cl._gpu_state(g_ts, occ_ts, t)
                f = g_ts["capacity_mib"] - g_ts["reserved_mib"] - whole
                # one pair per pod (its vgpu slots merge by max), each a copy of W
                cap += (max(1, len(active)) * whole + f + g_ts["reserved_mib"]) * step
                free += f * step
            dv = [d for d in self.out["process"]["summary"].get("devices") or []
                  if d.get("uuid") == g_ts["uuid"]]
            p = []
            for f, q in (("capacity", cap), ("idle", free), ("excess", 0)):
                want = gc.round_half_even(gc.mib_s_to_gbh(q), 9)
                if len(dv) != 1 or not same_dec(dv[0].get(f), want):
                    p.append("%s %r, expected %s" % (f, dv[0].get(f) if dv else None, want))
            warn = "every pod on device %s" % g_ts["uuid"]
            if warn not in (self.out["process"].get("collect_err") or ""):
                p.append("collect printed no device-copies warning for %s" % g_ts["uuid"])
            self.tap.check(title, p)

        # 12. idle = FB_FREE under basis used (specification: Arithmetic), where the attribution fits the data
        title = ("sharing: under basis used the summary's idle equals the generator's FB_FREE "
                 "per model, in every run (process over virtual-GPU copies too; specification: Arithmetic)")
        p = []
        for run, exp in self.exps.items():
            if exp["config"]["basis"] != "used" or (self.out.get(run) or {}).get("summary") is None:
                continue
            got = {m.get("gpu_model"): m for m in self.out[run]["summary"].get("models") or []}
            for m in exp["summary"]["models"]:
                g = got.get(m["gpu_model"], {})
                if not same_dec(g.get("idle"), m["fb_free"]):
                    p.append("%s %s: idle %r, FB_FREE %s" % (run or "device-even", m["gpu_model"],
                                                             g.get("idle"), m["fb_free"]))
        self.tap.check(title, p)

    def anomaly_named(self, run, kind, pod, want_dev, first=None, last=None):
        """The run's `anomalies` output lists exactly want_dev {uuid: MiB.s}
        of this kind for the pod, and its invoice carries the same."""
        p = []
        res = self.out.get(run) or {}
        if res.get("anomalies") is None:
            return ["%s: no anomalies output" % run]
        rows = [a for a in res["anomalies"].get("anomalies") or []
                if a.get("kind") == kind and a.get("pod") == pod["name"]
                and a.get("namespace") == pod["namespace"]]
        got = {}
        for a in rows:
            dev = (a.get("device") or "").split("/")[0]
            got[dev] = got.get(dev, 0) + int(a.get("mib_seconds") or 0)
        if got != want_dev:
            p.append("%s anomalies of %s/%s: %s MiB.s per device, expected %s" % (
                kind, pod["namespace"], pod["name"], got, want_dev))
        for a in rows:
            if a.get("team") != self.team_of(pod) or a.get("node") != pod["node"]:
                p.append("team/node %r/%r, expected %r/%r" % (a.get("team"), a.get("node"),
                                                              self.team_of(pod), pod["node"]))
            if first is not None and a.get("first_seen") != gc.fmt_time(first):
                p.append("first_seen %r, expected %s" % (a.get("first_seen"), gc.fmt_time(first)))
            if last is not None and a.get("last_seen") not in (
                    gc.fmt_time(last), gc.fmt_time(last + self.cl.step)):
                p.append("last_seen %r, expected %s" % (a.get("last_seen"), gc.fmt_time(last)))
        inv = self.invoice(run, self.team_of(pod)) or {}
        on_inv = [a for a in inv.get("anomalies") or [] if a.get("kind") == kind
                  and a.get("pod") == pod["name"]]
        if sorted(json.dumps(a, sort_keys=True) for a in on_inv) != \
                sorted(json.dumps(a, sort_keys=True) for a in rows):
            p.append("the team's invoice lists %s" % on_inv)
        return p


def anomaly_problems(want, got, step):
    if not isinstance(got, list):
        return ["no anomalies array"]

    def key(a):
        return (a.get("kind"), a.get("cluster"), a.get("namespace"), a.get("pod"),
                a.get("team"), a.get("node"), a.get("device"))
    p = []
    gm, wm = {}, {key(a): a for a in want}
    for a in got:
        if key(a) in gm:
            p.append("anomaly listed twice: %s" % (key(a),))
        gm[key(a)] = a
    for k in sorted(set(gm) - set(wm), key=str):
        p.append("unexpected anomaly %s (%s MiB.s)" % (k, gm[k].get("mib_seconds")))
    for k in sorted(set(wm) - set(gm), key=str):
        p.append("missing anomaly %s (%s MiB.s)" % (k, wm[k]["mib_seconds"]))
    for k in sorted(set(wm) & set(gm), key=str):
        g, w = gm[k], wm[k]
        for f in ("gpu_model", "first_seen", "mib_seconds", "gb_hours"):
            if g.get(f) != w[f]:
                p.append("%s %s: got %r, expected %r" % (k[0:4:3], f, g.get(f), w[f]))
        last = gc.parse_time(w["last_seen"])
        if g.get("last_seen") not in (w["last_seen"], gc.fmt_time(last + step)):
            p.append("%s last_seen: got %r, expected %s (last step) or %s (its end)" % (
                k[0:4:3], g.get("last_seen"), w["last_seen"], gc.fmt_time(last + step)))
    return p


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--scenario", default=os.path.join(HERE, "scenarios", "shared.json"))
    ap.add_argument("--sharing", default=os.path.join(HERE, "scenarios", "sharing.json"),
                    help="the sharing-aware scenario, served by the same "
                    "Prometheus; \"none\" skips it")
    ap.add_argument("--extra", default="",
                    help="comma-separated DRA / HAMi / fleet scenarios (default: "
                    "scenarios/dra.json, hami.json, fleet.json), served by the same "
                    "Prometheus; \"none\" skips them")
    return harness.run_driver(Run, ap.parse_args(), harness.Tap(), "integration run",
                              "gpuledger-it-", fresh=False)


if __name__ == "__main__":
    sys.exit(main())
