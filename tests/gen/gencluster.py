#!/usr/bin/env python3
"""gencluster.py - synthetic Kubernetes GPU cluster for gpuledger tests.

Usage:  python3 tests/gen/gencluster.py SCENARIO.json OUTDIR

Writes into OUTDIR:
  data.om        OpenMetrics text (the dcgm-exporter and kube-state-metrics
                 metric shapes), one sample per series per step,
                 families grouped, each series in time order, final "# EOF".
                 Load it with `promtool tsdb create-blocks-from openmetrics`.
  config.json    gpuledger config (docs/interfaces.md); prometheus.url is the
                 placeholder "http://127.0.0.1:PORT" for the caller to rewrite.
  prices.csv     price table (docs/specification.md, Arithmetic).
  expected.json  figures computed here, never by the engine (see below), for
                 config.json.
  config-RUN.json, expected-RUN.json
                 the same for every entry of the scenario's "runs" (engine
                 configs run against the same data: attribution mode, split,
                 billing basis, idle policy, identity labels).

Only the Python 3 standard library is used; all money and quantity arithmetic
is exact (int / fractions.Fraction), rounded half-even once where the
specification says.
No code is shared with the engine: the reference model below is written from
docs/specification.md (Attribution, Arithmetic) and docs/interfaces.md ("Sharing-aware attribution").

The module can also be imported (tests/integration/run.py does):
  load_scenario(path) -> Cluster;  Cluster.expected(t_from, t_to, exclude, overrides)
  Cluster.run_config(overrides) -> config dict;  Cluster.samples_at(t)
  Cluster.direct_*(...) -> figures summed straight from the scenario's
  occupants and pods (independent of the series-reading model).

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
  "fb_unit": "MiB",                  or "bytes": FB_USED / FREE / RESERVED written
                                     x 1048576 (exporters reporting bytes); the
                                     model reads them back in MiB
  "hostname_label": "Hostname",      default of every node's hostname_label
  "exporter_preset": "...",          config.json gets exporter.preset (and no
                                     collection.hostname_label / memory_source.
                                     unit, so the preset decides them)
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
                                      kube_pod_status_phase, kube_pod_container_
                                      resource_requests and kube_pod_labels
                                      series exist in [from, to)
     "completed_at": T,               optional: the pod stops running at T but
                                      its series linger until "to" (as KSM
                                      keeps completed pods): phase="Running" is
                                      1 before T and 0 from T, and a
                                      phase="Succeeded" series is 0 then 1
     "labels": {"team": "vision"}, "changes": [...],   as for namespaces
     "owner": {"kind": "ReplicaSet", "name": "train-7d4b9c8f6"},   optional:
                                      kube_pod_owner over the pod's lifetime
                                      (owner_is_controller "true", or "false"
                                      with "controller": false; kind "<none>"
                                      writes KSM's series of a bare pod)
     "pending_until": T,              optional: the pod is Pending (unscheduled) in
                                      [from, T): phase="Pending" is 1 and its
                                      requests carry node="" there; Running
                                      from T on "node" (T >= "to": it never runs)
     "pending_node": true,            optional: scheduled while Pending (its
                                      requests carry "node" then: a pod not yet
                                      started, e.g. pulling its image)
     "resource_claims": [{"claim_name": "gpu", "resourceclaim_name": "train-gpu",
                          "resourceclaim_template_name": ""}],   optional:
                                      kube_pod_resourceclaim_info over the pod's
                                      lifetime (kube-state-metrics 2.20+)
     "requests": {"nvidia.com/gpu": 1}}               resource names as in
  ],                                  Kubernetes (nvidia.com/gpu, nvidia.com/gpu.shared,
                                      nvidia.com/mig-1g.10gb, cpu, ...); written
                                      sanitized (nvidia_com_gpu, unit "integer")
  "nodes": [
    {"name": "gpu-node-1",
     "labels": {"nvidia.com/gpu.product": "...", "nvidia.com/gpu.replicas": "4"},
                                      kube_node_labels (label_nvidia_com_gpu_replicas
                                      is what time-slicing allocation reads)
     "hostname_label": "Hostname",    or "hostname" (newest dcgm-exporter)
     "profiling": true,               false: no DCGM_FI_PROF_GR_ENGINE_ACTIVE on
                                      this node (compute falls back to GPU_UTIL)
     "scrape": {"mode": "honor"}      pod labels as exported (default), or
               {"mode": "exported", "exporter_pod": "gpu-operator/nvidia-dcgm-exporter-x7k2p",
                "exporter_container": "nvidia-dcgm-exporter"}
                                      honorLabels: false: workload labels become
                                      exported_container/exported_namespace/
                                      exported_pod and every series of the node
                                      carries container/namespace/pod of the
                                      exporter pod itself (so under
                                      identity_labels "auto" a series without
                                      a workload bills the exporter pod; the
                                      model computes exactly that, and
                                      identity_labels "exported" never does);
     "empty_pod_labels": false,       true: series without a workload print
                                      container="",namespace="",pod="" (old exporters)
     "gaps": [{"from": T, "to": T}],  scrape gaps: no dcgm sample of this node in [from, to)
     "gpus": [
       {"gpu": 0, "uuid": "GPU-...", "pci_bus_id": "00000000:07:00.0",
        "device": "nvidia0" (default "nvidia<gpu>"), "model": "NVIDIA A100-SXM4-80GB",
        "model_changes": [{"at": T, "model": "NVIDIA H100 80GB HBM3"}],  optional: the
                                      UUID's series name that modelName from T on
                                      (a board swapped under the same UUID); the
                                      model prices each step at the model of its
                                      series, and a node's allocation at its first
                                      full GPU's model of the hour
        "mig": {"profile": "1g.6gb", "id": 3},        optional: MIG instance
        "capacity_mib": 81920, "reserved_mib": 615,   USED+FREE+RESERVED, RESERVED
        "mode": "exclusive" | "default" | "vgpu" | "process",
            The whole-GPU value W(t) = sum of the active occupants' used_mib +
            unattributed_mib (idle_used_mib when nobody is active);
            FREE = capacity - reserved - W.
            exclusive: dcgm-exporter default mode, at most one occupant at a
              time; USED/FREE/RESERVED form one series per occupant carrying
              its labels; with no occupant one series without workload labels.
            default: dcgm-exporter default mode with time-slicing (several
              occupants): the busy GPU's only series carry the labels of the
              first active occupant in list order (the others are invisible),
              USED = W; no device series.
            vgpu: virtual-GPU mode before 4.8 (attribution "device"): every
              active occupant gets, per vgpu slot, a copy of every metric of
              the whole GPU (USED = W, FREE, RESERVED, compute); no device
              series while occupied.
            process: per-process mode (4.8+): a device series without
              workload labels (USED = W, FREE, RESERVED, compute) plus one
              FB_USED series per occupant and vgpu slot (same value in every
              slot).
            process_podfree: per-process mode where the device series has
              FB_USED only and FB_FREE / FB_RESERVED sit on the per-pod
              series (copies of the device's values).
        "fb": true,                   false: no FB metric at all (compute only:
                                      unknown usage)
        "no_reserved": false,         true: no DCGM_FI_DEV_FB_RESERVED series
        "hami": false,                true: HAMi vGPUmonitor series per active
                                      occupant: hami_vgpu_memory_used_bytes =
                                      used_mib x 2^20 + hami_extra_bytes and
                                      hami_vgpu_memory_limit_bytes (Go float
                                      text, labels container, device_uuid,
                                      namespace, pod, vdevice_index, zone)
        "idle_used_mib": 0, "unattributed_mib": 0,
        "busy": 650000 or {"base": B, "swing": S, "period": P, "phase": F},
            optional, parts per million (0..1000000) at step index k: emits
            DCGM_FI_PROF_GR_ENGINE_ACTIVE = busy/1e6 with six decimals
            (unless the node says "profiling": false) and, except on MIG
            instances, DCGM_FI_DEV_GPU_UTIL = busy // 10000 (integer %),
            on the series that carry the mode's FB labels (process mode: the
            device series)
        "occupants": [
          {"pod": "team-a/train-0", "from": T, "to": T (default start..end),
           "container": "..." (default: the pod's container),
           "used_mib": 40000 or {"base": B, "swing": S, "period": P, "phase": F},
              value at step index k (k = 0 at "start"):
              B + (S * |2x - P|) // P  with  x = (k + F) mod P   (integers)
           "vgpu": ["5", "19"],       vgpu / process mode: one series per slot
           "dra_driver": "nic.example.com",   DRA driver of the claim (default gpu.nvidia.com)
           "dra_claim": "single-gpu", DRA: the occupant's series carry
                                      dra_claim_name (+ dra_claim_namespace,
                                      default the pod's; dra_driver_name,
                                      dra_pool_name, dra_device_name; MIG:
                                      dra_mig_profile, dra_mig_device_uuid)
           "hami_limit_bytes": N, "hami_extra_bytes": 0,   HAMi (gpu "hami")
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
  "config": {...},                     deep-merged over the generated config.json
  "runs": [{"name": "process-max", "description": "...",
            "config": {...}}]          optional: further engine configs over the
                                       same data (each deep-merged over
                                       config.json); config-NAME.json and
                                       expected-NAME.json are written for each
}

THE REFERENCE MODEL (specification: Attribution, Arithmetic; interfaces.md "Sharing-aware attribution")
----------------------------------------------------------------------
Computed on the very samples written to data.om, step by step over the
window, for one engine config (memory_source.attribution "process" or
"device", memory_source.split "even" or "allocation", collection.
identity_labels "auto" / "exported", billing.basis "used" / "max",
idle_overhead.policy "platform" / "proportional" / "unbilled",
allocation.replicas / mig_profiles_mib / resources):
- DRA / HAMi / fleet: a DRA claim on a pod's series allocates that device
  (capacity - reserved; MIG: the slice, else mig_profiles_mib, else the
  profile size x 1024), shared by its pods by largest remainder (ties by
  namespace/pod); a HAMi limit (bytes -> MiB half-even, containers summed)
  is the pod's allocation of the device and zeroes its requests' MiB on
  that node (their GPU time stays); such devices are never anomalies for
  that pod. Both name their device: the pod's allocation, reserved-unused
  (allocation - its memory on that device) and, under basis max, the billed
  reserved-unused out of that device's idle with the rest that device's
  excess, stay on it; other devices' idle is untouched. Capacity =
  device used + max FREE + max RESERVED (specification: Arithmetic), with or without a device
  series (never one per-pod series' USED plus the copied FREE/RESERVED). Billed reserved-unused taken on a device
  and the excess left over (on the pod's device with most memory, else the
  node's first with a capacity) are kept per device; a device with unknown
  capacity has its pods' bill as excess.
- devices: series grouped by (cluster, UUID, GPU_I_ID); FB_USED series with a
  workload identity (exported_* when present, else pod/namespace, empty =
  absent; mode "exported": exported_* only) are pod values, duplicates merged
  by max; series without identity are device totals (max); FREE / RESERVED
  max over the group; capacity = device used + FREE + RESERVED; a device
  with no FB_USED and no FB_FREE at t has unknown capacity (no device
  rows); a missing sample is zero.
- pod memory (MiB.s): process: value x step; device: V = max of the N pods'
  values, V x step split by largest remainder (ties by ascending
  namespace/pod) with weights 1 or the pods' allocated MiB.s on the node
  (all zero -> even); such rows are estimated.  Device used = the device
  series, else V (device) or the sum (process).
- allocation per (pod, node, model) while kube_pod_status_phase{phase=
  "Running"} == 1: requests summed over containers per resource;
  usable(node) = max over its non-MIG devices with a known capacity of
  capacity - reserved; replicas = allocation.replicas[node], else
  label_nvidia_com_gpu_replicas, else 1; nvidia_com_gpu x u -> u x usable
  (replicas 1) or u x floor(usable / replicas); nvidia_com_gpu_shared x u ->
  u x floor(usable / replicas); nvidia_com_mig_<g>g_<m>gb x u -> u x the
  largest capacity - reserved of the node's MIG devices of that profile,
  else mig_profiles_mib, else m x 1024; GPU micro-seconds u x step x 10^6
  (/ replicas, floored; MIG x g / 7).  reserved_unused = max(0, allocated -
  the pod's memory on that node's devices of that model).
- basis max: reserved_unused is billed (kind reserved_unused) and taken from
  the idle of the node's devices of that model in ascending (UUID, GPU_I_ID)
  order; what cannot be taken is excess (model level).
- device rows: overhead = reserved + max(0, device used - sum of pods);
  idle = max(0, capacity - overhead - sum of pods); excess = the clamped part.
- anomalies per step: unallocated_use = a pod's memory on a device of a node
  where it holds no allocation; excess_devices = memory on k non-MIG devices
  of a node where it requests r < k whole GPUs (nvidia_com_gpu + _shared):
  the devices beyond the r largest (memory desc, UUID asc).  Keyed (kind,
  cluster, namespace, pod, team, node, device); first/last step instant.
- compute: busy(d, t) = GR_ENGINE_ACTIVE x 10^6 when present, else
  GPU_UTIL x 10^4; each team with a pod holding memory > 0 on d at t adds it
  once (and one device step); indicator = sum / (steps x 10^6).
- idle policies: platform -> idle_share / overhead_share lines on the
  platform team's invoice; proportional -> per (cluster, model, UTC day,
  price) split among the teams billed there by their billed MiB.s (memory_used
  + reserved_unused), largest remainder, ties by team id, else platform
  team; unbilled -> no lines (the summary still reports them).
- prices: first row in file order matching modelName (regex search) with
  valid_from <= t < valid_to; GPU-Hours -> price / capacity (the largest
  measured capacity MiB*1048576/1e9 of a non-MIG device of that model in the
  window, else the capacity_gb column), half-even to 12 decimals.
- line = (team, cluster, model, kind, price id); gb_hours = MiB.s * 1048576 /
  3.6e12, 9 decimals half-even; amount = MiB.s * 1048576 * unit price / 3.6e12
  half-even to the currency's minor unit; total = sum of amounts; per line and
  UTC day: mib_seconds, gb_hours, billed_cost = the amount split in minor
  units by largest remainder in proportion to the days' MiB.s (ties: earlier
  day first).

EXPECTED.JSON
----------------------------------------------------------------------
{"scenario", "run", "config": {attribution, split, basis, policy,
  identity_labels, platform_team}, "period", "period_start", "period_end",
 "window", "currency", "minor_units", "step_seconds",
 "invoices": {team: {"invoice_id", "team_name", "cost_center", "total",
              "lines": [LINE, every kind on that invoice],
              "waste": [INFO], "allocated": [INFO + "gpu_hours"],
              "compute_indicator": [{"cluster", "gpu_model", "busy_ratio",
                                     "device_steps"}],
              "anomalies": [ANOMALY]}},
 "info_only": {team: {the four blocks}}   teams with allocation or
                                          anomalies but no invoice line
 "teams": {team: {..., "lines": [memory_used LINE]}}   (memory only)
 "fleet": [LINE of kind idle_share / overhead_share, totals wherever billed],
 "anomalies": [ANOMALY], "compute_days": [{"team", "cluster", "gpu_model",
  "day", "busy_ratio", "device_steps"}],
 "summary": {"models": [{"cluster", "gpu_model", FIELDS, "fb_free"}],
             "devices": [{"cluster", "uuid", "gpu_i_id", "gpu_i_profile",
                          "gpu_model", "node", FIELDS, "fb_free"}]},
 "prices": {price_id: {...}}, "measured_capacity_mib", "pod_totals" (raw
 max-merged sample MiB.s per cluster/namespace/pod), "pod_memory" (billed
 MiB.s), "pod_allocation" ({cluster/ns/pod/node/model: [MiB.s, GPU-us,
 reserved-unused MiB.s]})}
LINE = {"cluster", "gpu_model", "kind", "price_id", "price_valid_from",
 "price_valid_to", "unit_price", "pricing_unit", "mib_seconds", "gb_hours",
 "amount", "estimated", "days": [{"day", "mib_seconds", "gb_hours",
 "billed_cost"}]}; lines ordered by cluster, gpu_model, kind, price_valid_from.
INFO = {"cluster", "gpu_model", "mib_seconds", "gb_hours"}; ANOMALY as in
interfaces.md (device = UUID, or UUID/GPU_I_ID for a MIG instance).
FIELDS = capacity, memory_used, reserved_unused_billed, reserved,
unattributed, idle, excess (GB-hours, 9 decimals).
"""

