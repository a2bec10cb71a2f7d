#!/usr/bin/env python3
"""focus_check.py - FOCUS conformance of a CSV, from the FinOps Foundation's
own rule data.

Library: check(csv_text, metadata=None, version="1.2") -> Result (failures:
MUST rules a row or the dataset breaks; warnings: SHOULD/RECOMMENDED
rules). CLI:

    python3 tests/integration/focus_check.py FILE.csv [--metadata FILE.json]
        [--version 1.2|1.3] [--model tests/fixtures/focus/model-1.2.json]

prints one line per failed rule and exits 1 when a MUST rule fails.

The rules are tests/fixtures/focus/model-1.2.json (the FOCUS validator's
rule data) and the column table tests/fixtures/focus/columns-1.2.csv
(their source and licenses: tests/fixtures/focus/README.md). The walk starts
at CostAndUsage-D-000-M; a rule applies when every ApplicabilityCriteria
entry is one of gpuledger's declared capabilities (CAPABILITIES, written
down in docs/focus.md), its conditions are inherited by the rules it
references, and its keyword limits theirs (a child of a SHOULD rule is at
most a warning, of a MAY rule not checked). Column rules of a column the
dataset does not have are checked by the dataset's presence rules only.
Static rules are applied as written; Dynamic rules (no machine-readable
requirement in the data) are applied where this file implements the
attribute they state (date-time, numeric, key-value, currency formats,
column naming). Cross-column arithmetic uses exact decimals. Known quirks
of the rule data (FOCUS.md) are corrected: a `CheckCondition` key where
`ColumnName` belongs, Tags-C-003-C's condition "Tags is null" (the text
says "not null").

Version 1.3 (gpuledger's --focus-version 1.3): the 1.2 rules apply where
their columns exist (ProviderName/PublisherName rules move to
ServiceProviderName/HostProviderName), plus the 1.3 columns' own
requirements from the FOCUS_Spec column pages (check_13).
"""

import argparse
import csv
import io
import json
import os
import re
import sys
from decimal import Decimal, InvalidOperation

RULES = os.environ.get("GPULEDGER_FOCUS_DIR") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "focus")
MODEL = os.path.join(RULES, "model-1.2.json")
COLUMNS = os.path.join(RULES, "columns-1.2.csv")
CURRENCIES = os.path.join(RULES, "currency_codes.csv")

# gpuledger's capabilities as a FOCUS data generator (docs/focus.md).
CAPABILITIES = {
    "ACCOUNT_NAMING_SUPPORTED",          # billing.account_name
    "SUB_ACCOUNT_SUPPORTED",             # teams are sub accounts
    "UNIT_PRICING_SUPPORTED",            # the price table prices units
    "PUBLIC_PRICE_LIST_SUPPORTED",       # the price table is the published list
    "USAGE_MEASUREMENT_SUPPORTED",       # GB-hours measured
    "BILLING_BASED_ON_PROVISIONED_RESOURCES_SUPPORTED",  # GPUs (ResourceId)
    "RESOURCE_TYPE_ASSIGNMENT_SUPPORTED",  # ResourceType GPU
    "REGION_SUPPORTED",                  # clusters as regions
    "TAGGING_SUPPORTED",                 # Tags
}
# Not supported: availability zones, capacity reservations, commitment
# discounts, several pricing categories / account types, negotiated
# pricing, pricing currency differences, virtual currency.

STRONG = {"MUST": 3, "MUST NOT": 3, "SHOULD": 2, "SHOULD NOT": 2, "RECOMMENDED": 2, "MAY": 1}

DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
NUMERIC = re.compile(r"^-?(\d+(\.\d+)?|\.\d+)([eE]-?\d+)?$")
UNIT = re.compile(r"^[A-Za-z][A-Za-z0-9]*(-[A-Za-z][A-Za-z0-9]*)*(/[A-Za-z][A-Za-z0-9]*)?$")
PASCAL = re.compile(r"^[A-Z][A-Za-z0-9]*$")


