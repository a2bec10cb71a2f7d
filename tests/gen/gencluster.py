#!/usr/bin/env python3
"""gencluster.py - synthetic Kubernetes GPU cluster for gpuledger tests.

Usage:  python3 tests/gen/gencluster.py SCENARIO.json OUTDIR

Writes into OUTDIR:
  data.om        OpenMetrics text (dcgm-exporter + kube-state-metrics shapes of
                 ../../../shared/METRICS.md), one sample per series per step,
                 families grouped, each series in time order, final "# EOF".
                 Load it with `promtool tsdb create-blocks-from openmetrics`.
  config.json    gpuledger config (docs/interfaces.md); prometheus.url is the
                 placeholder "http://127.0.0.1:PORT" for the caller to rewrite.
  prices.csv     price table (SPEC section 9).
  expected.json  figures computed here, never by the engine (see below).

Only the Python 3 standard library is used; all money and quantity arithmetic
is exact (int / fractions.Fraction), rounded half-even once where SPEC says.

The module can also be imported (tests/integration/run.py does):
  load_scenario(path) -> Cluster;  Cluster.expected(t_from, t_to, exclude)
  Cluster.samples_at(t) -> {(family, labels...): value}

SCENARIO FORMAT (JSON; times are RFC 3339 UTC "YYYY-MM-DDTHH:MM:SSZ")
----------------------------------------------------------------------
{
  "name": "shared",
  "start": "2026-10-03T11:00:00Z",   first sample instant, a whole UTC hour
  "end":   "2026-10-05T13:00:00Z",   data stops before this instant
  "window": {"from": T, "to": T},    the window expected.json describes
                                     (whole hours, [from, to)); default start..end
  "step_seconds": 60,                sample interval (divides 3600), default 60
  "period": "2026-10",               billing month (default: month of window.from)
  "driver_version": "550.54.15",
  "cluster": {"name": "gpu-prod-eu",   config cluster.name (default "default")
              "label": "cluster",      config cluster.label (default "cluster")
              "emit": true},           put label=name on every series (default false)
  "namespaces": [                     kube_namespace_labels, one series per label set
    {"name": "team-a",
     "labels": {"team": "ml-research", "costCenter": "cc-1042"},   Kubernetes keys;
     "changes": [{"at": T, "labels": {...}}]}       written label_<snake_case>;
  ],                                  a change replaces the whole set from T on
                                      (the old series ends at T - step)
  "pods": [                           kube-state-metrics pods
    {"namespace": "team-a", "name": "train-0", "uid": "...", "container": "trainer",
     "node": "gpu-node-1",
     "from": T, "to": T,              lifetime (default start..end): the pod's
                                      kube_pod_status_phase{phase="Running"} 1,
                                      kube_pod_container_resource_requests and
                                      kube_pod_labels series exist in [from, to)
     "labels": {"team": "vision"}, "changes": [...],   as for namespaces
     "requests": {"nvidia.com/gpu": 1}}               resource names as in
  ],                                  Kubernetes; written sanitized (nvidia_com_gpu)
  "nodes": [
    {"name": "gpu-node-1",
     "labels": {"nvidia.com/gpu.product": "...", ...},   kube_node_labels
     "hostname_label": "Hostname",    or "hostname" (newest dcgm-exporter)
     "scrape": {"mode": "honor"}      pod labels as exported (default), or
               {"mode": "exported", "exporter_pod": "gpu-operator/nvidia-dcgm-exporter-x7k2p",
                "exporter_container": "nvidia-dcgm-exporter"}
                                      honorLabels: false: workload labels become
                                      exported_container/exported_namespace/
                                      exported_pod and every series of the node
                                      carries container/namespace/pod of the
                                      exporter pod itself (so under
                                      identity_labels "auto" an unoccupied
                                      device would bill the exporter pod: the
                                      self-check rejects such a scenario; keep
                                      these devices occupied or set
                                      config.collection.identity_labels
                                      "exported");
     "empty_pod_labels": false,       true: series without a workload print
                                      container="",namespace="",pod="" (old exporters)
     "gaps": [{"from": T, "to": T}],  scrape gaps: no dcgm sample of this node in [from, to)
     "gpus": [
       {"gpu": 0, "uuid": "GPU-...", "pci_bus_id": "00000000:07:00.0",
        "device": "nvidia0" (default "nvidia<gpu>"), "model": "NVIDIA A100-SXM4-80GB",
        "mig": {"profile": "1g.6gb", "id": 3},        optional: MIG instance
        "capacity_mib": 81920, "reserved_mib": 615,   USED+FREE+RESERVED, RESERVED
        "mode": "exclusive" | "process",
            exclusive: dcgm-exporter default mode, at most one occupant at a
              time; USED/FREE/RESERVED form one series per occupant carrying
              its labels; with no occupant one series without workload labels
              (USED = idle_used_mib).
            process: per-process mode (4.8+): a device series without
              workload labels (USED = sum of occupants + unattributed_mib,
              FREE, RESERVED) plus one FB_USED series per occupant and vgpu
              slot (same value in every slot).
        "idle_used_mib": 0, "unattributed_mib": 0,
        "occupants": [
          {"pod": "team-a/train-0", "from": T, "to": T (default start..end),
           "container": "..." (default: the pod's container),
           "used_mib": 40000 or {"base": B, "swing": S, "period": P, "phase": F},
              value at step index k (k = 0 at "start"):
              B + (S * |2x - P|) // P  with  x = (k + F) mod P   (integers)
           "vgpu": ["5", "19"],       process mode: one FB_USED series per slot
           "pod_uid": true}           add pod_uid (default: true in process mode)
        ]}
     ]}
  ],
  "teams": {"rules": [...], "default": "unallocated", "catalogue": [...]},
                                      copied into config.json (interfaces.md)
  "prices": [{"model_pattern": "^NVIDIA A30$", "unit": "GPU-Hours", "price": "1.10",
              "currency": "USD", "valid_from": T, "valid_to": T or "",
              "capacity_gb": "24" or ""}],     prices.csv rows in this order
  "billing": {"currency": "USD", ...},          config billing section
  "config": {...}                      deep-merged over the generated config.json
}

EXPECTED.JSON (what the engine must produce for window [from, to))
----------------------------------------------------------------------
Computed by a small reference attribution that follows SPEC sections 3 and 9
in process attribution mode on the very samples written to data.om, and
cross-checked against the scenario's occupants:
- per step t and device (cluster, UUID, GPU_I_ID): FB_USED series with a
  workload identity (exported_* when present, else pod/namespace; empty = absent)
  are pod values; duplicates of one (device, pod) merge by max; series without
  identity are device totals, never billed; a missing sample counts zero;
- a pod's value x step MiB.s go to memory_used of its team at t: rules of
  config teams.rules in order, evaluated on kube_pod_labels /
  kube_namespace_labels present at t (the series that appeared later wins);
- idle/overhead per device and step (SPEC 9): overhead = reserved +
  max(0, device used - sum of pods), idle = max(0, capacity - overhead - sum
  of pods); device used = the series without identity, else the sum of pods;
  capacity = the largest USED+FREE+RESERVED of one label set of the device;
  steps with no dcgm sample for a device (scrape gap) add nothing;
- prices: first row in file order matching modelName (regex search) with
  valid_from <= t < valid_to; GPU-Hours -> price / capacity_gb (column, else
  the largest measured capacity MiB*1048576/1e9 of a non-MIG device of that
  model in the window), half-even to 12 decimals;
- line = (team, cluster, model, kind, price id); gb_hours = MiB.s * 1048576 /
  3.6e12, 9 decimals half-even; amount = MiB.s * 1048576 * unit price / 3.6e12
  half-even to the currency's minor unit; total = sum of amounts;
- per line and UTC day with usage: mib_seconds, gb_hours, and billed_cost =
  the amount split in minor units by largest remainder in proportion to the
  day's MiB.s (ties: earlier day first).
- fleet summary per (cluster, model) and per device, GB-hours (9 decimals,
  half-even, of the MiB.s sums): capacity, memory_used, reserved,
  unattributed, idle, excess (capacity - reserved - unattributed - used when
  negative), reserved_unused_billed (0: basis used).
Layout: {"period", "window", "currency", "minor_units", "step_seconds",
 "teams": {team: {"invoice_id", "team_name", "cost_center", "total",
                  "lines": [LINE]}},
 "fleet": [LINE with kind idle_share / overhead_share],
 "summary": {"models": [{"cluster", "gpu_model", FIELDS}],
             "devices": [{"cluster", "uuid", "gpu_i_id", "gpu_i_profile",
                          "gpu_model", "node", FIELDS}]},
 "prices": {price_id: {...}}, "pod_totals": {...}}
LINE = {"cluster", "gpu_model", "kind", "price_id", "price_valid_from",
 "price_valid_to", "unit_price", "pricing_unit", "mib_seconds", "gb_hours",
 "amount", "estimated", "days": [{"day", "mib_seconds", "gb_hours",
 "billed_cost"}]}; lines ordered by cluster, gpu_model, kind, price_valid_from.
"""