import calendar
import copy
import csv
import io
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from fractions import Fraction

MINOR_UNITS = {"USD": 2, "EUR": 2, "GBP": 2, "CHF": 2, "JPY": 0, "KRW": 0,
               "KWD": 3, "BHD": 3}
PLACEHOLDER_URL = "http://127.0.0.1:PORT"
FB_FAMILIES = [
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB)."),
]
COMPUTE_FAMILIES = [
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active."),
]
DCGM_FAMILIES = FB_FAMILIES + COMPUTE_FAMILIES
HAMI_FAMILIES = [
    ("hami_vgpu_memory_used_bytes", "vGPU device memory usage of a container (bytes)."),
    ("hami_vgpu_memory_limit_bytes", "vGPU device memory limit of a container (bytes)."),
]
KSM_FAMILIES = [
    ("kube_pod_container_resource_requests",
     "The number of requested request resource by a container."),
    ("kube_pod_status_phase", "The pods current phase."),
    ("kube_pod_labels", "Kubernetes labels converted to Prometheus labels."),
    ("kube_namespace_labels", "Kubernetes labels converted to Prometheus labels."),
    ("kube_node_labels", "Kubernetes labels converted to Prometheus labels."),
]
# kube_pod_owner, only for pods with an "owner" (the reports' workloads);
# kube_pod_resourceclaim_info (kube-state-metrics 2.20+), only for pods with
# "resource_claims" (what `check` compares with the claims on dcgm series)
OWNER_FAMILIES = [("kube_pod_owner", "Information about the Pod's owner."),
                  ("kube_pod_resourceclaim_info",
                   "Information about the ResourceClaims a pod references.")]
POD_OWNER, POD_CLAIM = (f[0] for f in OWNER_FAMILIES)
USED, FREE, RESERVED = (f[0] for f in FB_FAMILIES)
GPU_UTIL, GR_ACTIVE = (f[0] for f in COMPUTE_FAMILIES)
REQUESTS, PHASE, POD_LABELS, NS_LABELS, NODE_LABELS = (f[0] for f in KSM_FAMILIES)
HAMI_USED, HAMI_LIMIT = (f[0] for f in HAMI_FAMILIES)
DRA_DRIVER = "gpu.nvidia.com"
DRA_LABELS = {"claim_name": "dra_claim_name", "claim_namespace": "dra_claim_namespace",
              "mig_profile": "dra_mig_profile", "driver": "dra_driver_name",
              "pool": "dra_pool_name", "device": "dra_device_name",
              "mig_device_uuid": "dra_mig_device_uuid"}
# memory_source.preset -> the keys it fills (explicit keys win)
MEMORY_PRESETS = {"hami": {"query": "hami_memory", "unit": "bytes", "attribution": "process",
                           "labels": {"uuid": "device_uuid"}, "limit_query": "hami_limit",
                           "device_query": "fb_used"}}
SUMMARY_FIELDS = ("capacity", "memory_used", "reserved_unused_billed", "reserved",
                  "unattributed", "idle", "excess")
GPU_MODES = ("exclusive", "default", "vgpu", "process", "process_podfree")
# exporter.preset -> the FB unit and hostname label it declares (README
# "Exporter schema"; None: no preset)
PRESETS = {None: {"unit": "MiB", "hostname": "Hostname"},
           "dcgm-exporter-3.x": {"unit": "MiB", "hostname": "Hostname"},
           "dcgm-exporter-4.x": {"unit": "MiB", "hostname": "Hostname"},
           "dcgm-exporter-4.8.3": {"unit": "MiB", "hostname": "hostname"},
           "dcgm-exporter-bytes": {"unit": "bytes", "hostname": "hostname"}}
MIG_RESOURCE = re.compile(r"^nvidia_com_mig_(\d+)g_(\d+)gb$")
BASE_RESOURCES = ("nvidia_com_gpu", "nvidia_com_gpu_shared")


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
    if weights and all(w == weights[0] for w in weights):
        q, r = divmod(total_units, len(weights))
        return [q + (1 if i < r else 0) for i in range(len(weights))]
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


def go_float(v):
    """An integer as Go's strconv.FormatFloat(v, 'g', -1, 64) prints it (what
    client_golang exposes, e.g. HAMi's 4.294967296e+09)."""
    v = int(v)
    if v == 0:
        return "0"
    digits = str(abs(v)).rstrip("0")
    exp = len(str(abs(v))) - 1
    if exp < 21 and exp < 6:   # shortest form: %e from exponent 6 on (eprec 6)
        return str(v)
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return "%s%se+%02d" % ("-" if v < 0 else "", mant, exp)


def div_half_even(n, d):
    q, r = divmod(n, d)
    if 2 * r > d or (2 * r == d and q % 2 == 1):
        q += 1
    return q


def mig_profile_size(profile):
    """'1g.10gb' -> (1, 10), None when not a MIG profile (engine: leading
    '<g>g.<gb>gb', any suffix)."""
    m = re.match(r"^(\d+)g\.(\d+)gb", profile or "")
    if not m or int(m.group(1)) <= 0 or int(m.group(2)) <= 0:
        return None
    return int(m.group(1)), int(m.group(2))


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


def busy_text(ppm):
    """ppm (0..10^6) -> dcgm-exporter's six-decimal ratio text."""
    return "%d.%06d" % divmod(ppm, 10 ** 6)


def fb_int(v):
    """A stored FB / KSM sample value as an integer (MiB, units)."""
    if isinstance(v, str):
        f = Fraction(v)
        if f.denominator != 1:
            raise ScenarioError("non-integer sample %r" % v)
        return f.numerator
    return int(v)


def _acc(d, k, q):
    d[k] = d.get(k, 0) + q