class Result:
    def __init__(self):
        self.failures = []  # (rule id, text, detail)
        self.warnings = []
        self.applied = 0

    def add(self, level, rid, text, detail):
        (self.failures if level >= 3 else self.warnings).append((rid, text, detail))

    @property
    def ok(self):
        return not self.failures


def load_currencies():
    codes = set()
    with open(CURRENCIES, newline="") as f:
        for row in csv.reader(f):
            for cell in row:
                if re.fullmatch(r"[A-Z]{3}", cell.strip()):
                    codes.add(cell.strip())
    return codes


def load_columns():
    with open(COLUMNS, newline="") as f:
        return {r["ColumnId"]: r for r in csv.DictReader(f)}


def is_decimal(v):
    return bool(NUMERIC.match(v))


def dec(v):
    try:
        return Decimal(v)
    except InvalidOperation:
        return None


def key_value_ok(v):
    try:
        o = json.loads(v, object_pairs_hook=lambda pairs: pairs)
    except ValueError:
        return False
    if not isinstance(o, list):
        return False
    keys = [k for k, _ in o]
    if len(keys) != len(set(keys)):
        return False
    return all(not isinstance(x, (list, dict)) for _, x in o)


class Dataset:
    def __init__(self, text):
        rows = list(csv.reader(io.StringIO(text, newline="")))
        self.header = rows[0] if rows else []
        self.rows = [dict(zip(self.header, r)) for r in rows[1:]]
        self.widths = [len(r) for r in rows[1:]]
        self.currencies = load_currencies()

    def has(self, col):
        return col in self.header

    def val(self, row, col):
        """None for null (an empty field or a column not in the dataset)."""
        v = row.get(col)
        return v if v not in (None, "") else None


def column_of(fn):
    return fn.get("ColumnName") or fn.get("CheckCondition")


def row_check(ds, fn, row):
    """True/False for one row, None when fn is not a row check."""
    f = fn.get("CheckFunction")
    if f == "AND":
        return all(row_check(ds, x, row) is not False for x in fn["Items"])
    if f == "OR":
        return any(row_check(ds, x, row) is not False for x in fn["Items"])
    col = column_of(fn)
    v = ds.val(row, col) if col else None
    if f == "CheckValue":
        return v == fn["Value"] if fn["Value"] is not None else v is None
    if f == "CheckNotValue":
        return v != fn["Value"] if fn["Value"] is not None else v is not None
    if f in ("TypeString", "FormatString"):
        return v is None or (v.isascii() and v.strip() != "")
    if f in ("TypeDecimal", "FormatNumeric", "CheckDecimalValue"):
        return v is None or is_decimal(v)
    if f in ("TypeDateTime", "FormatDateTime"):
        return v is None or bool(DATETIME.match(v))
    if f == "FormatUnit":
        return v is None or bool(UNIT.match(v))
    if f == "FormatKeyValue":
        return v is None or key_value_ok(v)
    if f in ("FormatCurrency", "CheckNationalCurrency"):
        return v is None or v in ds.currencies
    if f == "CheckGreaterOrEqualThanValue":
        return v is None or (is_decimal(v) and dec(v) >= Decimal(str(fn["Value"])))
    if f == "CheckSameValue":
        return ds.val(row, fn["ColumnAName"]) == ds.val(row, fn["ColumnBName"])
    if f == "CheckNotSameValue":
        return ds.val(row, fn["ColumnAName"]) != ds.val(row, fn["ColumnBName"])
    if f == "ColumnByColumnEqualsColumnValue":
        a, b, r = (ds.val(row, fn[k]) for k in ("ColumnAName", "ColumnBName", "ResultColumnName"))
        if a is None or b is None or r is None:
            return True
        if not (is_decimal(a) and is_decimal(b) and is_decimal(r)):
            return False
        return dec(a) * dec(b) == dec(r)  # exact: Python Decimal, no float
    return None


def columns_in(fn):
    out = set()
    if isinstance(fn, dict):
        for k, v in fn.items():
            if k in ("ColumnName", "CheckCondition", "ColumnAName", "ColumnBName",
                     "ResultColumnName") and isinstance(v, str):
                out.add(v)
            else:
                out |= columns_in(v)
    elif isinstance(fn, list):
        for x in fn:
            out |= columns_in(x)
    return out