import calendar
import copy
import csv
import io
import json
import os
import re
import sys
import time
from fractions import Fraction

MINOR_UNITS = {"USD": 2, "EUR": 2, "GBP": 2, "CHF": 2, "JPY": 0, "KRW": 0,
               "KWD": 3, "BHD": 3}
PLACEHOLDER_URL = "http://127.0.0.1:PORT"
DCGM_FAMILIES = [
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB)."),
]
KSM_FAMILIES = [
    ("kube_pod_container_resource_requests",
     "The number of requested request resource by a container."),
    ("kube_pod_status_phase", "The pods current phase."),
    ("kube_pod_labels", "Kubernetes labels converted to Prometheus labels."),
    ("kube_namespace_labels", "Kubernetes labels converted to Prometheus labels."),
    ("kube_node_labels", "Kubernetes labels converted to Prometheus labels."),
]
USED, FREE, RESERVED = (f[0] for f in DCGM_FAMILIES)
SUMMARY_FIELDS = ("capacity", "memory_used", "reserved_unused_billed", "reserved",
                  "unattributed", "idle", "excess")


class ScenarioError(Exception):
    pass


# ---------------------------------------------------------------- helpers

_TIME_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$")


def parse_time(s):
    m = _TIME_RE.match(s or "")
    if not m:
        raise ScenarioError("bad time %r (want YYYY-MM-DDTHH:MM:SSZ)" % (s,))
    return calendar.timegm(tuple(int(g) for g in m.groups()) + (0, 0, 0))