def _acc_day(d, k, day, q):
    dd = d.setdefault(k, {})
    dd[day] = dd.get(day, 0) + q


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
        self.fb_unit = scn.get("fb_unit", "MiB")
        if self.fb_unit not in ("MiB", "bytes"):
            raise ScenarioError("fb_unit must be MiB or bytes")
        # UUID -> [(from, modelName)] of the GPUs whose model changes
        self.model_sched = {}
        for n in scn.get("nodes", []):
            for g in n.get("gpus", []):
                if g.get("model_changes"):
                    sched = [(self.start, g["model"])] + sorted(
                        (parse_time(c["at"]), c["model"]) for c in g["model_changes"])
                    if any(t % 3600 for t, _ in sched):
                        raise ScenarioError("gpu %s: model_changes on whole hours only "
                                            "(the engine prices whole hours)" % g["uuid"])
                    self.model_sched[g["uuid"]] = sched
        self.config = self._make_config()
        self.identity_mode = self.config.get("collection", {}).get("identity_labels", "auto")
        self.currency = self.config["billing"]["currency"]
        if self.currency not in MINOR_UNITS:
            raise ScenarioError("unknown currency %s" % self.currency)
        self.minor = MINOR_UNITS[self.currency]
        self.teams_cfg = self.config.get("teams", {})
        self.prices = self._load_prices()
        self.runs = []
        seen = set()
        for r in scn.get("runs", []):
            if not re.match(r"^[a-z0-9][a-z0-9-]*$", r.get("name", "")) or r["name"] in seen:
                raise ScenarioError("runs: bad or duplicate name %r" % r.get("name"))
            seen.add(r["name"])
            self.runs.append(r)
        self.pods = {}
        for p in scn.get("pods", []):
            key = p["namespace"] + "/" + p["name"]
            if key in self.pods:
                raise ScenarioError("pod %s listed twice" % key)
            self.pods[key] = p
        self.namespaces = {n["name"]: n for n in scn.get("namespaces", [])}
        # series store: family -> {labels tuple: {t: value}} (insertion ordered)
        self.series = {f: {} for f, _ in DCGM_FAMILIES + KSM_FAMILIES + HAMI_FAMILIES + OWNER_FAMILIES}
        self._idx = None
        self._team_cache = {}
        self._ppm_cache = {}
        self._build()

    # ---- config and prices
    def _make_config(self):
        scn = self.scn
        preset = scn.get("exporter_preset")
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
        if preset:
            if preset not in PRESETS:
                raise ScenarioError("unknown exporter_preset %r" % preset)
            cfg["exporter"] = {"preset": preset}
            del cfg["collection"]["hostname_label"]
            del cfg["memory_source"]["unit"]
        deep_merge(cfg, scn.get("config", {}))
        return cfg

    def run_config(self, overrides=None):
        """config.json with a run's overrides deep-merged over it."""
        cfg = copy.deepcopy(self.config)
        if overrides:
            deep_merge(cfg, overrides)
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

    def _pid(self, model, t):
        p = self.price_for(model, t)
        if p is None:
            raise ScenarioError("no price for model %r at %s" % (model, fmt_time(t)))
        return p["id"]

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

    def model_at(self, uuid, t, default):
        m = default
        for at, model in self.model_sched.get(uuid, ()):
            if at <= t:
                m = model
        return m

    def _add(self, fam, labels, t, value):
        if self.model_sched:
            d = dict(labels)
            if d.get("UUID") in self.model_sched and "modelName" in d:
                m = self.model_at(d["UUID"], t, d["modelName"])
                labels = tuple((k, m if k == "modelName" else v) for k, v in labels)
        if self.cluster_emit:
            labels = labels + ((self.cluster_label, self.cluster_name),)
        self.series[fam].setdefault(tuple(labels), {})[t] = value

    def pod_window(self, p):
        lo = parse_time(p["from"]) if p.get("from") else self.start
        hi = parse_time(p["to"]) if p.get("to") else self.end
        done = parse_time(p["completed_at"]) if p.get("completed_at") else None
        if done is not None and (done % self.step or not lo <= done <= hi):
            raise ScenarioError("pod %s/%s: completed_at outside its lifetime or off the "
                                "step grid" % (p["namespace"], p["name"]))
        return lo, hi, done

    def pending_until(self, p):
        """The end of the pod's Pending time (its start when it never waits)."""
        lo, hi, done = self.pod_window(p)
        if not p.get("pending_until"):
            return lo
        pu = parse_time(p["pending_until"])
        if pu % self.step or pu < lo or done is not None:
            raise ScenarioError("pod %s/%s: pending_until before its start, off the step grid "
                                "or with completed_at" % (p["namespace"], p["name"]))
        return min(pu, hi)

    # ---- build all samples
    def _build(self):
        start, end = self.start, self.end
        # kube_node_labels
        for n in self.scn.get("nodes", []):
            lab = (("node", n["name"]),) + tuple(
                (ksm_label_name(k), str(v)) for k, v in n.get("labels", {}).items())
            for t in self._steps(start, end):
                self._add(NODE_LABELS, lab, t, 1)
        # kube_namespace_labels
        for ns in self.scn.get("namespaces", []):
            for lo, hi, labels in self._label_periods(ns, start, end):
                lab = (("namespace", ns["name"]),) + tuple(
                    (ksm_label_name(k), str(v)) for k, v in labels.items())
                for t in self._steps(lo, hi):
                    self._add(NS_LABELS, lab, t, 1)
        # pods
        for key, p in self.pods.items():
            lo, hi, done = self.pod_window(p)
            pu = self.pending_until(p)
            ident = (("namespace", p["namespace"]), ("pod", p["name"]), ("uid", p["uid"]))
            for res, count in p.get("requests", {}).items():
                unit = "integer"
                if res == "cpu":
                    unit = "core"
                elif res == "memory":
                    unit = "byte"
                # unscheduled while Pending: kube-state-metrics writes node=""
                # (merged into one series when the node is the same)
                waiting = p["node"] if p.get("pending_node") else ""
                for node, a, b in ((waiting, lo, pu), (p["node"], pu, hi)):
                    lab = ident + (("container", p["container"]), ("node", node),
                                   ("resource", ksm_resource_name(res)), ("unit", unit))
                    for t in self._steps(a, b):
                        self._add(REQUESTS, lab, t, count)
            for t in self._steps(lo, hi):
                running = (done is None or t < done) and t >= pu
                self._add(PHASE, ident + (("phase", "Running"),), t, 1 if running else 0)
                if pu > lo:
                    self._add(PHASE, ident + (("phase", "Pending"),), t, 1 if t < pu else 0)
                if done is not None:
                    self._add(PHASE, ident + (("phase", "Succeeded"),), t, 0 if running else 1)
            for plo, phi, labels in self._label_periods(p, lo, hi):
                lab = ident + tuple((ksm_label_name(k), str(v)) for k, v in labels.items())
                for t in self._steps(plo, phi):
                    self._add(POD_LABELS, lab, t, 1)
            if p.get("owner"):
                # as kube-state-metrics writes it: "<none>" for a pod without owner
                o = p["owner"]
                ctl = "<none>" if o.get("kind") == "<none>" else \
                    ("true" if o.get("controller", True) else "false")
                lab = ident + (("owner_is_controller", ctl), ("owner_kind", o["kind"]),
                               ("owner_name", o["name"]))
                for t in self._steps(lo, hi):
                    self._add(POD_OWNER, lab, t, 1)
            for rc in p.get("resource_claims", []):
                # as kube-state-metrics 2.20 writes it: the pod's claim entry
                # and the ResourceClaim it resolved to (or the template's)
                lab = ident + (("claim_name", rc["claim_name"]),
                               ("resourceclaim_name", rc.get("resourceclaim_name", "")),
                               ("resourceclaim_template_name",
                                rc.get("resourceclaim_template_name", "")))
                for t in self._steps(lo, hi):
                    self._add(POD_CLAIM, lab, t, 1)
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
                "pod_uid": o.get("pod_uid", gpu.get("mode") in ("process", "process_podfree")),
                "dra_claim": o.get("dra_claim"),
                "dra_claim_namespace": o.get("dra_claim_namespace", p["namespace"]),
                "dra_driver": o.get("dra_driver", DRA_DRIVER),
                "hami_limit_bytes": o.get("hami_limit_bytes"),
                "hami_extra_bytes": int(o.get("hami_extra_bytes", 0)),
            })
        return occ

    def _exporter(self, n):
        scrape = n.get("scrape", {"mode": "honor"})
        if scrape.get("mode", "honor") != "exported":
            return None
        ep = scrape["exporter_pod"]
        if ep not in self.pods:
            raise ScenarioError("exporter pod %s is not in pods" % ep)
        epod = self.pods[ep]
        return (("container", scrape.get("exporter_container", epod["container"])),
                ("namespace", epod["namespace"]), ("pod", epod["name"]))

    def _gpu_state(self, g, occ, t):
        """(active occupants with values, whole-GPU value W) at t."""
        k = (t - self.start) // self.step
        active = [(o, value_at(o["used"], k)) for o in occ if o["from"] <= t < o["to"]]
        if active:
            whole = sum(v for _, v in active) + int(g.get("unattributed_mib", 0))
        else:
            whole = int(g.get("idle_used_mib", 0))
        return active, whole

    def _build_node(self, n):
        hn = n.get("hostname_label", self.scn.get("hostname_label", "Hostname"))
        exporter = self._exporter(n)
        exported = exporter is not None
        empty = bool(n.get("empty_pod_labels", False))
        profiling = n.get("profiling", True)
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
            if o.get("dra_claim") and g_cur["dra"] is not None:
                lab += g_cur["dra"] + (("dra_driver_name", o["dra_driver"]),
                                       ("dra_claim_name", o["dra_claim"]),
                                       ("dra_claim_namespace", o["dra_claim_namespace"]))
            return lab

        if exported:
            no_workload = exporter
        elif empty:
            no_workload = (("container", ""), ("namespace", ""), ("pod", ""))
        else:
            no_workload = ()

        g_cur = {"dra": None}
        for g in n.get("gpus", []):
            # DRA labels of a claimed device (dcgm-exporter with DRA enabled)
            dra = (("dra_device_name", "gpu-%d" % g["gpu"] if not g.get("mig") else
                    "gpu-%d-mig-%s" % (g["gpu"], g["mig"]["id"])),
                   ("dra_pool_name", n["name"]))
            if g.get("mig"):
                dra += (("dra_mig_profile", g["mig"]["profile"]),
                        ("dra_mig_device_uuid", "MIG-%s-%s" % (g["uuid"][4:], g["mig"]["id"])))
            g_cur["dra"] = dra
            base = (("gpu", str(g["gpu"])), ("UUID", g["uuid"]),
                    ("pci_bus_id", g["pci_bus_id"]),
                    ("device", g.get("device", "nvidia%d" % g["gpu"])),
                    ("modelName", g["model"]))
            mig = bool(g.get("mig"))
            if mig:
                base += (("GPU_I_PROFILE", g["mig"]["profile"]),
                         ("GPU_I_ID", str(g["mig"]["id"])))
            base += ((hn, n["name"]), ("DCGM_FI_DRIVER_VERSION", self.driver))
            cap = int(g["capacity_mib"])
            res = int(g["reserved_mib"])
            mode = g.get("mode", "exclusive")
            if mode not in GPU_MODES:
                raise ScenarioError("gpu %s: bad mode %r" % (g["uuid"], mode))
            busy = g.get("busy")
            occ = self._occupants(g)
            fb = g.get("fb", True)              # false: no FB metrics (unknown usage)
            with_res = not g.get("no_reserved", False)
            hami = bool(g.get("hami", False))

            def device_metrics(lab, t, used, k, fields=(USED, FREE, RESERVED)):
                free = cap - res - used
                if used < 0 or free < 0:
                    raise ScenarioError("gpu %s: used %d does not fit at %s"
                                        % (g["uuid"], used, fmt_time(t)))
                if fb and USED in fields:
                    self._add(USED, lab, t, used)
                if fb and FREE in fields:
                    self._add(FREE, lab, t, free)
                if fb and with_res and RESERVED in fields:
                    self._add(RESERVED, lab, t, res)
                if busy is not None and fields[0] == USED:
                    ppm = value_at(busy, k)
                    if not 0 <= ppm <= 10 ** 6:
                        raise ScenarioError("gpu %s: busy %d ppm out of range" % (g["uuid"], ppm))
                    if profiling:
                        self._add(GR_ACTIVE, lab, t, busy_text(ppm))
                    if not mig:
                        self._add(GPU_UTIL, lab, t, ppm // 10000)

            for t in self._steps(self.start, self.end):
                if any(lo <= t < hi for lo, hi in gaps):
                    continue
                k = (t - self.start) // self.step
                active, whole = self._gpu_state(g, occ, t)
                if mode == "exclusive" and len(active) > 1:
                    raise ScenarioError("gpu %s: two occupants at %s in exclusive mode"
                                        % (g["uuid"], fmt_time(t)))
                if mode in ("exclusive", "default"):
                    lab = base + (workload(active[0][0], None) if active else no_workload)
                    device_metrics(lab, t, whole, k)
                elif mode == "vgpu":
                    if not active:
                        device_metrics(base + no_workload, t, whole, k)
                    for o, _ in active:
                        for slot in o["vgpu"]:
                            device_metrics(base + workload(o, slot), t, whole, k)
                elif mode == "process":
                    device_metrics(base + no_workload, t, whole, k)
                    for o, v in active:
                        for slot in o["vgpu"]:
                            self._add(USED, base + workload(o, slot), t, v)
                else:
                    # process_podfree: the device series has FB_USED only; FREE
                    # and RESERVED are copied onto the per-pod series
                    device_metrics(base + no_workload, t, whole, k, (USED,))
                    for o, v in active:
                        for slot in o["vgpu"]:
                            lab = base + workload(o, slot)
                            if fb:
                                self._add(USED, lab, t, v)
                            device_metrics(lab, t, whole, k, (FREE, RESERVED))
                if hami:
                    # HAMi vGPUmonitor: per container, bytes (Go float text)
                    for o, v in active:
                        p = o["pod"]
                        lab = (("container", o["container"]), ("device_uuid", g["uuid"]),
                               ("namespace", p["namespace"]), ("pod", p["name"]),
                               ("vdevice_index", "0"), ("zone", "vGPU"))
                        self._add(HAMI_USED, lab, t,
                                  go_float(v * 1048576 + o["hami_extra_bytes"]))
                        if o["hami_limit_bytes"] is not None:
                            self._add(HAMI_LIMIT, lab, t, go_float(o["hami_limit_bytes"]))

    # ---- output
    def write_openmetrics(self, f):
        nlines = 0
        for fam, help_text in DCGM_FAMILIES + KSM_FAMILIES + HAMI_FAMILIES + OWNER_FAMILIES:
            if not self.series[fam]:
                continue
            f.write("# HELP %s %s\n# TYPE %s gauge\n" % (fam, help_text, fam))
            scale = 1048576 if self.fb_unit == "bytes" and fam in (USED, FREE, RESERVED) else 1
            for labels, samples in self.series[fam].items():
                head = fam + "{" + ",".join('%s="%s"' % (k, esc(v)) for k, v in labels) + "}"
                for t in sorted(samples):
                    v = samples[t] if scale == 1 else int(samples[t]) * scale
                    f.write("%s %s %d\n" % (head, fmt_value(v), t))
                    nlines += 1
        nlines += write_work_counters(self, f)   # scenario key "work" (end of file)
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

    # ---- reading the samples back
    def _cluster_of(self, d):
        v = d.get(self.cluster_label, "")
        return v if v else self.cluster_name

    def identity(self, d, mode=None):
        """(namespace, pod) of a dcgm series per the specification (Arithmetic), or None."""
        mode = mode or self.identity_mode
        ens, epod = d.get("exported_namespace", ""), d.get("exported_pod", "")
        ns, pod = d.get("namespace", ""), d.get("pod", "")
        if mode == "exported":
            return (ens, epod) if ens and epod else None
        if mode == "plain":
            return (ns, pod) if ns and pod else None
        if ens and epod:
            return (ens, epod)
        if ns and pod:
            return (ns, pod)
        return None

    @staticmethod
    def host_of(d, label="Hostname"):
        return d.get(label) or d.get("Hostname") or d.get("hostname") or ""

    def _index(self):
        """Per-step views of the stored series (built lazily, once)."""
        if self._idx is not None:
            return self._idx
        dcgm = {}
        for fam, _ in DCGM_FAMILIES:
            for labels, samples in self.series[fam].items():
                d = dict(labels)
                for t, v in samples.items():
                    dcgm.setdefault(t, []).append((fam, labels, d, v))
        meta = {}
        for fam in (POD_LABELS, NS_LABELS, NODE_LABELS):
            for labels, samples in self.series[fam].items():
                d = dict(labels)
                first = min(samples)
                for t in samples:
                    meta.setdefault((fam, t), []).append((first, d))
        ksm = {}
        for fam in (REQUESTS, PHASE):
            for labels, samples in self.series[fam].items():
                d = dict(labels)
                for t, v in samples.items():
                    ksm.setdefault(t, []).append((fam, d, v))
        # static per node: model of its full GPUs; model of its MIG devices per profile
        full, migm = {}, {}
        for labels in self.series[USED]:
            d = dict(labels)
            nk = (self._cluster_of(d), self.host_of(d))
            if "GPU_I_ID" in d:
                migm.setdefault(nk + (d.get("GPU_I_PROFILE", ""),), set()).add(
                    (d["UUID"], d["GPU_I_ID"], d.get("modelName", "unknown")))
            else:
                full.setdefault(nk, set()).add((d["UUID"], d.get("modelName", "unknown")))
        self.node_full_model = {k: min(v)[1] for k, v in full.items()}
        # a node whose first full GPU changes model: that GPU's model of the hour
        self.node_model_uuid = {k: min(v)[0] for k, v in full.items()
                                if min(v)[0] in self.model_sched}
        self.node_mig_model = {k: min(v)[2] for k, v in migm.items()}
        self._idx = (dcgm, meta, ksm)
        return self._idx

    def _hami_index(self):
        """HAMi series per step instant: [(family, labels, dict, value)]."""
        if getattr(self, "_hidx", None) is None:
            self._hidx = {}
            for fam in (HAMI_USED, HAMI_LIMIT):
                for labels, samples in self.series[fam].items():
                    d = dict(labels)
                    for t, v in samples.items():
                        self._hidx.setdefault(t, []).append((fam, labels, d, v))
        return self._hidx

    def _labels_at(self, meta, fam, t, match):
        best = None
        for first, d in meta.get((fam, t), []):
            if all(d.get(k, "") == v for k, v in match.items()):
                if best is None or first > best[0]:
                    best = (first, d)
        return best[1] if best else None

    def team_at(self, cluster, ns, pod, t):
        ck = (cluster, ns, pod, t)
        if ck in self._team_cache:
            return self._team_cache[ck]
        team = self._team_at(cluster, ns, pod, t)
        self._team_cache[ck] = team
        return team

    def _team_at(self, cluster, ns, pod, t):
        _, meta, _ = self._index()
        match_ns = {"namespace": ns}
        if self.cluster_emit:
            match_ns[self.cluster_label] = cluster
        pl = self._labels_at(meta, POD_LABELS, t, dict(match_ns, pod=pod))
        nl = self._labels_at(meta, NS_LABELS, t, match_ns)
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

    def pending(self, t_from, t_to, cfg):
        """GPUs requested while Pending in [t_from, t_to), read from the
        written kube-state-metrics series: per step, a pod whose
        phase="Pending" series is 1 (and Running is not) requests per
        (node, resource) the sum of its containers' requests, in
        micro-GPU-seconds: units x step x 10^6 x (MIG g/7 | 1/replicas when
        shared or the node is time-sliced | 1); the node's model, "unknown"
        for node "". Returns ({(cluster, team, model): gpu_us},
        {(cluster, ns, pod, team): [first, last, gpu_us]})."""
        _, meta, ksm = self._index()
        al = cfg.get("allocation", {})
        replicas_cfg = al.get("replicas", {})
        resources = set(BASE_RESOURCES) | set(al.get("resources", []))
        by_key, by_pod = {}, {}
        for t in self._steps(t_from, t_to):
            phase, units = {}, {}
            for fam, d, v in ksm.get(t, []):
                cl = self._cluster_of(d)
                if fam == PHASE:
                    if fb_int(v) == 1 and d.get("phase") in ("Running", "Pending"):
                        phase.setdefault((cl, d["namespace"], d["pod"]), set()).add(d["phase"])
                    continue
                res = d.get("resource", "")
                if res in resources or MIG_RESOURCE.match(res):
                    _acc(units, (cl, d["namespace"], d["pod"], d["node"], res), v)
            for (cl, ns, pod, node, res), u in sorted(units.items()):
                if phase.get((cl, ns, pod)) != {"Pending"} or u <= 0:
                    continue
                u = fb_int(u)
                reps = replicas_cfg.get(node)
                if not reps and node:
                    nl = self._labels_at(meta, NODE_LABELS, t, {"node": node}
                                         if not self.cluster_emit else
                                         {"node": node, self.cluster_label: cl})
                    try:
                        reps = int((nl or {}).get("label_nvidia_com_gpu_replicas", "0"))
                    except ValueError:
                        reps = 0
                reps = max(1, int(reps or 1))
                m = MIG_RESOURCE.match(res)
                if m:
                    gpu = u * self.step * 10 ** 6 * int(m.group(1)) // 7
                elif res == "nvidia_com_gpu_shared" or reps > 1:
                    gpu = u * self.step * 10 ** 6 // reps
                else:
                    gpu = u * self.step * 10 ** 6
                model = "unknown"
                if node and m:
                    model = self.node_mig_model.get(
                        (cl, node, "%sg.%sgb" % m.groups())) or self._node_model(cfg, (cl, node), t)
                elif node:
                    model = self._node_model(cfg, (cl, node), t)
                team = self.team_at(cl, ns, pod, t)
                _acc(by_key, (cl, team, model or "unknown"), gpu)
                w = by_pod.setdefault((cl, ns, pod, team), [t, t, 0])
                w[1], w[2] = t, w[2] + gpu
        return by_key, by_pod

    def _node_model(self, cfg, nk, t=None):
        u = self.node_model_uuid.get(nk) if t is not None else None
        if u:
            return self.model_at(u, t - t % 3600, None)
        m = self.node_full_model.get(nk)
        if m:
            return m
        m = cfg.get("allocation", {}).get("node_models", {}).get(nk[1])
        if m:
            return m
        migs = sorted(v for k, v in self.node_mig_model.items() if k[:2] == nk)
        return migs[0] if migs else "unknown"

    # ---- the reference attribution
    def simulate(self, t_from, t_to, cfg, exclude=()):
        """Integrate [t_from, t_to) under engine config cfg. exclude: set of
        (uuid, gpu_i_id, ns, pod, t) whose FB_USED samples count as missing.
        Returns a dict of exact integer accumulators (see expected())."""
        dcgm, meta, ksm = self._index()
        hami_idx = self._hami_index()
        ms = cfg.get("memory_source", {})
        if ms.get("preset"):
            pre_ms = MEMORY_PRESETS[ms["preset"]]
            ms = dict(pre_ms, **ms)
            ms["labels"] = dict(pre_ms.get("labels", {}), **ms.get("labels", {}))
        att = ms.get("attribution", "process")
        split = ms.get("split", "even")
        hami = ms.get("query", "fb_used") == "hami_memory"
        if hami:
            if ms.get("unit") != "bytes" or ms.get("labels", {}).get("uuid") != "device_uuid" \
                    or att != "process":
                raise ScenarioError("hami_memory: the model reads bytes, device_uuid, process")
            if ms.get("limit_query") not in (None, "hami_limit"):
                raise ScenarioError("the model reads limits from hami_limit only")
        elif ms.get("query", "fb_used") != "fb_used" or ms.get("limit_query"):
            raise ScenarioError("the model reads DCGM_FI_DEV_FB_USED or HAMi only")
        if ms.get("device_query") not in (None, "fb_used") or \
                ms.get("device_query") and not hami:
            raise ScenarioError("the model reads a device query (fb_used) beside HAMi only")
        # device used, FREE and RESERVED from dcgm-exporter's series beside HAMi
        dev_query = hami and ms.get("device_query") == "fb_used"
        ex = cfg.get("exporter", {})
        pre = PRESETS.get(ex.get("preset"), PRESETS[None])
        for q in ("fb_used", "fb_free", "fb_reserved"):
            u = ex.get("queries", {}).get(q, {}).get("unit") or (
                ms.get("unit") if q == "fb_used" and not hami else None) or pre["unit"]
            if u != self.fb_unit and not (hami and q == "fb_used"):
                raise ScenarioError("the model reads %s in the unit the data has (%s), not %s"
                                    % (q, self.fb_unit, u))
        use_limits = hami and ms.get("limit_query") == "hami_limit"
        if att not in ("process", "device") or split not in ("even", "allocation"):
            raise ScenarioError("bad attribution %r / split %r" % (att, split))
        coll = cfg.get("collection", {})
        idmode = coll.get("identity_labels", "auto")
        hn = coll.get("hostname_label") or ex.get("labels", {}).get("hostname") or \
            pre["hostname"]
        basis = cfg.get("billing", {}).get("basis", "used")
        if basis not in ("used", "max"):
            raise ScenarioError("bad billing.basis %r" % basis)
        al = cfg.get("allocation", {})
        replicas_cfg = al.get("replicas", {})
        mig_cfg = al.get("mig_profiles_mib", {})
        cap_cfg = al.get("model_capacity_mib", {})
        resources = set(BASE_RESOURCES) | set(al.get("resources", []))
        dra_cfg = cfg.get("dra", {})
        dra_on = dra_cfg.get("enabled", True)
        dra_lab = dict(DRA_LABELS, **dra_cfg.get("labels", {}))
        dra_driver = dra_cfg.get("driver", DRA_DRIVER)
        exclude = set(exclude)
        step = self.step
        A = {"mem": {}, "est": set(), "ru_billed": {}, "fleet": {}, "waste": {}, "alloc": {},
             "alloc_gpu": {}, "busy": {}, "busy_day": {}, "busy_steps": {},
             "busy_day_steps": {}, "anom": {}, "models": {}, "devices": {}, "caps": {},
             "pods": {}, "pod_mem": {}, "pod_alloc": {}, "excess_alloc": {},
             "dev_alloc": {}, "idle_steps": {}}

        def claim_of(d, idn, cl):
            name = d.get(dra_lab["claim_name"], "") if dra_on else ""
            if not name:
                return None
            if d.get(dra_lab["driver"], dra_driver) != dra_driver:
                return None   # another driver's claim (a NIC): no GPU memory
            return (cl, d.get(dra_lab["claim_namespace"], "") or idn[0], name)

        for t in self._steps(t_from, t_to):
            day = t - t % 86400
            # -- A. device totals
            devs = {}

            def dev_of(key, d):
                dev = devs.get(key)
                if dev is None:
                    dev = devs[key] = {
                        "model": d.get("modelName", "unknown"), "mig": "GPU_I_ID" in d,
                        "profile": d.get("GPU_I_PROFILE", "") or (
                            d.get(dra_lab["mig_profile"], "") if dra_on and "GPU_I_ID" in d
                            else ""),
                        "node": (key[0], self.host_of(d, hn)), "pods": {},
                        "devused": None, "free": None, "res": None,
                        "gr": None, "util": None, "seen": set(), "claims": {},
                        "limits": {}, "ctr": {}}
                return dev

            for fam, labels, d, v in dcgm.get(t, []):
                key = (self._cluster_of(d), d["UUID"], d.get("GPU_I_ID", ""))
                dev = dev_of(key, d)
                if fam in (GR_ACTIVE, GPU_UTIL):
                    if fam == GR_ACTIVE:
                        ppm = self._ppm_cache.get(v)
                        if ppm is None:
                            f = Fraction(v) * 10 ** 6
                            if f.denominator != 1:
                                raise ScenarioError("GR_ENGINE_ACTIVE %r has more than 6 "
                                                    "decimals" % v)
                            ppm = self._ppm_cache[v] = f.numerator
                        dev["gr"] = max(dev["gr"] or 0, ppm)
                    else:
                        dev["util"] = max(dev["util"] or 0, fb_int(v) * 10000)
                    idn = self.identity(d, idmode)
                    if idn is not None:
                        dev["seen"].add(idn)
                        c = claim_of(d, idn, key[0])
                        if c:
                            dev["claims"][idn] = c
                    continue
                if hami and fam == USED and not dev_query:
                    continue   # not queried: HAMi is the memory source
                v = fb_int(v)
                if hami and fam == USED:
                    # the device query: a device total whatever pod it names
                    dev["devused"] = v if dev["devused"] is None else max(dev["devused"], v)
                    continue
                if fam == USED:
                    idn = self.identity(d, idmode)
                    if idn is None:
                        dev["devused"] = v if dev["devused"] is None else max(dev["devused"], v)
                    elif (key[1], key[2], idn[0], idn[1], t) in exclude:
                        continue   # a skipped sample: absent
                    else:
                        dev["pods"][idn] = max(dev["pods"].get(idn, v), v)
                        c = claim_of(d, idn, key[0])
                        if c:
                            dev["claims"][idn] = c
                elif fam == FREE:
                    dev["free"] = v if dev["free"] is None else max(dev["free"], v)
                else:
                    dev["res"] = v if dev["res"] is None else max(dev["res"], v)
            for fam, labels, d, v in hami_idx.get(t, []):
                key = (self._cluster_of(d), d["device_uuid"], "")
                dev = dev_of(key, d)
                idn = self.identity(d, idmode)
                if idn is None:
                    continue
                mib = div_half_even(fb_int(v), 1048576)
                if fam == HAMI_USED:
                    dev["pods"][idn] = max(dev["pods"].get(idn, mib), mib)
                elif use_limits:
                    ck = (idn, d.get("container", ""))
                    dev["ctr"][ck] = max(dev["ctr"].get(ck, mib), mib)
            usable = {}
            for key, dev in devs.items():
                for (idn, _), mib in dev["ctr"].items():
                    dev["limits"][idn] = dev["limits"].get(idn, 0) + mib
                vals = list(dev["pods"].values())
                has_dev, has_free = dev["devused"] is not None, dev["free"] is not None
                has_res = dev["res"] is not None
                fbk = has_dev or has_free or bool(vals)
                if att == "device":
                    devused = dev["devused"] if has_dev else max([0] + vals)
                else:
                    devused = dev["devused"] if has_dev else sum(vals)
                dev["devused_v"] = devused
                cap = None
                if fbk:    # Arithmetic: device used + FREE + RESERVED (each max over the group)
                    cap = devused + (dev["free"] or 0) + (dev["res"] or 0)
                res_v = 0
                if cap is not None:
                    cfgc = cap_cfg.get(dev["model"])
                    # Missing data: only without FB_RESERVED, never for a MIG instance
                    if cfgc and not dev["mig"] and not has_res:
                        res_v = max(0, cfgc - cap)
                        cap = cfgc
                    elif has_res:
                        res_v = dev["res"]
                dev["cap"], dev["res_v"] = cap, res_v
                dev["fb"] = fbk
                dev["unknown"] = not fbk and bool(dev["seen"])
                if cap is not None:
                    if not dev["mig"]:
                        A["caps"][dev["model"]] = max(A["caps"].get(dev["model"], 0), cap)
                        u = max(0, cap - res_v)
                        if u > usable.get(dev["node"], 0):
                            usable[dev["node"]] = u
                for (ns, pod), v in dev["pods"].items():
                    _acc(A["pods"], (key[0], ns, pod), v * step)
            # -- B. allocation of Running pods
            running, units = set(), {}
            for fam, d, v in ksm.get(t, []):
                cl = self._cluster_of(d)
                if fam == PHASE:
                    if d.get("phase") == "Running" and fb_int(v) == 1:
                        running.add((cl, d["namespace"], d["pod"]))
                    continue
                res = d.get("resource", "")
                if res in resources or MIG_RESOURCE.match(res):
                    _acc(units, (cl, d["namespace"], d["pod"], d["node"], res), v)
            limited = set()
            for key, dev in devs.items():
                for (ns, pod) in dev["limits"]:
                    limited.add((key[0], ns, pod, dev["node"][1]))
            alloc, alloc_gpu, has_alloc, whole_units, per_unit = {}, {}, set(), {}, {}
            for (cl, ns, pod, node, res), u in sorted(units.items()):
                if (cl, ns, pod) not in running or u <= 0:
                    continue
                u = fb_int(u)
                nk = (cl, node)
                reps = replicas_cfg.get(node)
                if not reps:
                    nl = self._labels_at(meta, NODE_LABELS, t, {"node": node}
                                         if not self.cluster_emit else
                                         {"node": node, self.cluster_label: cl})
                    try:
                        reps = int((nl or {}).get("label_nvidia_com_gpu_replicas", "0"))
                    except ValueError:
                        reps = 0
                reps = max(1, int(reps))
                m = MIG_RESOURCE.match(res)
                if m:
                    g, gb = int(m.group(1)), int(m.group(2))
                    prof = "%dg.%dgb" % (g, gb)
                    best = [dv["cap"] - dv["res_v"] for dv in devs.values()
                            if dv["node"] == nk and dv["mig"] and dv["profile"] == prof
                            and dv["cap"]]
                    per = max(best) if best and max(best) > 0 else \
                        int(mig_cfg.get(prof, gb * 1024))
                    model = self.node_mig_model.get(nk + (prof,)) or self._node_model(cfg, nk, t)
                    gpu = u * step * 10 ** 6 * g // 7
                else:
                    us = usable.get(nk, 0)
                    whole = res != "nvidia_com_gpu_shared" and reps == 1
                    per = us if whole else us // reps
                    model = self._node_model(cfg, nk, t)
                    gpu = u * step * 10 ** 6 if whole else u * step * 10 ** 6 // reps
                    _acc(whole_units, (cl, ns, pod, node), u)
                per_unit[(cl, ns, pod, node, res)] = per
                ak = (cl, ns, pod, node, model)
                # a HAMi limit on the node is the allocation (its GPU units stay)
                _acc(alloc, ak, 0 if (cl, ns, pod, node) in limited else u * per * step)
                _acc(alloc_gpu, ak, gpu)
                has_alloc.add((cl, ns, pod, node))
            # -- B'. per-device allocation records: HAMi limits, DRA claims
            dev_alloc, pn_devs = {}, {}
            # DRA claims and HAMi limits: (device key, ns, pod, ak, MiB.s, GPU-us);
            # both name their device, so their rows stay on it; the (pod, node,
            # model) keeps the allocation only as a split weight
            claim_rows, claim_w = [], {}
            for key in sorted(devs):
                dev = devs[key]
                cl, node, model = key[0], dev["node"][1], dev["model"]
                for (ns, pod), lim in sorted(dev["limits"].items()):
                    # HAMi's limit series names its device (device_uuid); the
                    # GPU time is the request's, on the node (below)
                    ak = (cl, ns, pod, node, model)
                    _acc(claim_w, ak, lim * step)
                    dev_alloc[(key, ns, pod)] = lim * step
                    claim_rows.append((key, ns, pod, ak, lim * step, 0))
                groups = {}
                for idn, c in dev["claims"].items():
                    if idn not in dev["limits"]:
                        groups.setdefault(c, []).append(idn)
                for c, members in sorted(groups.items()):
                    members.sort()
                    if dev["cap"]:
                        a_mib = max(0, dev["cap"] - dev["res_v"])
                    elif not dev["mig"]:
                        a_mib = usable.get(dev["node"], 0)
                    elif dev["profile"] in mig_cfg:
                        a_mib = int(mig_cfg[dev["profile"]])
                    else:
                        sz = mig_profile_size(dev["profile"])
                        a_mib = sz[1] * 1024 if sz else 0
                    g = 7
                    if dev["mig"]:
                        sz = mig_profile_size(dev["profile"])
                        g = sz[0] if sz else 0
                    # Arithmetic: the claim's MiB split per step, each share x step
                    parts = [p * step for p in largest_remainder(a_mib, [1] * len(members))]
                    gparts = largest_remainder(step * 10 ** 6 * g // 7, [1] * len(members))
                    for (ns, pod), q, gq in zip(members, parts, gparts):
                        ak = (cl, ns, pod, node, model)
                        _acc(claim_w, ak, q)
                        dev_alloc[(key, ns, pod)] = q
                        claim_rows.append((key, ns, pod, ak, q, gq))
            claimed = {(r[0], r[1], r[2]) for r in claim_rows}
            # -- C. pod memory per device
            used_pn, pnode_devs, claim_used = {}, {}, {}
            for key in sorted(devs):
                dev = devs[key]
                cl = key[0]
                node = dev["node"][1]
                # a device query configured but silent here: device used is the
                # HAMi pods' sum, so their figures are estimated
                estimated = att == "device" or (dev_query and dev["devused"] is None and
                                                bool(dev["pods"]))
                if dev["unknown"]:
                    # no memory metrics: the pods seen are billed their allocation
                    members = sorted(dev["seen"])
                    qs = []
                    for ns, pod in members:
                        q = dev_alloc.get((key, ns, pod))
                        if q is None:
                            q = 0
                            for (c2, n2, p2, nd2, res), per in sorted(per_unit.items()):
                                m = MIG_RESOURCE.match(res)
                                if (c2, n2, p2, nd2) != (cl, ns, pod, node):
                                    continue
                                if dev["mig"] and m and "%sg.%sgb" % m.groups() == \
                                        dev["profile"] or not dev["mig"] and not m:
                                    q = per * step
                                    break
                        qs.append(q)
                    estimated = True
                elif att == "device" and dev["pods"]:
                    members = sorted(dev["pods"])
                    V = max(dev["pods"].values())
                    w = [1] * len(members)
                    if split == "allocation":
                        w = [sum(q for ak, q in list(alloc.items()) + list(claim_w.items())
                                 if ak[:4] == (cl, ns, pod, node))
                             for ns, pod in members]
                        if not any(w):
                            w = [1] * len(members)
                    qs = largest_remainder(V * step, w)
                else:
                    members = sorted(dev["pods"])
                    qs = [dev["pods"][m] * step for m in members]
                devused = dev["devused_v"]
                model = dev["model"]
                sum_q = 0
                teams_here = set()
                for (ns, pod), q in zip(members, qs):
                    if q <= 0:
                        continue
                    sum_q += q
                    team = self.team_at(cl, ns, pod, t)
                    teams_here.add(team)
                    mk = (team, cl, model, self._pid(model, t))
                    _acc_day(A["mem"], mk, day, q)
                    if estimated:
                        A["est"].add(mk)
                    _acc(A["pod_mem"], (cl, ns, pod), q)
                    ak = (cl, ns, pod, node, model)
                    if (key, ns, pod) in claimed:
                        claim_used[(key, ns, pod)] = q   # set against its claim
                    else:
                        _acc(used_pn, ak, q)
                        pd = pn_devs.setdefault(ak, {})
                        pd[key] = pd.get(key, 0) + q
                    pnode_devs.setdefault((cl, ns, pod, node), []).append(
                        (key, q, dev["mig"], team, model, (key, ns, pod) in dev_alloc))
                dev["sum_q"] = sum_q
                b = dev["gr"] if dev["gr"] is not None else dev["util"]
                if b is not None:
                    for team in teams_here:
                        bk = (team, cl, model)
                        _acc(A["busy"], bk, b)
                        _acc(A["busy_steps"], bk, 1)
                        _acc(A["busy_day"], bk + (day,), b)
                        _acc(A["busy_day_steps"], bk + (day,), 1)
                dev["ru_dev"] = 0
                if dev["cap"]:
                    cap_q, res_q = dev["cap"] * step, dev["res_v"] * step
                    unatt = max(0, devused * step - sum_q)
                    taken = res_q + unatt + sum_q
                    dev["rows"] = {"capacity": cap_q, "reserved": res_q, "unattributed": unatt,
                                   "excess": max(0, taken - cap_q),
                                   "fb_free": (dev["free"] or 0) * step}
                    dev["idle_q"] = max(0, cap_q - taken)
                else:
                    # capacity unknown: 0 in the reconciliation, its pods' bill is excess
                    dev["rows"] = {"excess": sum_q}
                    dev["idle_q"] = 0
            # -- D. reserved-unused, basis max
            # a DRA claim's or HAMi limit's on the device it names: out of that
            # device's idle, the rest that device's excess (specification: Arithmetic), before the
            # requests
            for key, ns, pod, ak, q_alloc, gq in claim_rows:
                cl, model = key[0], ak[4]
                ru = max(0, q_alloc - claim_used.get((key, ns, pod), 0))
                team = self.team_at(cl, ns, pod, t)
                tk = (team, cl, model)
                _acc(A["alloc"], tk, q_alloc)
                _acc(A["alloc_gpu"], tk, gq)
                _acc(A["waste"], tk, ru)
                pa = A["pod_alloc"].setdefault(ak, [0, 0, 0])
                pa[0] += q_alloc
                pa[1] += gq
                pa[2] += ru
                if basis == "max" and ru > 0:
                    _acc_day(A["ru_billed"], tk + (self._pid(model, t),), day, ru)
                    _acc(A["models"].setdefault((cl, model), dict.fromkeys(SUMMARY_FIELDS, 0)),
                         "reserved_unused_billed", ru)
                    dv = devs[key]
                    take = min(dv["idle_q"], ru)
                    dv["idle_q"] -= take
                    dv["ru_dev"] += ru
                    if ru > take:
                        _acc(A["excess_alloc"], (cl, ak[3], model), ru - take)
                        dv["rows"]["excess"] = dv["rows"].get("excess", 0) + ru - take
            for ak in sorted(alloc):
                cl, ns, pod, node, model = ak
                q_alloc = alloc[ak]
                # a request a HAMi limit replaced keeps its GPU time
                if q_alloc <= 0 and ak[:4] not in limited:
                    continue
                ru = max(0, q_alloc - used_pn.get(ak, 0))
                team = self.team_at(cl, ns, pod, t)
                tk = (team, cl, model)
                _acc(A["alloc"], tk, q_alloc)
                _acc(A["alloc_gpu"], tk, alloc_gpu.get(ak, 0))
                _acc(A["waste"], tk, ru)
                pa = A["pod_alloc"].setdefault(ak, [0, 0, 0])
                pa[0] += q_alloc
                pa[1] += alloc_gpu.get(ak, 0)
                pa[2] += ru
                if basis == "max" and ru > 0:
                    _acc_day(A["ru_billed"], tk + (self._pid(model, t),), day, ru)
                    _acc(A["models"].setdefault((cl, model), dict.fromkeys(SUMMARY_FIELDS, 0)),
                         "reserved_unused_billed", ru)
                    # the leftover's device: where the pod holds most memory
                    mine = pn_devs.get(ak, {})
                    target = min(mine, key=lambda k: (-mine[k], k)) if mine else None
                    for dk in sorted(k for k, dv in devs.items()
                                     if dv["node"] == (cl, node) and dv["model"] == model):
                        if target is None and devs[dk]["cap"]:
                            target = dk
                        take = min(devs[dk]["idle_q"], ru)
                        devs[dk]["idle_q"] -= take
                        devs[dk]["ru_dev"] += take
                        ru -= take
                        if ru == 0:
                            break
                    if ru:
                        _acc(A["excess_alloc"], (cl, node, model), ru)
                        if target is None:   # no device: the model's row only
                            _acc(A["models"][(cl, model)], "excess", ru)
                        else:
                            devs[target]["ru_dev"] += ru
                            devs[target]["rows"]["excess"] = \
                                devs[target]["rows"].get("excess", 0) + ru
            # -- anomalies (devices with their own allocation record are allocated)
            for (cl, ns, pod, node), lst in pnode_devs.items():
                lst = [x for x in lst if not x[5]]
                if (cl, ns, pod, node) not in has_alloc:
                    flagged = [("unallocated_use", x) for x in lst]
                else:
                    full = sorted((x for x in lst if not x[2]), key=lambda x: (-x[1], x[0][1]))
                    r = whole_units.get((cl, ns, pod, node), 0)
                    flagged = [("excess_devices", x) for x in full[r:]] if len(full) > r else []
                for kind, (dkey, q, _, team, model, _) in flagged:
                    device = dkey[1] + ("/" + dkey[2] if dkey[2] else "")
                    an = A["anom"].setdefault((kind, cl, ns, pod, team, node, device), {
                        "gpu_model": model, "first": t, "last": t, "mib_s": 0})
                    an["last"] = t
                    an["mib_s"] += q
            # -- E. device rows, idle / overhead
            for key, dev in devs.items():
                cl, model = key[0], dev["model"]
                mk = (cl, model)
                dk = (cl, key[1], key[2], dev["profile"], model, dev["node"][1])
                rows = [A["models"].setdefault(mk, dict.fromkeys(SUMMARY_FIELDS, 0)),
                        A["devices"].setdefault(dk, dict.fromkeys(SUMMARY_FIELDS, 0))]
                r = dict(dev["rows"], idle=dev["idle_q"], memory_used=dev["sum_q"])
                for f, q in r.items():
                    for row in rows:
                        row[f] = row.get(f, 0) + q
                rows[1]["reserved_unused_billed"] += dev["ru_dev"]
                if dev["cap"]:
                    A["idle_steps"].setdefault(dk, []).append(
                        (t, dev["idle_q"], (dev["free"] or 0) * step,
                         dev["devused"] is not None))
                pid = None
                for kind, q in (("idle_share", r["idle"]),
                                ("overhead_share", r.get("reserved", 0) +
                                 r.get("unattributed", 0))):
                    if q:
                        pid = pid or self._pid(model, t)
                        _acc_day(A["fleet"], (kind, cl, model, pid), day, q)
        return A

    def unit_price(self, price, caps):
        """(Fraction unit price per GB-hour, printed string, capacity_gb used)."""
        if price["unit"] == "GB-Hours":
            return Fraction(price["price"]), price["price"], None
        # the measured capacity first (a full GPU-hour costs the
        # price), capacity_gb only for a model never measured
        matching = [c for m, c in caps.items() if price["re"].search(m)]
        if matching:
            cap_gb = Fraction(max(matching) * 1048576, 10 ** 9)
        elif price["capacity_gb"]:
            cap_gb = Fraction(price["capacity_gb"])
        else:
            raise ScenarioError("no measured capacity for %s" % price["id"])
        s = round_half_even(Fraction(price["price"]) / cap_gb, 12)
        return Fraction(s), s, cap_gb

    def _line(self, cluster, model, kind, price, up, up_s, days, estimated=False):
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
            "estimated": bool(estimated),
            "days": [{"day": fmt_day(d), "mib_seconds": str(days[d]),
                      "gb_hours": round_half_even(mib_s_to_gbh(days[d]), 9),
                      "billed_cost": units_to_str(u, self.minor)}
                     for d, u in zip(dl, split)],
        }

    def expected(self, t_from=None, t_to=None, exclude=(), overrides=None, run=None):
        t_from = self.win_from if t_from is None else t_from
        t_to = self.win_to if t_to is None else t_to
        p0, p1 = month_bounds(self.period)
        if t_from < p0 or t_to > p1:
            raise ScenarioError("window %s..%s leaves period %s"
                                % (fmt_time(t_from), fmt_time(t_to), self.period))
        cfg = self.run_config(overrides)
        policy = cfg.get("idle_overhead", {}).get("policy", "platform")
        if policy not in ("platform", "proportional", "unbilled"):
            raise ScenarioError("bad idle_overhead.policy %r" % policy)
        platform = cfg.get("idle_overhead", {}).get("platform_team", "platform")
        A = self.simulate(t_from, t_to, cfg, exclude)
        byid = {p["id"]: p for p in self.prices}
        used_prices = {}

        def up_of(pid):
            if pid not in used_prices:
                used_prices[pid] = self.unit_price(byid[pid], A["caps"])
            return used_prices[pid]

        def line(team_key, kind, days, est=False):
            _, cluster, model, pid = team_key
            up, up_s, _ = up_of(pid)
            return self._line(cluster, model, kind, byid[pid], up, up_s, days, est)

        def sort_key(l):
            return (l["cluster"], l["gpu_model"], l["kind"], l["price_valid_from"])

        # invoice lines per team, by policy
        lines = {}
        for k, days in A["mem"].items():
            lines.setdefault(k[0], []).append(line(k, "memory_used", days, k in A["est"]))
        for k, days in A["ru_billed"].items():
            lines.setdefault(k[0], []).append(line(k, "reserved_unused", days))
        fleet = [line((None,) + k[1:], k[0], days) for k, days in A["fleet"].items()]
        fleet.sort(key=sort_key)
        if policy == "platform":
            for k, days in A["fleet"].items():
                lines.setdefault(platform, []).append(line((platform,) + k[1:], k[0], days))
        elif policy == "proportional":
            spread = {}
            for (kind, cl, model, pid), days in A["fleet"].items():
                for day, q in days.items():
                    ws = {}
                    for src in (A["mem"], A["ru_billed"]):
                        for (team, c2, m2, p2), dd in src.items():
                            if (c2, m2, p2) == (cl, model, pid) and dd.get(day, 0) > 0:
                                ws[team] = ws.get(team, 0) + dd[day]
                    teams = sorted(ws)
                    parts = largest_remainder(q, [ws[x] for x in teams]) if teams else [q]
                    for team, part in zip(teams or [platform], parts):
                        if part:
                            _acc_day(spread, (team, cl, model, pid, kind), day, part)
            for (team, cl, model, pid, kind), days in spread.items():
                lines.setdefault(team, []).append(line((team, cl, model, pid), kind, days))

        cat = {c["id"]: c for c in self.teams_cfg.get("catalogue", [])}

        def head(team):
            c = cat.get(team)
            return {"invoice_id": "GL-%s-%s" % (self.period, team),
                    "team_name": c.get("name", team) if c else team,
                    # the catalogue's, else teams.default_cost_center
                    "cost_center": (c.get("cost_center") if c else None)
                    or self.teams_cfg.get("default_cost_center")}

        def info(d, team):
            return [{"cluster": cl, "gpu_model": m, "mib_seconds": str(q),
                     "gb_hours": round_half_even(mib_s_to_gbh(q), 9)}
                    for (tm, cl, m), q in sorted(d.items()) if tm == team]

        anomalies = []
        for (kind, cl, ns, pod, team, node, device), an in sorted(A["anom"].items()):
            anomalies.append({
                "kind": kind, "cluster": cl, "namespace": ns, "pod": pod, "team": team,
                "node": node, "device": device, "gpu_model": an["gpu_model"],
                "first_seen": fmt_time(an["first"]), "last_seen": fmt_time(an["last"]),
                "mib_seconds": str(an["mib_s"]),
                "gb_hours": round_half_even(mib_s_to_gbh(an["mib_s"]), 9)})

        def blocks(team):
            alloc = info(A["alloc"], team)
            for a in alloc:
                g = A["alloc_gpu"][(team, a["cluster"], a["gpu_model"])]
                a["gpu_hours"] = round_half_even(Fraction(g, 3600 * 10 ** 6), 9)
                a["gpu_micro_seconds"] = str(g)
            comp = []
            for (tm, cl, m), s in sorted(A["busy"].items()):
                n = A["busy_steps"][(tm, cl, m)]
                if tm == team and n:
                    comp.append({"cluster": cl, "gpu_model": m, "device_steps": n,
                                 "busy_ppm_sum": s,
                                 "busy_ratio": round_half_even(Fraction(s, n * 10 ** 6), 6)})
            return {"waste": [w for w in info(A["waste"], team) if w["mib_seconds"] != "0"],
                    "allocated": alloc, "compute_indicator": comp,
                    "anomalies": [a for a in anomalies if a["team"] == team]}

        invoices, info_only = {}, {}
        info_teams = {k[0] for k in A["alloc"]} | {k[0] for k in A["busy"]} | \
            {a["team"] for a in anomalies}
        for team in sorted(set(lines) | info_teams):
            b = blocks(team)
            if team not in lines:
                info_only[team] = b
                continue
            ls = sorted(lines[team], key=sort_key)
            total = sum(to_units(l["amount"], self.minor) for l in ls)
            invoices[team] = dict(head(team), total=units_to_str(total, self.minor),
                                  lines=ls, **b)
        # memory-only view (older checks)
        teams = {}
        for team, inv in invoices.items():
            mem = [l for l in inv["lines"] if l["kind"] == "memory_used"
                   and l["mib_seconds"] != "0"]
            if mem:
                total = sum(to_units(l["amount"], self.minor) for l in mem)
                teams[team] = dict(head(team), total=units_to_str(total, self.minor),
                                   lines=mem)

        def gbh_row(row):
            out = {f: round_half_even(mib_s_to_gbh(row.get(f, 0)), 9) for f in SUMMARY_FIELDS}
            out["fb_free"] = round_half_even(mib_s_to_gbh(row.get("fb_free", 0)), 9)
            out["mib_seconds"] = {f: str(row.get(f, 0)) for f in SUMMARY_FIELDS + ("fb_free",)}
            return out
        summary = {
            "models": [dict({"cluster": c, "gpu_model": m}, **gbh_row(r))
                       for (c, m), r in sorted(A["models"].items())],
            "devices": [dict({"cluster": c, "uuid": u, "gpu_i_id": gi or None,
                              "gpu_i_profile": prof or None, "gpu_model": m, "node": n},
                             **gbh_row(r))
                        for (c, u, gi, prof, m, n), r in sorted(A["devices"].items())],
        }
        compute_days = []
        for (tm, cl, m, day), s in sorted(A["busy_day"].items()):
            n = A["busy_day_steps"][(tm, cl, m, day)]
            compute_days.append({"team": tm, "cluster": cl, "gpu_model": m, "day": fmt_day(day),
                                 "device_steps": n, "busy_ppm_sum": s,
                                 "busy_ratio": round_half_even(Fraction(s, n * 10 ** 6), 6)})
        prices_out = {}
        for pid, (up, up_s, cap_gb) in sorted(used_prices.items()):
            p = byid[pid]
            prices_out[pid] = {"model_pattern": p["pattern"], "unit": p["unit"],
                               "price": p["price"], "unit_price_per_gb_hour": up_s,
                               "capacity_gb": None if cap_gb is None else
                               round_half_even(cap_gb, 9),
                               # FOCUS SkuPriceId part: pattern@valid_from
                               "price_key": "%s@%s" % (p["pattern"], fmt_time(p["valid_from"]))}
        ms = cfg.get("memory_source", {})
        return {
            "scenario": self.name, "run": run,
            "config": {"attribution": ms.get("attribution", "process"),
                       "split": ms.get("split", "even"),
                       "basis": cfg.get("billing", {}).get("basis", "used"),
                       "policy": policy, "platform_team": platform,
                       "identity_labels": cfg.get("collection", {}).get("identity_labels",
                                                                         "auto")},
            "period": self.period,
            "period_start": fmt_time(p0), "period_end": fmt_time(p1),
            "window": {"from": fmt_time(t_from), "to": fmt_time(t_to)},
            "currency": self.currency, "minor_units": self.minor,
            "step_seconds": self.step,
            "invoices": invoices, "info_only": info_only,
            "teams": teams, "fleet": fleet,
            "anomalies": anomalies, "compute_days": compute_days,
            "prices": prices_out, "summary": summary,
            "measured_capacity_mib": dict(sorted(A["caps"].items())),
            "pod_totals": {"%s/%s/%s" % k: str(v) for k, v in sorted(A["pods"].items()) if v},
            "pod_memory": {"%s/%s/%s" % k: str(v) for k, v in sorted(A["pod_mem"].items())},
            "pod_allocation": {"/".join(k): [str(x) for x in v]
                               for k, v in sorted(A["pod_alloc"].items())},
        }

    # ---- independent figures, summed straight from the scenario
    def _gpus(self):
        for n in self.scn.get("nodes", []):
            gaps = [(parse_time(g["from"]), parse_time(g["to"])) for g in n.get("gaps", [])]
            for g in n.get("gpus", []):
                yield n, g, gaps

    def direct_pod_totals(self, t_from, t_to, identity=None):
        """Raw FB_USED MiB.s per cluster/namespace/pod as the scenario says the
        exporter reports it (before any attribution): own memory (exclusive,
        process), the whole-GPU value (vgpu copies; the visible pod in
        default mode) and, under identity "auto", the exporter pod on series
        without a workload of an honorLabels-false node."""
        identity = identity or self.identity_mode
        out = {}

        def add(p, q):
            key = "%s/%s/%s" % (self.cluster_name, p["namespace"], p["name"])
            out[key] = out.get(key, 0) + q

        hami = self.config.get("memory_source", {}).get("query") == "hami_memory"
        for n, g, gaps in self._gpus():
            exporter = n.get("scrape", {}).get("mode") == "exported"
            if identity == "exported" and not exporter:
                continue
            mode = g.get("mode", "exclusive")
            occ = self._occupants(g)
            if hami != bool(g.get("hami")) or not g.get("fb", True) and not hami:
                continue   # not read by the memory source
            for t in self._steps(t_from, t_to):
                if any(lo <= t < hi for lo, hi in gaps):
                    continue
                active, whole = self._gpu_state(g, occ, t)
                if hami:       # HAMi: each container's own bytes, a pod's max
                    per = {}
                    for o, v in active:
                        k = id(o["pod"])
                        mib = div_half_even(v * 1048576 + o["hami_extra_bytes"], 1048576)
                        per[k] = (o["pod"], max(per.get(k, (None, mib))[1], mib))
                    for p, mib in per.values():
                        add(p, mib * self.step)
                    continue
                if mode in ("exclusive", "process", "process_podfree"):
                    for o, v in active:
                        add(o["pod"], v * self.step)
                elif mode == "default" and active:
                    add(active[0][0]["pod"], whole * self.step)
                elif mode == "vgpu":
                    for o, _ in active:
                        add(o["pod"], whole * self.step)
                if exporter and identity == "auto" and (mode in ("process", "process_podfree")
                                                        or not active):
                    add(self.pods[n["scrape"]["exporter_pod"]], whole * self.step)
        return {k: str(v) for k, v in sorted(out.items()) if v}

    def direct_busy(self, uuid, gi, t_steps, util=False):
        """Sum of a device's busy ppm over the given step instants, read from
        the scenario's busy spec (GPU_UTIL granularity when util)."""
        for n, g, gaps in self._gpus():
            if g["uuid"] == uuid and str((g.get("mig") or {}).get("id", "")) == gi:
                tot = 0
                for t in t_steps:
                    ppm = value_at(g["busy"], (t - self.start) // self.step)
                    tot += (ppm // 10000) * 10000 if util else ppm
                return tot
        raise ScenarioError("no device %s/%s" % (uuid, gi))

    def occupancy(self, pod_key):
        """[(node, gpu, occupant)] of a pod (namespace/name)."""
        out = []
        for n, g, gaps in self._gpus():
            for o in self._occupants(g):
                if "%s/%s" % (o["pod"]["namespace"], o["pod"]["name"]) == pod_key:
                    out.append((n, g, o))
        return out


def load_scenario(path):
    with open(path, encoding="utf-8") as f:
        scn = json.load(f)
    return Cluster(scn, os.path.dirname(os.path.abspath(path)))


def self_check(cl, exp):
    """Cross-check the reference attribution against the scenario and the
    arithmetic invariants; returns a list of problems."""
    problems = []
    w0, w1 = parse_time(exp["window"]["from"]), parse_time(exp["window"]["to"])
    direct = cl.direct_pod_totals(w0, w1, exp.get("config", {}).get("identity_labels"))
    if direct != exp["pod_totals"]:
        problems.append("per-pod sample totals %s differ from the scenario's occupants %s"
                        % (exp["pod_totals"], direct))
    minor = exp["minor_units"]
    for team, inv in list(exp["teams"].items()) + list(exp.get("invoices", {}).items()):
        tot = sum(to_units(line["amount"], minor) for line in inv["lines"])
        if units_to_str(tot, minor) != inv["total"]:
            problems.append("%s: total mismatch" % team)
    all_lines = [l for inv in exp.get("invoices", {}).values() for l in inv["lines"]]
    for line in all_lines + exp["fleet"]:
        if sum(int(d["mib_seconds"]) for d in line["days"]) != int(line["mib_seconds"]):
            problems.append("daily MiB.s do not sum: %s" % line)
        if sum(to_units(d["billed_cost"], minor) for d in line["days"]) != \
                to_units(line["amount"], minor):
            problems.append("daily billed cost does not sum: %s" % line)
    # reconciliation per model, exact MiB.s:
    #   capacity = used + reserved_unused billed + reserved + unattributed + idle - excess
    #   sum of invoice lines = capacity + excess (platform, proportional) or
    #   = capacity + excess - idle - overhead (unbilled)
    policy = exp.get("config", {}).get("policy", "platform")
    for m in exp["summary"]["models"]:
        q = {f: int(v) for f, v in m["mib_seconds"].items()}
        rhs = q["memory_used"] + q["reserved_unused_billed"] + q["reserved"] + \
            q["unattributed"] + q["idle"] - q["excess"]
        if rhs != q["capacity"]:
            problems.append("%s/%s: capacity %d != billed + idle + overhead - excess %d"
                            % (m["cluster"], m["gpu_model"], q["capacity"], rhs))
        billed = sum(int(l["mib_seconds"]) for l in all_lines
                     if (l["cluster"], l["gpu_model"]) == (m["cluster"], m["gpu_model"]))
        want = q["capacity"] + q["excess"]
        if policy == "unbilled":
            want -= q["idle"] + q["reserved"] + q["unattributed"]
        if "invoices" in exp and billed != want:
            problems.append("%s/%s: invoice lines %d MiB.s, capacity + excess (- idle - "
                            "overhead if unbilled) %d" % (m["cluster"], m["gpu_model"],
                                                          billed, want))
    # every device row adds up too (Arithmetic: excess per device)
    for d in exp["summary"]["devices"]:
        q = {f: int(v) for f, v in d["mib_seconds"].items()}
        if q["capacity"] + q["excess"] != q["memory_used"] + q["reserved_unused_billed"] + \
                q["reserved"] + q["unattributed"] + q["idle"]:
            problems.append("device %s: capacity + excess != billed + reserved + unattributed + "
                            "idle (%s)" % (d["uuid"], q))
    for c in exp.get("compute_days", []):
        if Fraction(c["busy_ratio"]) > 1:
            problems.append("compute indicator above 1: %s" % c)
    return problems


def generate(scenario_path, outdir):
    cl = load_scenario(scenario_path)
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "data.om"), "w", encoding="utf-8", newline="\n") as f:
        nlines = cl.write_openmetrics(f)
    with open(os.path.join(outdir, "prices.csv"), "w", encoding="utf-8", newline="") as f:
        f.write(cl.prices_csv())
    out = {}
    for run in [None] + cl.runs:
        name = run["name"] if run else None
        exp = cl.expected(overrides=run["config"] if run else None, run=name)
        problems = self_check(cl, exp)
        if problems:
            raise ScenarioError("self-check failed%s:\n  " % (" (run %s)" % name if name else "")
                                + "\n  ".join(problems))
        exp["data_lines"] = nlines
        suffix = "-" + name if name else ""
        with open(os.path.join(outdir, "config%s.json" % suffix), "w", encoding="utf-8") as f:
            json.dump(cl.run_config(run["config"] if run else None), f, indent=2)
            f.write("\n")
        with open(os.path.join(outdir, "expected%s.json" % suffix), "w", encoding="utf-8") as f:
            json.dump(exp, f, indent=2)
            f.write("\n")
        out[name] = exp
    return cl, out[None], out


# The test runner's cache of generated scenarios (GL_TEST_CACHE, a folder of
# the build tree): the files generate() writes, kept under a digest of this
# generator's source and the scenario, so an unchanged scenario is generated
# once per build tree and a change to either makes it again.
GENERATED = re.compile(r"^(data\.om|prices\.csv|(config|expected)(-.+)?\.json)$")


def _cache_path(scenario_path):
    root = os.environ.get("GL_TEST_CACHE")
    if not root:
        return None
    h = hashlib.sha256()
    for p in (os.path.abspath(__file__), scenario_path):
        with open(p, "rb") as f:
            h.update(f.read())
        h.update(b"\0")
    return os.path.join(root, "gen", h.hexdigest())


def cache_fetch(scenario_path, outdir):
    d = _cache_path(scenario_path)
    if d is None or not os.path.isdir(d):
        return False
    os.makedirs(outdir, exist_ok=True)
    for name in os.listdir(d):
        shutil.copyfile(os.path.join(d, name), os.path.join(outdir, name))
    return True


def cache_store(scenario_path, outdir):
    d = _cache_path(scenario_path)
    if d is None or os.path.isdir(d):
        return
    os.makedirs(os.path.dirname(d), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(d))
    try:
        for name in os.listdir(outdir):
            if GENERATED.match(name):
                shutil.copyfile(os.path.join(outdir, name), os.path.join(tmp, name))
        os.rename(tmp, d)
    except OSError:
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        sys.stderr.write("usage: gencluster.py SCENARIO.json OUTDIR\n")
        return 2
    if cache_fetch(argv[1], argv[2]):
        sys.stderr.write("gencluster: %s: from the test cache\n" % argv[2])
        return 0
    try:
        _, exp, runs = generate(argv[1], argv[2])
        cache_store(argv[1], argv[2])
    except (ScenarioError, KeyError, ValueError, OSError) as e:
        sys.stderr.write("gencluster: %s: %s%s\n" % (argv[1], type(e).__name__ + ": "
                                                       if isinstance(e, KeyError) else "", e))
        return 1
    sys.stderr.write("gencluster: %s: %d OpenMetrics lines, %d invoices, %d runs\n"
                     % (argv[2], exp["data_lines"], len(exp["invoices"]), len(runs) - 1))
    return 0


# ---- work counters (cost per unit of work) ----------------------------------
#
# Scenario key "work": counters of an inference server or a training job,
# one series per entry, over the pod's lifetime, labelled namespace and pod
# (as a pod scrape relabels them) plus "labels":
#   {"pod": "team-a/vllm-0", "metric": "vllm:prompt_tokens_total",
#    "labels": {"model_name": "llama"},
#    "per_step": [120, 80, 95],       the increase at each step after the
#                                     first, cycled (whole numbers)
#    "start_value": 1000,             the first sample's value (default 0)
#    "reset_at": T,                   the server restarts: the sample at T is
#                                     that step's increase alone (from 0)
#    "gap": {"from": T, "to": T},     no sample in [from, to): the counter
#                                     goes on, the next sample carries it
#    "fraction": true,                every value + 0.5 (a counter a bill
#                                     must refuse)
#    "histogram": true}               metric is a histogram's NAME_sum (TGI's
#                                     token lengths): written as the family
#                                     NAME with NAME_bucket{le="+Inf"} and
#                                     NAME_count (one observation per step,
#                                     restarting with the sum) beside it
# The model below works from these parameters alone: every step's increase
# is work done at that step; it is seen at the step's own sample, or at the
# first sample after a gap; the hour is that sample's.

def _work_steps(cl, w):
    p = cl.pods[w["pod"]]
    lo, hi, _ = cl.pod_window(p)
    gap = w.get("gap")
    g0, g1 = (parse_time(gap["from"]), parse_time(gap["to"])) if gap else (0, 0)
    reset = parse_time(w["reset_at"]) if w.get("reset_at") else None
    inc = w["per_step"]
    for k, t in enumerate(cl._steps(lo, hi)):
        yield k, t, (inc[(k - 1) % len(inc)] if k else 0), g0 <= t < g1, t == reset


def work_series(cl):
    """[(metric, labels tuple, {t: value})] of the scenario's work counters."""
    out = []
    for w in cl.scn.get("work", []):
        ns, pod = w["pod"].split("/")
        labels = (("namespace", ns), ("pod", pod)) + tuple(sorted(w.get("labels", {}).items()))
        if cl.cluster_emit:
            labels += ((cl.cluster_label, cl.cluster_name),)
        v, samples = int(w.get("start_value", 0)), {}
        for k, t, inc, in_gap, reset in _work_steps(cl, w):
            v = inc if reset else v + inc
            if not in_gap:
                samples[t] = v + Fraction(1, 2) if w.get("fraction") else v
        out.append((w["metric"], labels, samples))
    return out


def _histogram_counts(cl, w):
    """{t: observations} of a histogram entry: one per step after the first,
    from 1 again at its restart, no sample in its gap (as its _sum)."""
    counts, c = {}, 0
    for k, t, _, in_gap, reset in _work_steps(cl, w):
        c = 1 if reset else c + (1 if k else 0)
        if not in_gap:
            counts[t] = c
    return counts


def write_work_counters(cl, f):
    """The work counters as OpenMetrics counters (histograms for entries
    with "histogram"); the number of samples."""
    n, done = 0, set()
    for w, (metric, labels, samples) in zip(cl.scn.get("work", []), work_series(cl)):
        hist = bool(w.get("histogram"))
        if hist and not metric.endswith("_sum"):
            raise ScenarioError("work %s: a histogram entry names NAME_sum" % metric)
        fam = metric[:-len("_sum")] if hist else \
            metric[:-len("_total")] if metric.endswith("_total") else metric
        if fam not in done:
            kind = "histogram" if hist else "counter" if metric.endswith("_total") else "unknown"
            f.write("# HELP %s Units of work (scenario).\n# TYPE %s %s\n" % (fam, fam, kind))
            done.add(fam)
        lab = ",".join('%s="%s"' % (k, esc(v)) for k, v in labels)
        if hist:
            counts = _histogram_counts(cl, w)
            for t in sorted(samples):
                f.write('%s_bucket{%s,le="+Inf"} %d %d\n%s_count{%s} %d %d\n'
                        % (fam, lab, counts[t], t, fam, lab, counts[t], t))
                f.write("%s_sum{%s} %s %d\n" % (fam, lab, samples[t], t))
                n += 3
            continue
        head = metric + "{" + lab + "}"
        for t in sorted(samples):
            v = samples[t]
            f.write("%s %s %d\n" % (head, str(float(v)) if isinstance(v, Fraction) else v, t))
            n += 1
    return n


def work_expected(cl, t_from, t_to):
    """{(cluster, namespace, pod, metric): {hour: units}} from the model."""
    out = {}
    for w in cl.scn.get("work", []):
        if w.get("fraction"):
            continue
        ns, pod = w["pod"].split("/")
        key = (cl.cluster_name, ns, pod, w["metric"])
        carried = 0
        for k, t, inc, in_gap, _ in _work_steps(cl, w):
            carried += inc
            if in_gap:
                continue   # done, seen at the next sample
            if t_from <= t < t_to:
                h = t - t % 3600
                out.setdefault(key, {})
                out[key][h] = out[key].get(h, 0) + carried
            carried = 0
    return out


def unit_cost_expected(cl, t_from, t_to, units_of):
    """Per workload (cluster, namespace, kind, name): memory GB-hours (9
    decimals), cost of memory used (minor units, one rounding per workload:
    one model and price in the scenario) and per unit word its units and the
    cost per scale units (half-even to the minor unit). units_of maps a
    metric to its unit word."""
    scale = {"tokens": 10 ** 6, "requests": 1000, "inferences": 1000}
    used = cl.direct_pod_totals(t_from, t_to)
    if len(cl.prices) != 1:
        raise ScenarioError("unit_cost_expected: one price entry only")
    price = Fraction(cl.prices[0]["price"])

    def wl(ns, pod):
        o = cl.pods[ns + "/" + pod].get("owner")
        if o and o["kind"] == "ReplicaSet" and re.search(r"-[bcdfghjklmnpqrstvwxz2456789]{6,10}$",
                                                         o["name"]):
            return (cl.cluster_name, ns, "Deployment", o["name"].rsplit("-", 1)[0])
        return (cl.cluster_name, ns, o["kind"], o["name"]) if o else \
            (cl.cluster_name, ns, "Pod", pod)

    rows = {}
    for key, mib_s in used.items():
        _, ns, pod = key.split("/")
        r = rows.setdefault(wl(ns, pod), {"mib_s": 0, "units": {}})
        r["mib_s"] += int(mib_s)
    for (_, ns, pod, metric), hours in work_expected(cl, t_from, t_to).items():
        r = rows.setdefault(wl(ns, pod), {"mib_s": 0, "units": {}})
        u = units_of[metric]
        r["units"][u] = r["units"].get(u, 0) + sum(hours.values())
    out = {}
    for k, r in rows.items():
        cost = to_units(round_half_even(mib_s_to_gbh(r["mib_s"]) * price, cl.minor), cl.minor)
        per = {u: (n, units_to_str(div_half_even(cost * scale.get(u, 1), n), cl.minor)
                   if n else None) for u, n in r["units"].items()}
        out[k] = {"gb_hours": round_half_even(mib_s_to_gbh(r["mib_s"]), 9),
                  "cost": units_to_str(cost, cl.minor), "units": per}
    return out


def unit_cost_with_shares(cl, exp, t_from, t_to, base):
    """base (unit_cost_expected) with each workload's cost plus its share of
    its team's idle and overhead lines in the generator's expected invoices
    exp: per team, amount × the workload's memory used / the team's,
    half-even to the minor unit; the costs per unit again of that."""
    scale = {"tokens": 10 ** 6, "requests": 1000, "inferences": 1000}
    team_amount, team_used, wl_team = {}, {}, {}
    for team, inv in exp["invoices"].items():
        for l in inv["lines"]:
            if l["kind"] in ("idle_share", "overhead_share"):
                team_amount[team] = team_amount.get(team, 0) + to_units(l["amount"], cl.minor)
            elif l["kind"] == "memory_used":
                team_used[team] = team_used.get(team, 0) + int(l["mib_seconds"])
    for key, mib_s in cl.direct_pod_totals(t_from, t_to).items():
        c, ns, pod = key.split("/")
        o = cl.pods[ns + "/" + pod].get("owner")
        kind, name = ("Pod", pod) if not o else \
            ("Deployment", o["name"].rsplit("-", 1)[0]) if o["kind"] == "ReplicaSet" else \
            (o["kind"], o["name"])
        team = cl.team_at(c, ns, pod, t_from)
        d = wl_team.setdefault((c, ns, kind, name), {})
        d[team] = d.get(team, 0) + int(mib_s)
    out = {}
    for k, v in base.items():
        with_ = to_units(v["cost"], cl.minor) + sum(
            div_half_even(team_amount.get(t, 0) * m, team_used[t])
            for t, m in wl_team.get(k, {}).items() if team_used.get(t))
        out[k] = (units_to_str(with_, cl.minor),
                  {u: units_to_str(div_half_even(with_ * scale.get(u, 1), n), cl.minor)
                   for u, (n, _) in v["units"].items() if n})
    return out


# ---- advice: an independent model of `gpuledger advise` -------------------
# Worked from the scenario itself (its occupants, requests and GPUs), not
# from the engine's tables: exclusive-mode GPUs, one occupant per device at
# a time, GB-Hours prices. Lines are keyed as the command keys them:
# (cluster, namespace, workload kind, workload, GPU model, MIG profile,
# allocation MiB); a workload is the pod's "owner", else the pod ("Pod").

ADVICE_BUCKET_MIB = 1024


def advice_allocation(cl, pod, gpu):
    """(MiB, millionths of a GPU) a pod's request allocates on its node, as
    the engine's allocation rules say (module docstring)."""
    node = next(n for n in cl.scn["nodes"] if n["name"] == pod["node"])
    for res, units in pod.get("requests", {}).items():
        if res == "nvidia.com/gpu":
            full = next(g for g in node["gpus"] if not g.get("mig"))
            return units * (full["capacity_mib"] - full["reserved_mib"]), units * 10 ** 6
        sz = mig_profile_size(res[len("nvidia.com/mig-"):]) if res.startswith(
            "nvidia.com/mig-") else None
        if sz:
            prof = res[len("nvidia.com/mig-"):]
            mib = max(g["capacity_mib"] - g["reserved_mib"] for g in node["gpus"]
                      if g.get("mig", {}).get("profile") == prof)
            return units * mib, units * (cl.step * 10 ** 6 * sz[0] // 7) // cl.step
    raise ScenarioError("advice model: pod %s/%s has no GPU request"
                        % (pod["namespace"], pod["name"]))


def advice_steps(cl, t_from, t_to):
    """Per (occupant pod, gpu, t) the MiB it held (steps with memory only)."""
    for n in cl.scn["nodes"]:
        for g in n["gpus"]:
            if g.get("mode", "exclusive") != "exclusive":
                raise ScenarioError("advice model: exclusive GPUs only")
            for o in cl._occupants(g):
                p = o["pod"]
                lo, hi, _ = cl.pod_window(p)
                for t in cl._steps(max(t_from, o["from"], lo), min(t_to, o["to"], hi)):
                    used = value_at(o["used"], (t - cl.start) // cl.step)
                    if used > 0:
                        yield n, g, p, t, used


def advice_price_amount(cl, per_price):
    """Σ over price rows of round-half-even(GB-hours × price), each row once."""
    total = 0
    for pid, mib_s in per_price.items():
        price = next(p for p in cl.prices if p["id"] == pid)
        if price["unit"] != "GB-Hours":
            raise ScenarioError("advice model: GB-Hours prices only")
        total += to_units(round_half_even(mib_s_to_gbh(mib_s) * Fraction(price["price"]),
                                          cl.minor), cl.minor)
    return total


def advice_expected(cl, t_from, t_to, headroom=10, replicas=None):
    """{"lines": {key: {...}}, "nodes": {(cluster, node, model): {...}}} as
    `gpuledger advise --format json` must give them for [t_from, t_to)."""
    replicas = replicas or {}
    sizes = set()  # (model, profile, capacity) of the fleet's devices
    for n in cl.scn["nodes"]:
        for g in n["gpus"]:
            sizes.add((g["model"], g.get("mig", {}).get("profile", ""), g["capacity_mib"]))
    sizes = sorted(sizes)
    lines, node_hours = {}, {}
    for n, g, p, t, used in advice_steps(cl, t_from, t_to):
        o = p.get("owner")
        wk, wn = (o["kind"], o["name"]) if o else ("Pod", p["name"])
        alloc, ugpu = advice_allocation(cl, p, g)
        prof = g.get("mig", {}).get("profile", "")
        key = (cl.cluster_name, p["namespace"], wk, wn, g["model"], prof, alloc)
        ln = lines.setdefault(key, {"team": cl.team_at(cl.cluster_name, p["namespace"],
                                                       p["name"], t),
                                    "node": n["name"], "capacity": g["capacity_mib"],
                                    "ugpu": ugpu, "peak": 0, "steps": [], "pods": set()})
        ln["peak"] = max(ln["peak"], used)
        ln["steps"].append((t, used))
        ln["pods"].add(p["name"])
        if not prof:
            nh = node_hours.setdefault((cl.cluster_name, n["name"], g["model"],
                                        g["capacity_mib"]), {}).setdefault(t - t % 3600, {})
            k = (p["name"], g["uuid"])
            nh[k] = max(nh.get(k, 0), used)
    out = {"lines": {}, "nodes": {}}
    for key, ln in lines.items():
        cl_, ns, wk, wn, model, prof, alloc = key
        vals = sorted(u for _, u in ln["steps"])
        rank = -(-99 * len(vals) // 100)  # ⌈0.99 N⌉
        p99 = min((vals[rank - 1] // ADVICE_BUCKET_MIB + 1) * ADVICE_BUCKET_MIB, ln["peak"])
        need = -(-ln["peak"] * (100 + headroom) // 100)
        best = None
        if ln["ugpu"] <= 10 ** 6:
            full = max([c for m, pr, c in sizes if m == model and not pr] or [0])
            cands = [("mig", pr, m, c) for m, pr, c in sizes if pr and m == model]
            reps = replicas.get(ln["node"], 0)
            if not prof and reps > 1 and full:
                cands.append(("time-slicing share", "1/%d of a GPU on %s" % (reps, ln["node"]),
                              model, full // reps))
            cands += [("gpu model", m, m, c) for m, pr, c in sizes if not pr and m != model]
            for c in cands:
                if need <= c[3] < alloc and (best is None or c[3] < best[3]):
                    best = c
        rec = None
        if best:
            held, to = {}, {}
            for t, _ in ln["steps"]:
                _acc(held, cl._pid(model, t), alloc * cl.step)
                _acc(to, cl._pid(best[2], t), best[3] * cl.step)
            rec = {"kind": best[0], "name": best[1], "gpu_model": best[2], "mib": best[3],
                   "saving": units_to_str(advice_price_amount(cl, held)
                                          - advice_price_amount(cl, to), cl.minor)}
        out["lines"][key] = {"team": ln["team"], "pods": len(ln["pods"]), "peak_mib": ln["peak"],
                             "p99_bound_mib": p99, "steps": len(vals), "need_mib": need,
                             "recommendation": rec}
    for nk, hours in node_hours.items():
        cl_, node, model, cap = nk
        in_use = bound_sum = 0
        freed = {}
        for h, peaks in hours.items():
            devs = len({u for _, u in peaks})
            need = -(-sum(peaks.values()) * (100 + headroom) // 100)
            bound = min(max(1, -(-need // cap)), devs)
            in_use += devs
            bound_sum += bound
            if bound < devs:
                _acc(freed, cl._pid(model, h), (devs - bound) * cap * 3600)
        out["nodes"][(cl_, node, model)] = {
            "gpu_hours_in_use": in_use, "lower_bound_gpu_hours": bound_sum,
            "saving": units_to_str(advice_price_amount(cl, freed), cl.minor)}
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv))