class Checker:
    def __init__(self, ds, model, result, renamed=None):
        self.ds, self.model, self.res = ds, model, result
        self.rules = model["ModelRules"]
        self.renamed = renamed or {}
        self.seen = set()

    def fix(self, rid, vc):
        cond = vc.get("Condition") or {}
        if rid == "Tags-C-003-C":
            cond = {"CheckFunction": "CheckNotValue", "ColumnName": "Tags", "Value": None}
        return cond

    def applicable(self, rule):
        return all(a in CAPABILITIES for a in rule.get("ApplicabilityCriteria", []))

    def walk(self, rid, conds=(), level=3):
        rule = self.rules.get(rid)
        if rule is None or not self.applicable(rule):
            return
        vc = rule["ValidationCriteria"]
        level = min(level, STRONG.get(vc["Keyword"], 1))
        if level <= 1:
            return  # MAY: nothing to check
        ref = self.renamed.get(rule.get("Reference"), rule.get("Reference"))
        if rule["EntityType"] == "Column" and ref and not self.ds.has(ref):
            return  # presence is the dataset rules' business
        cond = self.fix(rid, vc)
        if cond:
            conds = conds + (cond,)
        req = vc.get("Requirement") or {}
        if rule["Function"] == "Composite" or req.get("CheckFunction") in ("AND", "OR") and any(
                x.get("CheckFunction") == "CheckModelRule" for x in req.get("Items", [])):
            for item in req.get("Items", []):
                if item.get("CheckFunction") == "CheckModelRule":
                    self.walk(item["ModelRuleId"], conds, level)
            return
        key = (rid, conds and json.dumps(conds, sort_keys=True))
        if key in self.seen:
            return
        self.seen.add(key)
        self.apply(rid, vc, req, conds, level)

    def apply(self, rid, vc, req, conds, level):
        ds = self.ds
        f = req.get("CheckFunction")
        if not f:
            return  # Dynamic without data: see dynamic()
        req = self.rename(req)
        conds = tuple(self.rename(c) for c in conds)
        self.res.applied += 1
        if f == "ColumnPresent":
            if not ds.has(req["ColumnName"]):
                self.res.add(level, rid, vc["MustSatisfy"], "column %s missing" % req["ColumnName"])
            return
        if f == "CheckDistinctCount":
            parents = {}
            for row in ds.rows:
                if all(row_check(ds, c, row) is not False for c in conds):
                    a = ds.val(row, req["ColumnAName"])
                    if a is not None:
                        parents.setdefault(a, set()).add(ds.val(row, req["ColumnBName"]))
            bad = [a for a, b in parents.items() if len(b) != req["ExpectedCount"]]
            if bad:
                self.res.add(level, rid, vc["MustSatisfy"], "%s %r has %d %s values" % (
                    req["ColumnAName"], bad[0], len(parents[bad[0]]), req["ColumnBName"]))
            return
        for col in columns_in(req):
            if not ds.has(col) and f not in ("CheckValue", "CheckNotValue"):
                return
        for i, row in enumerate(ds.rows):
            if not all(row_check(ds, c, row) is not False for c in conds):
                continue
            ok = row_check(ds, req, row)
            if ok is False:
                cols = sorted(columns_in(req))
                shown = ", ".join("%s=%r" % (c, row.get(c)) for c in cols)
                self.res.add(level, rid, vc["MustSatisfy"], "row %d: %s" % (i + 2, shown))
                return

    def rename(self, fn):
        if not self.renamed:
            return fn
        s = json.dumps(fn)
        for old, new in self.renamed.items():
            s = s.replace('"%s"' % old, '"%s"' % new)
        return json.loads(s)