def fmt_time(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def fmt_day(ts):
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def month_bounds(period):
    y, m = (int(x) for x in period.split("-"))
    start = calendar.timegm((y, m, 1, 0, 0, 0, 0, 0, 0))
    y2, m2 = (y + 1, 1) if m == 12 else (y, m + 1)
    return start, calendar.timegm((y2, m2, 1, 0, 0, 0, 0, 0, 0))


def round_half_even(x, places):
    """Fraction -> decimal string with exactly `places` decimals, half-even."""
    x = Fraction(x)
    scaled = x * (10 ** places)
    q = scaled.numerator // scaled.denominator  # floor
    rem = scaled - q
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and q % 2 == 1):
        q += 1
    return units_to_str(q, places)


def units_to_str(q, places):
    sign = "-" if q < 0 else ""
    q = abs(q)
    if places == 0:
        return sign + str(q)
    s = str(q).rjust(places + 1, "0")
    return sign + s[:-places] + "." + s[-places:]


def to_units(s, places):
    """Decimal string with <= places decimals -> integer minor units."""
    f = Fraction(s) * (10 ** places)
    if f.denominator != 1:
        raise ValueError("%s has more than %d decimals" % (s, places))
    return f.numerator


def mib_s_to_gbh(mib_s):
    return Fraction(mib_s * 1048576, 3600 * 10 ** 9)