def dynamic(ds, columns, res):
    """The attribute rules the data leaves Dynamic, applied to every column."""
    ids = set(columns)
    focus = [c for c in ds.header if not c.startswith("x_")]
    custom = [c for c in ds.header if c.startswith("x_")]
    for i, w in enumerate(ds.widths):
        if w != len(ds.header):
            res.add(3, "CSV", "every row has the header's fields", "row %d: %d fields" % (i + 2, w))
            break
    for c in focus:
        if c not in ids and c not in COLUMNS_13:
            res.add(3, "ColumnHandling-A-010-M", "custom columns are prefixed x_",
                    "column %s is neither FOCUS nor x_" % c)
        if not PASCAL.match(c):
            res.add(3, "ColumnHandling-A-001-M", "Column IDs MUST use Pascal case", c)
    if custom and ds.header.index(custom[0]) < len(focus):
        res.add(2, "ColumnHandling-A-013-O", "custom columns after all FOCUS columns", custom[0])
    for c in ds.header:
        meta = columns.get(c) or COLUMNS_13.get(c)
        if not meta:
            continue
        typ = meta["DataType"]
        nulls = meta["AllowsNulls"] == "True"
        for i, row in enumerate(ds.rows):
            v = ds.val(row, c)
            where = "row %d: %s=%r" % (i + 2, c, row.get(c))
            if v is None:
                if not nulls and meta["FeatureLevel"] == "Mandatory":
                    res.add(3, "NullHandling", "%s does not allow nulls" % c, where)
                    break
                continue
            if row.get(c) == '""' or v.strip() == "":
                res.add(3, "NullHandling-A-002-M", "no empty strings for null", where)
                break
            if typ == "Decimal" and not is_decimal(v):
                res.add(3, "NumericFormat-A-003-M", "%s is a decimal" % c, where)
                break
            if typ == "Date/Time" and not DATETIME.match(v):
                res.add(3, "DateTimeFormat-A-003-M", "%s is YYYY-MM-DDTHH:mm:ssZ" % c, where)
                break
            if typ == "JSON" and not key_value_ok(v):
                res.add(3, "KeyValueFormat-A-001-M", "%s is a flat JSON object" % c, where)
                break
            if typ == "String" and not v.isascii():
                res.add(3, "StringHandling-A-001-M", "%s is a valid (ASCII) string" % c, where)
                break


# 1.3 columns gpuledger may write, from the FOCUS_Spec column pages.
COLUMNS_13 = {
    "AllocatedMethodDetails": {"DataType": "JSONObject", "AllowsNulls": "True",
                               "FeatureLevel": "Recommended"},
    "AllocatedMethodId": {"DataType": "String", "AllowsNulls": "True",
                          "FeatureLevel": "Conditional"},
    "AllocatedResourceId": {"DataType": "String", "AllowsNulls": "True",
                            "FeatureLevel": "Conditional"},
    "AllocatedResourceName": {"DataType": "String", "AllowsNulls": "True",
                              "FeatureLevel": "Conditional"},
    "AllocatedTags": {"DataType": "JSON", "AllowsNulls": "True", "FeatureLevel": "Conditional"},
    "ServiceProviderName": {"DataType": "String", "AllowsNulls": "False",
                            "FeatureLevel": "Mandatory"},
    "HostProviderName": {"DataType": "String", "AllowsNulls": "False",
                         "FeatureLevel": "Mandatory"},
}


def check_13(ds, res):
    """The 1.3 columns' own requirements (FOCUS_Spec columns/*.md)."""
    for c in ("ServiceProviderName", "HostProviderName", "AllocatedMethodId",
              "AllocatedResourceId", "AllocatedResourceName", "AllocatedMethodDetails",
              "AllocatedTags"):
        if not ds.has(c):
            res.add(3, "1.3:%s" % c, "%s MUST be present" % c, "column missing")
    for c in ("ProviderName", "PublisherName"):
        if ds.has(c):
            res.add(2, "1.3:%s" % c, "%s is deprecated in 1.3" % c, "column present")
    origin = {}
    for i, row in enumerate(ds.rows):
        where = "row %d" % (i + 2)
        mid = ds.val(row, "AllocatedMethodId")
        for c in ("ServiceProviderName", "HostProviderName"):
            if ds.val(row, c) is None:
                res.add(3, "1.3:%s" % c, "%s MUST NOT be null" % c, where)
        if mid is None:
            for c in ("AllocatedResourceId", "AllocatedResourceName", "AllocatedMethodDetails",
                      "AllocatedTags"):
                if ds.val(row, c) is not None:
                    res.add(3, "1.3:%s" % c, "%s MUST be null when the charge is not a split" % c,
                            where)
            continue
        if ds.val(row, "AllocatedResourceId") is None:
            res.add(3, "1.3:AllocatedResourceId", "MUST NOT be null on an allocated charge", where)
        md = ds.val(row, "AllocatedMethodDetails")
        if md is None:
            res.add(2, "1.3:AllocatedMethodDetails", "SHOULD NOT be null on a split", where)
            continue
        try:
            o = json.loads(md, parse_float=Decimal, parse_int=Decimal)
            els = o["Elements"]
            assert isinstance(els, list) and els
            ratio = sum(e["AllocatedRatio"] for e in els)
            for e in els:
                if "UsageQuantity" in e and "UsageUnit" not in e:
                    raise ValueError("UsageQuantity without UsageUnit")
        except (ValueError, KeyError, TypeError, AssertionError) as e:
            res.add(3, "1.3:AllocatedMethodDetails", "AllocatedMethodDetailsObject", "%s: %s" % (
                where, e))
            continue
        at = ds.val(row, "AllocatedTags")
        if at is not None:
            tags = json.loads(ds.val(row, "Tags") or "{}")
            if set(json.loads(at)) & set(tags):
                res.add(3, "1.3:AllocatedTags", "MUST NOT repeat Tags", where)
        if ds.val(row, "ChargeClass") is None:
            key = tuple(ds.val(row, c) for c in ("AllocatedMethodId", "ResourceId", "SkuPriceId",
                                                  "x_ChargeKind", "ChargePeriodStart"))
            origin[key] = origin.get(key, Decimal(0)) + ratio
    for key, total in origin.items():
        if total != 1:
            res.add(3, "1.3:AllocatedMethodDetails",
                    "the AllocatedRatio of one origin charge's splits sum to 1",
                    "%r sums to %s" % (key, total))


def check_metadata(meta, ds, res):
    """FOCUS 1.2 metadata (specification/metadata): a schema reference, the
    schema object with SchemaId, CreationDate, FocusVersion, ColumnDefinition
    (ColumnName, DataType for every column), ProviderTagPrefixes on Tags."""
    schema = meta.get("Schema")
    if not isinstance(schema, dict):
        res.add(3, "Metadata:Schema", "the schema metadata object", "missing")
        return
    for k in ("SchemaId", "FocusVersion", "CreationDate", "ColumnDefinition"):
        if k not in schema:
            res.add(3, "Metadata:%s" % k, "schema property %s" % k, "missing")
    if meta.get("SchemaId") != schema.get("SchemaId"):
        res.add(3, "Metadata:Reference", "the data references its schema", "SchemaId %r vs %r" % (
            meta.get("SchemaId"), schema.get("SchemaId")))
    if not DATETIME.match(str(schema.get("CreationDate", ""))):
        res.add(3, "Metadata:CreationDate", "CreationDate is a date-time", schema.get(
            "CreationDate"))
    defs = schema.get("ColumnDefinition") or []
    names = [d.get("ColumnName") for d in defs]
    if names != ds.header:
        res.add(3, "Metadata:ColumnDefinition", "one definition per column, in order",
                "%s vs %s" % (names[:5], ds.header[:5]))
    for d in defs:
        if not isinstance(d.get("DataType"), str) or not d["DataType"]:
            res.add(3, "Metadata:DataType", "DataType MUST NOT be null", d.get("ColumnName"))
        if d.get("ColumnName") == "Tags":
            prefixes = d.get("ProviderTagPrefixes")
            if not isinstance(prefixes, list) or not prefixes:
                res.add(3, "Metadata:ProviderTagPrefixes", "Tags lists ProviderTagPrefixes",
                        "missing")
                continue
            for i, row in enumerate(ds.rows):
                t = ds.val(row, "Tags")
                for k in (json.loads(t) if t else {}):
                    if not any(k.startswith(p) for p in prefixes):
                        res.add(3, "Tags-C-012-M", "provider-defined tag keys are prefixed",
                                "row %d: key %r" % (i + 2, k))
                        break