def largest_remainder(total_units, weights):
    """Split integer total_units in proportion to weights (list of ints >= 0,
    sum > 0); ties go to the earlier index. Returns list of ints."""
    wsum = sum(weights)
    quotas = [Fraction(total_units * w, wsum) for w in weights]
    floors = [q.numerator // q.denominator for q in quotas]
    left = total_units - sum(floors)
    order = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return floors


def ksm_label_name(key):
    """kube-state-metrics: label_ + sanitized snake_case of a Kubernetes key."""
    if key.startswith("label_"):
        return key
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower()
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", s)


def ksm_resource_name(res):
    return re.sub(r"[^a-zA-Z0-9_]", "_", res)


def value_at(spec, k):
    if isinstance(spec, bool):
        raise ScenarioError("used_mib must be an integer or an object")
    if isinstance(spec, int):
        return spec
    base = int(spec["base"])
    swing = int(spec.get("swing", 0))
    period = int(spec.get("period", 60))
    phase = int(spec.get("phase", 0))
    if period <= 0:
        raise ScenarioError("used_mib.period must be > 0")
    x = (k + phase) % period
    return base + (swing * abs(2 * x - period)) // period


def fmt_value(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v == int(v):
            return str(int(v))
        return repr(v)
    return str(v)


def esc(v):
    return str(v).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def deep_merge(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            deep_merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)
    return dst


def expand_team(template, m):
    def rep(mm):
        g = int(mm.group(1) or mm.group(2))
        return m.group(g) or ""
    return re.sub(r"\$(?:\{(\d+)\}|(\d+))", rep, template)


# ---------------------------------------------------------------- model

class Cluster:
    """A scenario turned into samples and into expected figures."""

    def __init__(self, scn, scenario_dir="."):
        self.scn = scn
        self.dir = scenario_dir
        self.name = scn.get("name", "scenario")
        self.step = int(scn.get("step_seconds", 60))
        if self.step <= 0 or 3600 % self.step:
            raise ScenarioError("step_seconds must divide 3600")
        self.start = parse_time(scn["start"])
        self.end = parse_time(scn["end"])
        if self.start % 3600:
            raise ScenarioError("start must be a whole UTC hour")
        if self.end <= self.start:
            raise ScenarioError("end must be after start")
        w = scn.get("window", {})
        self.win_from = parse_time(w["from"]) if "from" in w else self.start
        self.win_to = parse_time(w["to"]) if "to" in w else self.end
        if self.win_from % 3600 or self.win_to % 3600:
            raise ScenarioError("window must be on whole hours")
        self.period = scn.get("period") or time.strftime("%Y-%m", time.gmtime(self.win_from))
        cl = scn.get("cluster", {})
        self.cluster_name = cl.get("name", "default")
        self.cluster_label = cl.get("label", "cluster")
        self.cluster_emit = bool(cl.get("emit", False))
        self.driver = scn.get("driver_version", "550.54.15")
        self.config = self._make_config()
        self.identity_mode = self.config.get("collection", {}).get("identity_labels", "auto")
        att = self.config.get("memory_source", {}).get("attribution", "process")
        if att != "process":
            raise ScenarioError("expected figures support attribution 'process' only")
        self.currency = self.config["billing"]["currency"]
        if self.currency not in MINOR_UNITS:
            raise ScenarioError("unknown currency %s" % self.currency)
        self.minor = MINOR_UNITS[self.currency]
        self.teams_cfg = self.config.get("teams", {})
        self.prices = self._load_prices()
        self.pods = {}
        for p in scn.get("pods", []):
            key = p["namespace"] + "/" + p["name"]
            if key in self.pods:
                raise ScenarioError("pod %s listed twice" % key)
            self.pods[key] = p
        self.namespaces = {n["name"]: n for n in scn.get("namespaces", [])}
        # series store: family -> {labels tuple: {t: value}} (insertion ordered)
        self.series = {f: {} for f, _ in DCGM_FAMILIES + KSM_FAMILIES}
        self._build()

    # ---- config and prices
    def _make_config(self):
        scn = self.scn
        cfg = {
            "prometheus": {"url": PLACEHOLDER_URL, "timeout_seconds": 30, "retries": 3},
            "cluster": {"name": scn.get("cluster", {}).get("name", "default"),
                        "label": scn.get("cluster", {}).get("label", "cluster")},
            "collection": {"step_seconds": int(scn.get("step_seconds", 60)),
                           "chunk_hours": 6, "identity_labels": "auto",
                           "hostname_label": "Hostname"},
            "memory_source": {"query": "fb_used", "unit": "MiB", "attribution": "process"},
            "teams": copy.deepcopy(scn.get("teams", {
                "rules": [{"pod_label": "team"}, {"namespace_label": "team"},
                          {"namespace_regex": "^team-(.+)$", "team": "$1"}],
                "default": "unallocated", "catalogue": []})),
            "prices": {"file": "prices.csv"},
            "billing": copy.deepcopy(scn.get("billing", {"currency": "USD"})),
        }
        deep_merge(cfg, scn.get("config", {}))
        return cfg

    def _load_prices(self):
        rows = []
        for i, r in enumerate(self.scn.get("prices", [])):
            line = i + 2
            unit = r["unit"]
            if unit not in ("GB-Hours", "GPU-Hours"):
                raise ScenarioError("price row %d: bad unit %r" % (line, unit))
            vf = parse_time(r["valid_from"])
            vt = parse_time(r["valid_to"]) if r.get("valid_to") else None
            if vf % 3600 or (vt is not None and vt % 3600):
                raise ScenarioError("price row %d: validity not on whole hours" % line)
            rows.append({
                "id": "prices.csv:%d" % line, "line": line,
                "pattern": r["model_pattern"], "re": re.compile(r["model_pattern"]),
                "unit": unit, "price": r["price"], "currency": r.get("currency", "USD"),
                "valid_from": vf, "valid_to": vt,
                "valid_from_s": r["valid_from"], "valid_to_s": r.get("valid_to") or None,
                "capacity_gb": r.get("capacity_gb") or "",
            })
        return rows

    def price_for(self, model, t):
        for p in self.prices:
            if p["re"].search(model) and p["valid_from"] <= t and \
                    (p["valid_to"] is None or t < p["valid_to"]):
                return p
        return None

    def prices_csv(self):
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["model_pattern", "unit", "price", "currency", "valid_from",
                    "valid_to", "capacity_gb"])
        for r in self.scn.get("prices", []):
            w.writerow([r["model_pattern"], r["unit"], r["price"], r.get("currency", "USD"),
                        r["valid_from"], r.get("valid_to") or "", r.get("capacity_gb") or ""])
        return buf.getvalue()

    # ---- label periods (namespace / pod labels with changes)
    def _label_periods(self, obj, lo, hi):
        """[(from, to, labels)] covering [lo, hi)."""
        cur = dict(obj.get("labels", {}))
        out = []
        t0 = lo
        for ch in sorted(obj.get("changes", []), key=lambda c: parse_time(c["at"])):
            at = parse_time(ch["at"])
            if at % self.step:
                raise ScenarioError("label change %s not on a step instant" % ch["at"])
            if at > t0:
                out.append((t0, min(at, hi), cur))
            cur = dict(ch["labels"])
            t0 = max(t0, at)
        if t0 < hi:
            out.append((t0, hi, cur))
        return out

    def _steps(self, lo, hi):
        t = lo + ((-(lo - self.start)) % self.step)
        while t < hi:
            yield t
            t += self.step

    def _add(self, fam, labels, t, value):
        if self.cluster_emit:
            labels = labels + ((self.cluster_label, self.cluster_name),)
        self.series[fam].setdefault(tuple(labels), {})[t] = value

    # ---- build all samples
    def _build(self):
        start, end = self.start, self.end
        # kube_node_labels
        for n in self.scn.get("nodes", []):
            lab = (("node", n["name"]),) + tuple(
                (ksm_label_name(k), str(v)) for k, v in n.get("labels", {}).items())
            for t in self._steps(start, end):
                self._add("kube_node_labels", lab, t, 1)
        # kube_namespace_labels
        for ns in self.scn.get("namespaces", []):
            for lo, hi, labels in self._label_periods(ns, start, end):
                lab = (("namespace", ns["name"]),) + tuple(
                    (ksm_label_name(k), str(v)) for k, v in labels.items())
                for t in self._steps(lo, hi):
                    self._add("kube_namespace_labels", lab, t, 1)
        # pods
        for key, p in self.pods.items():
            lo = parse_time(p["from"]) if p.get("from") else start
            hi = parse_time(p["to"]) if p.get("to") else end
            ident = (("namespace", p["namespace"]), ("pod", p["name"]), ("uid", p["uid"]))
            for res, count in p.get("requests", {}).items():
                unit = "integer"
                if res == "cpu":
                    unit = "core"
                elif res == "memory":
                    unit = "byte"
                lab = ident + (("container", p["container"]), ("node", p["node"]),
                               ("resource", ksm_resource_name(res)), ("unit", unit))
                for t in self._steps(lo, hi):
                    self._add("kube_pod_container_resource_requests", lab, t, count)
            for t in self._steps(lo, hi):
                self._add("kube_pod_status_phase", ident + (("phase", "Running"),), t, 1)
            for plo, phi, labels in self._label_periods(p, lo, hi):
                lab = ident + tuple((ksm_label_name(k), str(v)) for k, v in labels.items())
                for t in self._steps(plo, phi):
                    self._add("kube_pod_labels", lab, t, 1)
        # dcgm-exporter
        for n in self.scn.get("nodes", []):
            self._build_node(n)

    def _occupants(self, gpu):
        occ = []
        for o in gpu.get("occupants", []):
            if o["pod"] not in self.pods:
                raise ScenarioError("occupant %s is not in pods" % o["pod"])
            p = self.pods[o["pod"]]
            occ.append({
                "pod": p, "from": parse_time(o["from"]) if o.get("from") else self.start,
                "to": parse_time(o["to"]) if o.get("to") else self.end,
                "container": o.get("container", p["container"]),
                "used": o["used_mib"], "vgpu": o.get("vgpu") or [None],
                "pod_uid": o.get("pod_uid", gpu.get("mode") == "process"),
            })
        return occ

    def _build_node(self, n):
        hn = n.get("hostname_label", "Hostname")
        scrape = n.get("scrape", {"mode": "honor"})
        exported = scrape.get("mode", "honor") == "exported"
        exporter = None
        if exported:
            ep = scrape["exporter_pod"]
            if ep not in self.pods:
                raise ScenarioError("exporter pod %s is not in pods" % ep)
            epod = self.pods[ep]
            exporter = (("container", scrape.get("exporter_container", epod["container"])),
                        ("namespace", epod["namespace"]), ("pod", epod["name"]))
        empty = bool(n.get("empty_pod_labels", False))
        gaps = [(parse_time(g["from"]), parse_time(g["to"])) for g in n.get("gaps", [])]

        def workload(o, slot):
            p = o["pod"]
            if exported:
                lab = (("exported_container", o["container"]),
                       ("exported_namespace", p["namespace"]),
                       ("exported_pod", p["name"]))
                lab += exporter
                if o["pod_uid"]:
                    lab += (("pod_uid", p["uid"]),)
            else:
                lab = (("container", o["container"]), ("namespace", p["namespace"]),
                       ("pod", p["name"]))
                if o["pod_uid"]:
                    lab += (("pod_uid", p["uid"]),)
            if slot is not None:
                lab += (("vgpu", str(slot)),)
            return lab

        if exported:
            no_workload = exporter
        elif empty:
            no_workload = (("container", ""), ("namespace", ""), ("pod", ""))
        else:
            no_workload = ()

        for g in n.get("gpus", []):
            base = (("gpu", str(g["gpu"])), ("UUID", g["uuid"]),
                    ("pci_bus_id", g["pci_bus_id"]),
                    ("device", g.get("device", "nvidia%d" % g["gpu"])),
                    ("modelName", g["model"]))
            if g.get("mig"):
                base += (("GPU_I_PROFILE", g["mig"]["profile"]),
                         ("GPU_I_ID", str(g["mig"]["id"])))
            base += ((hn, n["name"]), ("DCGM_FI_DRIVER_VERSION", self.driver))
            cap = int(g["capacity_mib"])
            res = int(g["reserved_mib"])
            mode = g.get("mode", "exclusive")
            if mode not in ("exclusive", "process"):
                raise ScenarioError("gpu %s: bad mode %r" % (g["uuid"], mode))
            occ = self._occupants(g)
            for t in self._steps(self.start, self.end):
                if any(lo <= t < hi for lo, hi in gaps):
                    continue
                k = (t - self.start) // self.step
                active = [o for o in occ if o["from"] <= t < o["to"]]
                if mode == "exclusive":
                    if len(active) > 1:
                        raise ScenarioError("gpu %s: two occupants at %s in exclusive mode"
                                            % (g["uuid"], fmt_time(t)))
                    if active:
                        o = active[0]
                        lab = base + workload(o, None)
                        used = value_at(o["used"], k)
                    else:
                        lab = base + no_workload
                        used = int(g.get("idle_used_mib", 0))
                    free = cap - res - used
                    if used < 0 or free < 0:
                        raise ScenarioError("gpu %s: used %d does not fit at %s"
                                            % (g["uuid"], used, fmt_time(t)))
                    self._add(USED, lab, t, used)
                    self._add(FREE, lab, t, free)
                    self._add(RESERVED, lab, t, res)
                else:
                    total = int(g.get("unattributed_mib", 0))
                    vals = []
                    for o in active:
                        v = value_at(o["used"], k)
                        total += v
                        vals.append((o, v))
                    free = cap - res - total
                    if free < 0:
                        raise ScenarioError("gpu %s: pods do not fit at %s"
                                            % (g["uuid"], fmt_time(t)))
                    lab = base + no_workload
                    self._add(USED, lab, t, total)
                    self._add(FREE, lab, t, free)
                    self._add(RESERVED, lab, t, res)
                    for o, v in vals:
                        for slot in o["vgpu"]:
                            self._add(USED, base + workload(o, slot), t, v)

    # ---- output
    def write_openmetrics(self, f):
        nlines = 0
        for fam, help_text in DCGM_FAMILIES + KSM_FAMILIES:
            f.write("# HELP %s %s\n# TYPE %s gauge\n" % (fam, help_text, fam))
            for labels, samples in self.series[fam].items():
                head = fam + "{" + ",".join('%s="%s"' % (k, esc(v)) for k, v in labels) + "}"
                for t in sorted(samples):
                    f.write("%s %s %d\n" % (head, fmt_value(samples[t]), t))
                    nlines += 1
        f.write("# EOF\n")
        return nlines

    def samples_at(self, t, families=None):
        """{(family,) + labels tuple: value} of every series with a sample at t."""
        out = {}
        for fam, ser in self.series.items():
            if families and fam not in families:
                continue
            for labels, samples in ser.items():
                if t in samples:
                    out[(fam,) + labels] = samples[t]
        return out

    # ---- reference attribution
    def _cluster_of(self, d):
        v = d.get(self.cluster_label, "")
        return v if v else self.cluster_name

    def identity(self, d):
        """(namespace, pod) of a dcgm series per SPEC 9, or None."""
        ens, epod = d.get("exported_namespace", ""), d.get("exported_pod", "")
        ns, pod = d.get("namespace", ""), d.get("pod", "")
        if self.identity_mode == "exported":
            return (ens, epod) if ens and epod else None
        if self.identity_mode == "plain":
            return (ns, pod) if ns and pod else None
        if ens and epod:
            return (ens, epod)
        if ns and pod:
            return (ns, pod)
        return None

    def _index(self):
        """Per-step views of the stored series (built lazily, once)."""
        if getattr(self, "_idx", None) is not None:
            return self._idx
        fb = {}
        for fam in (USED, FREE, RESERVED):
            for labels, samples in self.series[fam].items():
                d = dict(labels)
                for t, v in samples.items():
                    fb.setdefault(t, []).append((fam, labels, d, v))
        meta = {}
        for fam in ("kube_pod_labels", "kube_namespace_labels"):
            for labels, samples in self.series[fam].items():
                d = dict(labels)
                first = min(samples)
                for t in samples:
                    meta.setdefault((fam, t), []).append((first, d))
        self._idx = (fb, meta)
        return self._idx

    def _labels_at(self, meta, fam, t, match):
        best = None
        for first, d in meta.get((fam, t), []):
            if all(d.get(k, "") == v for k, v in match.items()):
                if best is None or first > best[0]:
                    best = (first, d)
        return best[1] if best else None

    def team_at(self, cluster, ns, pod, t):
        fb, meta = self._index()
        match_ns = {"namespace": ns}
        if self.cluster_emit:
            match_ns[self.cluster_label] = cluster
        pl = self._labels_at(meta, "kube_pod_labels", t, dict(match_ns, pod=pod))
        nl = self._labels_at(meta, "kube_namespace_labels", t, match_ns)
        for r in self.teams_cfg.get("rules", []):
            if "pod_label" in r:
                v = (pl or {}).get(ksm_label_name(r["pod_label"]), "")
                if v:
                    return v
            elif "namespace_label" in r:
                v = (nl or {}).get(ksm_label_name(r["namespace_label"]), "")
                if v:
                    return v
            elif "namespace_regex" in r:
                m = re.search(r["namespace_regex"], ns)
                if m:
                    return expand_team(r.get("team", "$1"), m)
        return self.teams_cfg.get("default", "unallocated")

    def attribute(self, t_from, t_to, exclude=()):
        """Integrate [t_from, t_to). exclude: set of (uuid, gpu_i_id, ns, pod, t)
        whose FB_USED samples are treated as missing.
        Returns (mem, fleet, pod_totals, capacities):
          mem[(team, cluster, model, price_id)][day] = MiB.s
          fleet[(kind, cluster, model, price_id)][day] = MiB.s"""
        fb, _ = self._index()
        exclude = set(exclude)
        mem, fleet, pods, caps = {}, {}, {}, {}
        # fleet summary sums (MiB.s) per (cluster, model) and per device
        self.last_stats = stats = {"models": {}, "devices": {}}
        for t in self._steps(t_from, t_to):
            day = t - t % 86400
            devs = {}
            for fam, labels, d, v in fb.get(t, []):
                key = (self._cluster_of(d), d["UUID"], d.get("GPU_I_ID", ""))
                dev = devs.setdefault(key, {"model": d.get("modelName", "unknown"),
                                            "mig": "GPU_I_ID" in d, "pods": {},
                                            "profile": d.get("GPU_I_PROFILE", ""),
                                            "node": d.get("Hostname", d.get("hostname", "")),
                                            "devused": None, "bylabels": {},
                                            "free": 0, "res": 0})
                idn = self.identity(d)
                rest = tuple(kv for kv in labels)
                dev["bylabels"].setdefault(rest, {})[fam] = v
                if fam == USED:
                    if idn is None:
                        dev["devused"] = v if dev["devused"] is None else max(dev["devused"], v)
                    else:
                        if (d["UUID"], d.get("GPU_I_ID", ""), idn[0], idn[1], t) in exclude:
                            continue
                        dev["pods"][idn] = max(dev["pods"].get(idn, v), v)
                elif fam == FREE:
                    dev["free"] = max(dev["free"], v)
                else:
                    dev["res"] = max(dev["res"], v)
            for (cluster, uuid, gi), dev in devs.items():
                model = dev["model"]
                cap = None
                for fams in dev["bylabels"].values():
                    if len(fams) == 3:
                        c = fams[USED] + fams[FREE] + fams[RESERVED]
                        cap = c if cap is None else max(cap, c)
                if not dev["mig"] and cap is not None:
                    caps[model] = max(caps.get(model, 0), cap)
                price = self.price_for(model, t)
                pid = price["id"] if price else None
                spods = 0
                for (ns, pod), v in dev["pods"].items():
                    spods += v
                    if v == 0:
                        continue
                    team = self.team_at(cluster, ns, pod, t)
                    if pid is None:
                        raise ScenarioError("no price for model %r at %s" % (model, fmt_time(t)))
                    k = (team, cluster, model, pid)
                    mem.setdefault(k, {})
                    mem[k][day] = mem[k].get(day, 0) + v * self.step
                    pk = (cluster, ns, pod)
                    pods[pk] = pods.get(pk, 0) + v * self.step
                mk = (cluster, model)
                dk = (cluster, uuid, gi, dev["profile"], model, dev["node"])
                for sk in ((stats["models"], mk), (stats["devices"], dk)):
                    row = sk[0].setdefault(sk[1], dict.fromkeys(SUMMARY_FIELDS, 0))
                    row["memory_used"] += spods * self.step
                if cap is None:
                    continue  # no complete device sample: capacity unknown
                devused = dev["devused"] if dev["devused"] is not None else spods
                unattributed = max(0, devused - spods)
                overhead = dev["res"] + unattributed
                idle = max(0, cap - overhead - spods)
                excess = max(0, overhead + spods - cap)
                for sk in ((stats["models"], mk), (stats["devices"], dk)):
                    row = sk[0][sk[1]]
                    for f, q in (("capacity", cap), ("reserved", dev["res"]),
                                 ("unattributed", unattributed), ("idle", idle),
                                 ("excess", excess)):
                        row[f] += q * self.step
                for kind, q in (("idle_share", idle), ("overhead_share", overhead)):
                    if q == 0:
                        continue
                    if pid is None:
                        raise ScenarioError("no price for model %r at %s" % (model, fmt_time(t)))
                    k = (kind, cluster, model, pid)
                    fleet.setdefault(k, {})
                    fleet[k][day] = fleet[k].get(day, 0) + q * self.step
        return mem, fleet, pods, caps

    def unit_price(self, price, caps):
        """(Fraction unit price per GB-hour, printed string, capacity_gb used)."""
        if price["unit"] == "GB-Hours":
            return Fraction(price["price"]), price["price"], None
        if price["capacity_gb"]:
            cap_gb = Fraction(price["capacity_gb"])
        else:
            matching = [c for m, c in caps.items() if price["re"].search(m)]
            if not matching:
                raise ScenarioError("no measured capacity for %s" % price["id"])
            cap_gb = Fraction(max(matching) * 1048576, 10 ** 9)
        s = round_half_even(Fraction(price["price"]) / cap_gb, 12)
        return Fraction(s), s, cap_gb

    def _line(self, cluster, model, kind, price, up, up_s, days):
        mib_s = sum(days.values())
        amount_exact = mib_s_to_gbh(mib_s) * up
        amount = round_half_even(amount_exact, self.minor)
        units = to_units(amount, self.minor)
        dl = sorted(d for d in days if days[d] > 0)
        split = largest_remainder(units, [days[d] for d in dl]) if dl and mib_s else [0] * len(dl)
        return {
            "cluster": cluster, "gpu_model": model, "kind": kind,
            "price_id": price["id"], "price_valid_from": price["valid_from_s"],
            "price_valid_to": price["valid_to_s"], "unit_price": up_s,
            "pricing_unit": "GB-Hours", "mib_seconds": str(mib_s),
            "gb_hours": round_half_even(mib_s_to_gbh(mib_s), 9), "amount": amount,
            "estimated": False,
            "days": [{"day": fmt_day(d), "mib_seconds": str(days[d]),
                      "gb_hours": round_half_even(mib_s_to_gbh(days[d]), 9),
                      "billed_cost": units_to_str(u, self.minor)}
                     for d, u in zip(dl, split)],
        }

    def expected(self, t_from=None, t_to=None, exclude=()):
        t_from = self.win_from if t_from is None else t_from
        t_to = self.win_to if t_to is None else t_to
        p0, p1 = month_bounds(self.period)
        if t_from < p0 or t_to > p1:
            raise ScenarioError("window %s..%s leaves period %s"
                                % (fmt_time(t_from), fmt_time(t_to), self.period))
        mem, fleet, pods, caps = self.attribute(t_from, t_to, exclude)
        byid = {p["id"]: p for p in self.prices}
        used_prices = {}

        def up_of(pid):
            if pid not in used_prices:
                used_prices[pid] = self.unit_price(byid[pid], caps)
            return used_prices[pid]

        def sort_key(line):
            return (line["cluster"], line["gpu_model"], line["kind"], line["price_valid_from"])

        cat = {c["id"]: c for c in self.teams_cfg.get("catalogue", [])}
        teams = {}
        for (team, cluster, model, pid), days in mem.items():
            up, up_s, _ = up_of(pid)
            line = self._line(cluster, model, "memory_used", byid[pid], up, up_s, days)
            if int(line["mib_seconds"]) == 0:
                continue
            teams.setdefault(team, []).append(line)
        out_teams = {}
        for team in sorted(teams):
            lines = sorted(teams[team], key=sort_key)
            total = sum(to_units(l["amount"], self.minor) for l in lines)
            c = cat.get(team)
            out_teams[team] = {
                "invoice_id": "GL-%s-%s" % (self.period, team),
                "team_name": c.get("name", team) if c else team,
                "cost_center": c.get("cost_center") if c else None,
                "total": units_to_str(total, self.minor),
                "lines": lines,
            }
        fl = []
        for (kind, cluster, model, pid), days in fleet.items():
            up, up_s, _ = up_of(pid)
            fl.append(self._line(cluster, model, kind, byid[pid], up, up_s, days))
        fl.sort(key=sort_key)
        stats = self.last_stats

        def gbh_row(row):
            return {f: round_half_even(mib_s_to_gbh(row[f]), 9) for f in SUMMARY_FIELDS}
        summary = {
            "models": [dict({"cluster": c, "gpu_model": m}, **gbh_row(r))
                       for (c, m), r in sorted(stats["models"].items())],
            "devices": [dict({"cluster": c, "uuid": u, "gpu_i_id": gi or None,
                              "gpu_i_profile": prof or None, "gpu_model": m, "node": n},
                             **gbh_row(r))
                        for (c, u, gi, prof, m, n), r in sorted(stats["devices"].items())],
        }
        prices_out = {}
        for pid, (up, up_s, cap_gb) in sorted(used_prices.items()):
            p = byid[pid]
            prices_out[pid] = {"model_pattern": p["pattern"], "unit": p["unit"],
                               "price": p["price"], "unit_price_per_gb_hour": up_s,
                               "capacity_gb": None if cap_gb is None else
                               round_half_even(cap_gb, 9)}
        return {
            "scenario": self.name,
            "period": self.period,
            "period_start": fmt_time(p0), "period_end": fmt_time(p1),
            "window": {"from": fmt_time(t_from), "to": fmt_time(t_to)},
            "currency": self.currency, "minor_units": self.minor,
            "step_seconds": self.step,
            "teams": out_teams,
            "fleet": fl,
            "prices": prices_out,
            "summary": summary,
            "measured_capacity_mib": dict(sorted(caps.items())),
            "pod_totals": {"%s/%s/%s" % k: str(v) for k, v in sorted(pods.items())},
        }

    # ---- independent check: occupants summed straight from the scenario
    def direct_pod_totals(self, t_from, t_to):
        out = {}
        for n in self.scn.get("nodes", []):
            gaps = [(parse_time(g["from"]), parse_time(g["to"])) for g in n.get("gaps", [])]
            for g in n.get("gpus", []):
                for o in self._occupants(g):
                    p = o["pod"]
                    key = "%s/%s/%s" % (self.cluster_name, p["namespace"], p["name"])
                    for t in self._steps(max(t_from, o["from"]), min(t_to, o["to"])):
                        if any(lo <= t < hi for lo, hi in gaps):
                            continue
                        v = value_at(o["used"], (t - self.start) // self.step)
                        out[key] = out.get(key, 0) + v * self.step
        return {k: str(v) for k, v in sorted(out.items()) if v}


def load_scenario(path):
    with open(path, encoding="utf-8") as f:
        scn = json.load(f)
    return Cluster(scn, os.path.dirname(os.path.abspath(path)))


def self_check(cl, exp):
    """Cross-check the reference attribution against the scenario and the
    arithmetic invariants; returns a list of problems."""
    problems = []
    direct = cl.direct_pod_totals(parse_time(exp["window"]["from"]),
                                  parse_time(exp["window"]["to"]))
    if direct != exp["pod_totals"]:
        problems.append("per-pod totals from the samples %s differ from the scenario's "
                        "occupants %s (an exporter pod billed, or a duplicate occupant?)"
                        % (exp["pod_totals"], direct))
    minor = exp["minor_units"]
    for team, inv in exp["teams"].items():
        tot = 0
        for line in inv["lines"] + []:
            tot += to_units(line["amount"], minor)
        if units_to_str(tot, minor) != inv["total"]:
            problems.append("%s: total mismatch" % team)
    for line in [l for inv in exp["teams"].values() for l in inv["lines"]] + exp["fleet"]:
        if sum(int(d["mib_seconds"]) for d in line["days"]) != int(line["mib_seconds"]):
            problems.append("daily MiB.s do not sum: %s" % line)
        if sum(to_units(d["billed_cost"], minor) for d in line["days"]) != \
                to_units(line["amount"], minor):
            problems.append("daily billed cost does not sum: %s" % line)
    return problems


def generate(scenario_path, outdir):
    cl = load_scenario(scenario_path)
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "data.om"), "w", encoding="utf-8", newline="\n") as f:
        nlines = cl.write_openmetrics(f)
    with open(os.path.join(outdir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cl.config, f, indent=2)
        f.write("\n")
    with open(os.path.join(outdir, "prices.csv"), "w", encoding="utf-8", newline="") as f:
        f.write(cl.prices_csv())
    exp = cl.expected()
    problems = self_check(cl, exp)
    if problems:
        raise ScenarioError("self-check failed:\n  " + "\n  ".join(problems))
    exp["data_lines"] = nlines
    with open(os.path.join(outdir, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(exp, f, indent=2)
        f.write("\n")
    return cl, exp


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        sys.stderr.write("usage: gencluster.py SCENARIO.json OUTDIR\n")
        return 2
    try:
        _, exp = generate(argv[1], argv[2])
    except (ScenarioError, KeyError, ValueError, OSError) as e:
        sys.stderr.write("gencluster: %s: %s%s\n" % (argv[1], type(e).__name__ + ": "
                                                       if isinstance(e, KeyError) else "", e))
        return 1
    sys.stderr.write("gencluster: %s: %d OpenMetrics lines, %d teams\n"
                     % (argv[2], exp["data_lines"], len(exp["teams"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