def check(text, metadata=None, version="1.2"):
    with open(MODEL) as f:
        model = json.load(f)
    ds = Dataset(text)
    res = Result()
    renamed = {}
    if version == "1.3":
        renamed = {"ProviderName": "ServiceProviderName", "PublisherName": "HostProviderName"}
    Checker(ds, model, res, renamed).walk("CostAndUsage-D-000-M")
    dynamic(ds, load_columns(), res)
    if version == "1.3":
        check_13(ds, res)
    if metadata is not None:
        check_metadata(metadata, ds, res)
        if metadata.get("FocusVersion") != version:
            res.add(3, "Metadata:FocusVersion", "the metadata names the version",
                    metadata.get("FocusVersion"))
    return res


# ---------------------------------------------------------------- drivers

def read_export(csv_path):
    """(CSV text, metadata object or None) of an `export --out` file."""
    with open(csv_path, newline="") as f:
        text = f.read()
    meta = None
    if os.path.exists(csv_path + ".metadata.json"):
        with open(csv_path + ".metadata.json") as f:
            meta = json.load(f)
    return text, meta


def tap_result(tap, scenario, path, version, res, min_rules=150):
    """One `ok` line for a conforming file; otherwise one `not ok` per
    failure, naming the scenario, the file, the rule id and (for row rules)
    the row. Returns True on a pass."""
    name = "FOCUS %s conformance: %s %s" % (version, scenario, os.path.basename(path))
    fails = list(res.failures)
    if res.applied < min_rules:
        fails.append(("RuleCount", "the rule walk reached the model's rules",
                      "only %d rules applied" % res.applied))
    for rid, text, detail in fails:
        tap.fail("%s rule %s" % (name, rid), "%s (%s)" % (text, detail))
    if not fails:
        tap.ok("%s: zero MUST failures (%d rules, %d warnings)" % (name, res.applied,
                                                                 len(res.warnings)))
    return not fails


def check_file(tap, scenario, csv_path, version, closed_version=None, want_metadata=True,
               min_rules=150):
    """Checks an exported CSV (and FILE.metadata.json) as FOCUS `version`,
    or as closed_version when the month was closed with that one (a closed
    month keeps the CSV it was closed with). Returns the CSV text."""
    text, meta = read_export(csv_path)
    v = closed_version or version
    res = check(text, meta, v)
    if want_metadata and meta is None:
        res.add(3, "Metadata", "export --out writes FILE.metadata.json", "missing")
    tap_result(tap, scenario, csv_path, v, res, min_rules)
    return text


def export_and_check(tap, eng, cfg, db, period, out_base, scenario, versions=("1.2", "1.3"),
                     closed_version=None):
    """`export --period P --out OUT_BASE-focus-V.csv --focus-version V` for
    each V, each CSV and its metadata checked. Returns {V: CSV text or None}."""
    out = {}
    for v in versions:
        path = "%s-focus-%s.csv" % (out_base, v)
        for f in (path, path + ".metadata.json"):
            if os.path.exists(f):
                os.unlink(f)
        rc, _, err = eng.run(cfg, db, "export", "--period", period, "--out", path,
                             "--focus-version", v)
        if rc != 0 or not os.path.isfile(path):
            tap.fail("FOCUS %s conformance: %s %s" % (v, scenario, os.path.basename(path)),
                     "export exit %s: %s" % (rc, " ".join((err or "").split())[-300:]))
            out[v] = None
            continue
        out[v] = check_file(tap, scenario, path, v, closed_version)
    return out


PROPORTIONAL = "gpuledger/idle-overhead-proportional"


def split_groups(text):
    """The proportional split rows of a 1.3 CSV by origin charge (cluster,
    GPU model, kind, SkuPriceId, day): [(row number, row)]. Correction rows
    are differences, not splits of an origin charge, and stay out."""
    groups = {}
    for i, r in enumerate(csv.DictReader(io.StringIO(text, newline="")), start=2):
        if r.get("AllocatedMethodId") == PROPORTIONAL and not r.get("ChargeClass"):
            key = (r["x_Cluster"], r["x_GpuModel"], r["x_ChargeKind"], r["SkuPriceId"],
                   r["ChargePeriodStart"][:10])
            groups.setdefault(key, []).append((i, r))
    return groups


def split_problems(text, origins, minor_units):
    """Split rows against the charges they split. origins: {(cluster, model,
    kind, SkuPriceId): {"days": {day: GB-hours text}, "amount": text}} from
    an independent model (the generator's fleet lines). Per origin day the
    rows' ConsumedQuantity add up to the origin's GB-hours and their ratios
    to exactly 1; per origin line the rows' BilledCost add up to its amount.
    Each row is rounded on its own (GB-hours half-even to 9 decimals,
    amounts to the minor unit per team line), so a sum of n rows may differ
    from the rounded origin by at most (n + 1) half units, never more."""
    p = []
    groups = split_groups(text)
    half_q = Decimal("0.5e-9")
    half_m = Decimal(1).scaleb(-minor_units) / 2
    seen_days = set()
    money = {}
    for key, rows in sorted(groups.items()):
        okey, day = key[:4], key[4]
        seen_days.add(key)
        o = origins.get(okey)
        q = sum(Decimal(r["ConsumedQuantity"]) for _, r in rows)
        ratio = Decimal(0)
        for i, r in rows:
            try:
                els = json.loads(r["AllocatedMethodDetails"], parse_float=Decimal,
                                 parse_int=Decimal)["Elements"]
                ratio += sum(e["AllocatedRatio"] for e in els)
            except (ValueError, KeyError, TypeError) as e:
                p.append("row %d: AllocatedMethodDetails %r: %s" % (
                    i, r.get("AllocatedMethodDetails"), e))
        if ratio != 1:
            p.append("%s: AllocatedRatio of rows %s sum to %s, not 1" % (
                key, [i for i, _ in rows], ratio))
        m = money.setdefault(okey, [Decimal(0), set()])
        m[0] += sum(Decimal(r["BilledCost"]) for _, r in rows)
        m[1] |= {r["SubAccountId"] for _, r in rows}
        if o is None:
            p.append("%s: split rows %s but no such origin charge" % (key, [i for i, _ in rows]))
            continue
        want = Decimal(o["days"].get(day, "0"))
        if abs(q - want) > (len(rows) + 1) * half_q:
            p.append("%s: split rows %s hold %s GB-h, the origin charge %s" % (
                key, [i for i, _ in rows], q, want))
    for okey, o in sorted(origins.items()):
        for day, gbh in sorted(o["days"].items()):
            if Decimal(gbh) != 0 and okey + (day,) not in seen_days:
                p.append("%s %s: origin charge of %s GB-h has no split rows" % (okey, day, gbh))
        got, teams = money.get(okey, (Decimal(0), set()))
        want = Decimal(o["amount"])
        if abs(got - want) > (len(teams) + 1) * half_m:
            p.append("%s: split rows bill %s, the origin charge %s" % (okey, got, want))
    return p, sum(len(r) for r in groups.values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--metadata")
    ap.add_argument("--version", default="1.2", choices=("1.2", "1.3"))
    a = ap.parse_args()
    with open(a.csv, newline="") as f:
        text = f.read()
    meta = None
    if a.metadata:
        with open(a.metadata) as f:
            meta = json.load(f)
    res = check(text, meta, a.version)
    for rid, text, detail in res.failures:
        print("FAIL %s: %s (%s)" % (rid, text, detail))
    for rid, text, detail in res.warnings:
        print("warn %s: %s (%s)" % (rid, text, detail))
    print("%d rules applied, %d failures, %d warnings" % (res.applied, len(res.failures),
                                                          len(res.warnings)))
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
