#!/usr/bin/env python3
"""gpuledger against the real dcgm-exporter / HAMi captures.

Usage: python3 tests/integration/real_fixtures.py --bin build/gpuledger
                 [--fixtures DIR] [--work DIR] [--keep]

Each capture in DIR (default tests/fixtures/real, see its README for the sources)
is turned into OpenMetrics: its verbatim sample lines (label sets and values
unchanged, plus a `cluster` label named after the file) repeated every 60 s
for 3 hours, with minimal kube-state-metrics series for the pods the capture
names (Running phase, a GPU request on node = Hostname: nvidia_com_gpu, or
nvidia_com_mig_<profile> on MIG instances). Everything is backfilled into one
TSDB served by one real Prometheus (--query.lookback-delta=59s); the engine
then runs `collect`, `summary --format json`, `invoice --format json` and
`check --at` once per configuration:

  main  every dcgm capture except MPS; memory_source fb_used, process mode;
        allocation.model_capacity_mib for the A800 (configured-capacity rule)
  mps   the MPS capture; memory_source attribution "device" (copies split)
  hami  the HAMi vGPUmonitor capture; memory_source = the pre-2.9 metric
        names (fixtures/hami_vgpumonitor.promql), bytes, podnamespace/podname/
        deviceuuid labels

Each run only sees its own clusters (the query files are copied into the work
directory with ${cluster_selector} set to those clusters). The expected
figures are computed here from the capture values x 180 steps x 60 s, with
The specification's "Missing data" rule applied by hand.

Prints one line per check, "ok - NAME" or "not ok - NAME: REASON", and
otherwise only "# ..." comments; exits 1 when any check failed.
"""

import json
import os
import re
import shutil
import sys
import time
import uuid as uuidlib
from decimal import Decimal
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import harness  # noqa: E402

DEFAULT_FIXTURES = os.path.join(REPO, "tests", "fixtures", "real")

T0 = 1791158400            # 2026-10-05T00:00:00Z
STEP = 60
NSTEPS = 180               # 3 hours
T1 = T0 + NSTEPS * STEP
PERIOD = "2026-10"
ENGINE_TIMEOUT = 60

USED, FREE, RESERVED = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED"
GR, UTIL = "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL"
HAMI_USED, HAMI_HOST = "vGPU_device_memory_usage_in_bytes", "HostGPUMemoryUsage"

# judgement: the A800 is an 80 GB card (81920 MiB), USED+FREE is 692 MiB short
MODEL_CAPACITY = {"NVIDIA A800-SXM4-80GB": 81920}


def tail(text, n=500):
    return harness.tail(text, n)


def fmt_time(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def gbh(mib_s):
    """MiB.s -> GB-hours, 9 decimals half-even (interfaces.md)."""
    f = Fraction(int(mib_s) * 1048576, 3600 * 10 ** 9)
    q = f * 10 ** 9
    n, r = divmod(q.numerator, q.denominator)
    if 2 * r > q.denominator or (2 * r == q.denominator and n % 2):
        n += 1
    return "%d.%09d" % divmod(n, 10 ** 9)


def dec(s):
    try:
        return Decimal(str(s))
    except Exception:
        return None


def half_even_div(a, b):
    n, r = divmod(a, b)
    if 2 * r > b or (2 * r == b and n % 2):
        n += 1
    return n


def largest_remainder(total, weights, keys):
    """floor shares + largest remainder, ties by ascending key."""
    s = sum(weights)
    parts = [total * w // s for w in weights]
    rem = total - sum(parts)
    order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % s), keys[i]))
    for i in order[:rem]:
        parts[i] += 1
    return parts


# ---------------------------------------------------------------- captures

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def parse_labels(text):
    out, pos = [], 0
    text = text or ""
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            if text[pos:].strip() in ("", ","):
                break
            raise ValueError("bad label text at %r" % text[pos:pos + 40])
        out.append((m.group(1), m.group(2)))
        pos = m.end()
    return out


class Capture:
    def __init__(self, path):
        self.path = path
        self.file = os.path.basename(path)
        self.cluster = re.sub(r"\.prom$", "", self.file)
        self.samples = []       # (family, [(label, raw value)], value text)
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, start=1):
                line = line.rstrip("\n")
                if not line.strip() or line.startswith("#"):
                    continue
                m = LINE.match(line)
                if not m:
                    raise ValueError("%s:%d: cannot parse %r" % (self.file, n, line[:80]))
                float(m.group(3))
                self.samples.append((m.group(1), parse_labels(m.group(2)), m.group(3)))


def identity(labels, ns_label="namespace", pod_label="pod"):
    """(namespace, pod) of a series in identity mode auto; empty = absent."""
    d = dict(labels)
    ens, epod = d.get("exported_" + ns_label) or None, d.get("exported_" + pod_label) or None
    if epod:
        return (ens, epod) if ens else None
    ns, pod = d.get(ns_label) or None, d.get(pod_label) or None
    return (ns, pod) if ns and pod else None


class Device:
    def __init__(self, cluster, uuid, gid):
        self.cluster, self.uuid, self.gid = cluster, uuid, gid
        self.profile = ""
        self.model = None
        self.host = None
        self.used_dev = None    # series without workload identity (max), MiB
        self.free = None
        self.reserved = None
        self.pods = {}          # (ns, pod) -> MiB (max over duplicates)
        self.compute_pods = set()
        self.busy = None        # preferred busy ratio
        self.busy_src = None
        self.extra = {}         # label -> value of interest (DCGM_FI_PROCESS_NAME)

    @property
    def key(self):
        return (self.cluster, self.uuid, self.gid)

    @property
    def mig(self):
        return self.gid != ""

    def name(self):
        return "%s %s%s" % (self.cluster, self.uuid, "/" + self.gid if self.gid else "")


class Run:
    """One engine configuration over a set of captures, with the figures it
    must produce."""

    def __init__(self, name, captures, mode="process", memory=None, capacity=None,
                 ksm=True):
        self.name = name
        self.captures = captures
        self.mode = mode
        self.memory = memory or {"query": "fb_used", "unit": "MiB"}
        self.capacity = capacity or {}
        self.ksm = ksm
        self.devices = {}
        self.requests = {}      # (cluster, ns, pod) -> (node, resource)
        self.build()

    # ---- reading the captures the way the specification (Arithmetic) says
    def device(self, cluster, labels):
        d = dict(labels)
        lab = self.memory.get("labels", {})
        uuid = d.get(lab.get("uuid", "UUID")) or d.get("UUID")
        if not uuid:
            return None
        gid = d.get("GPU_I_ID", "")
        k = (cluster, uuid, gid)
        dev = self.devices.get(k)
        if dev is None:
            dev = self.devices[k] = Device(cluster, uuid, gid)
        dev.profile = dev.profile or d.get("GPU_I_PROFILE", "")
        dev.model = dev.model or d.get("modelName") or None
        dev.host = dev.host or d.get("Hostname") or d.get("hostname") or None
        if "DCGM_FI_PROCESS_NAME" in d:
            dev.extra["DCGM_FI_PROCESS_NAME"] = d["DCGM_FI_PROCESS_NAME"]
        return dev

    def build(self):
        hami = self.memory.get("query") != "fb_used"
        lab = self.memory.get("labels", {})
        for cap in self.captures:
            for fam, labels, value in cap.samples:
                v = float(value)
                if hami:
                    if fam not in (HAMI_USED, HAMI_HOST):
                        continue
                    mib = half_even_div(int(v), 1048576)
                    dev = self.device(cap.cluster, labels)
                    idn = identity(labels, lab.get("namespace", "namespace"),
                                   lab.get("pod", "pod"))
                else:
                    if fam not in (USED, FREE, RESERVED, GR, UTIL):
                        continue
                    dev = self.device(cap.cluster, labels)
                    idn = identity(labels)
                    mib = int(round(v))
                if dev is None:
                    continue
                if fam in (USED, HAMI_USED, HAMI_HOST):
                    if idn:
                        dev.pods[idn] = max(dev.pods.get(idn, mib), mib)
                    else:
                        dev.used_dev = mib if dev.used_dev is None else max(dev.used_dev, mib)
                elif fam == FREE:
                    dev.free = mib if dev.free is None else max(dev.free, mib)
                elif fam == RESERVED:
                    dev.reserved = mib if dev.reserved is None else max(dev.reserved, mib)
                elif fam in (GR, UTIL):
                    b = v if fam == GR else v / 100.0
                    if fam == GR or dev.busy_src != GR:
                        dev.busy, dev.busy_src = b, fam
                    if idn:
                        dev.compute_pods.add(idn)
        # node models: the model of the node's whole GPUs
        node_model = {}
        for dev in self.devices.values():
            if dev.model and not dev.mig:
                node_model.setdefault((dev.cluster, dev.host), dev.model)
        for dev in self.devices.values():
            if not dev.model:
                dev.model = node_model.get((dev.cluster, dev.host)) or "unknown"
        # kube-state-metrics: every pod named by a capture runs and requests
        # one GPU (MIG instance: one slice of its profile) on node = Hostname
        if self.ksm:
            for dev in sorted(self.devices.values(), key=lambda d: d.key):
                if not dev.host:
                    continue
                for ns, pod in sorted(set(dev.pods) | dev.compute_pods):
                    res = ("nvidia_com_mig_" + re.sub(r"[^a-zA-Z0-9_]", "_", dev.profile)
                           if dev.mig else "nvidia_com_gpu")
                    self.requests[(dev.cluster, ns, pod)] = (dev.host, res)

    # ---- expected figures (MiB per step, then MiB.s over the window)
    def expected(self):
        """{device key: figures}, {(team, cluster, model): [mib_s, estimated]}."""
        devs, lines = {}, {}
        usable, mig_usable = {}, {}
        for dev in self.devices.values():
            e = self.device_step(dev)
            devs[dev.key] = e
            if e["fb"] and dev.free is not None and not dev.mig:
                k = (dev.cluster, dev.host)
                usable[k] = max(usable.get(k, 0), e["capacity"] - e["reserved"])
            if e["fb"] and e["capacity"] > 0 and dev.mig:
                k = (dev.cluster, dev.host, dev.profile)
                mig_usable[k] = max(mig_usable.get(k, 0), e["capacity"] - e["reserved"])

        def mig_alloc(cl, host, res):
            m = re.match(r"nvidia_com_mig_(\d+)g_(\d+)gb$", res)
            prof = "%sg.%sgb" % (m.group(1), m.group(2))
            return mig_usable.get((cl, host, prof)) or int(m.group(2)) * 1024
        for dev in self.devices.values():
            e = devs[dev.key]
            if e["unknown"]:
                # pods billed their allocation: one instance of the profile
                # (measured capacity - reserved of an instance of that profile
                # on the node, else -- no mig_profiles_mib configured -- the
                # size in the resource name x 1024 MiB, specification: Arithmetic)
                for ns, pod in sorted(dev.compute_pods):
                    req = self.requests.get((dev.cluster, ns, pod))
                    if not req:
                        continue
                    mib = mig_alloc(dev.cluster, dev.host, req[1]) \
                        if req[1].startswith("nvidia_com_mig_") \
                        else usable.get((dev.cluster, dev.host), 0)
                    e["pods"][(ns, pod)] = mib * STEP
                e["estimated"] = True
                e["memory_used"] = sum(e["pods"].values())
            for (ns, pod), q in e["pods"].items():
                if q <= 0:
                    continue
                k = (ns, dev.cluster, dev.model)      # team = namespace (rule below)
                cur = lines.setdefault(k, [0, False])
                cur[0] += q
                cur[1] = cur[1] or e["estimated"]
        for e in devs.values():
            e["pods"] = {k: v * NSTEPS for k, v in e["pods"].items()}
            for f in ("memory_used", "unattributed", "idle", "excess"):
                e[f + "_q"] = e[f] * NSTEPS
            e["capacity_q"] = e["capacity"] * STEP * NSTEPS
            e["reserved_q"] = e["reserved"] * STEP * NSTEPS
        for v in lines.values():
            v[0] *= NSTEPS
        # allocation per (team, cluster, model), for reserved-unused waste
        waste = {}
        for (cl, ns, pod), (node, res) in self.requests.items():
            if res.startswith("nvidia_com_mig_"):
                alloc = mig_alloc(cl, node, res)
                model = next((d.model for d in self.devices.values()
                              if d.cluster == cl and d.host == node and d.mig), "unknown")
            else:
                alloc = usable.get((cl, node), 0)
                model = next((d.model for d in self.devices.values()
                              if d.cluster == cl and d.host == node and not d.mig), "unknown")
            used = sum(devs[d.key]["pods"].get((ns, pod), 0) for d in self.devices.values()
                       if d.cluster == cl and d.host == node and d.model == model) // NSTEPS
            w = max(0, alloc * STEP - used) * NSTEPS
            k = (ns, cl, model)
            waste[k] = waste.get(k, 0) + w
        return devs, lines, waste

    def device_step(self, dev):
        """One step of a device, MiB (capacity, reserved) and MiB.s (the rest)."""
        fb = dev.used_dev is not None or dev.free is not None or bool(dev.pods)
        e = {"fb": fb, "unknown": not fb, "estimated": False, "pods": {},
             "capacity": 0, "reserved": 0, "memory_used": 0, "unattributed": 0, "idle": 0,
             "excess": 0, "rule": ""}
        if not fb:
            e["rule"] = "no FB metrics: unknown usage"
            return e
        vals = dev.pods
        if self.mode == "device":
            used = dev.used_dev if dev.used_dev is not None else max(vals.values(), default=0)
        else:
            used = dev.used_dev if dev.used_dev is not None else sum(vals.values())
        free = dev.free or 0        # missing samples count as zero (specification: Arithmetic)
        cfg = self.capacity.get(dev.model)
        if dev.reserved is not None:
            res, cap = dev.reserved, used + free + dev.reserved
            e["rule"] = "USED+FREE+RESERVED"
        elif cfg and not dev.mig and dev.free is not None:
            res = max(0, cfg - used - free)
            cap = used + free + res
            e["rule"] = "configured capacity %d (RESERVED absent)" % cfg
        else:
            res, cap = 0, used + free
            e["rule"] = ("USED only (FREE and RESERVED absent)" if dev.free is None else
                         "USED+FREE (RESERVED absent, MIG instance: the model capacity is the "
                         "whole card's)" if cfg else
                         "USED+FREE (RESERVED absent, no capacity configured)")
        if self.mode == "device" and vals:
            keys = sorted(vals)
            parts = largest_remainder(max(vals.values()) * STEP, [1] * len(keys),
                                      ["%s/%s" % k for k in keys])
            e["pods"] = dict(zip(keys, parts))
            e["estimated"] = True
        else:
            e["pods"] = {k: v * STEP for k, v in vals.items()}
        s = sum(e["pods"].values())
        unatt = max(0, used * STEP - s)
        taken = res * STEP + unatt + s
        e.update(capacity=cap, reserved=res, memory_used=s, unattributed=unatt,
                 idle=max(0, cap * STEP - taken), excess=max(0, taken - cap * STEP))
        return e


# ---------------------------------------------------------------- OpenMetrics

def write_openmetrics(captures, runs, path):
    """Families grouped across files, each series in time order, # EOF."""
    fams = {}
    order = []
    n = 0

    def add(fam, labeltext, value):
        if fam not in fams:
            fams[fam] = []
            order.append(fam)
        fams[fam].append((labeltext, value))

    for cap in captures:
        for fam, labels, value in cap.samples:
            lt = ",".join(['cluster="%s"' % cap.cluster] +
                          ['%s="%s"' % (k, v) for k, v in labels])
            add(fam, lt, value)
    for run in runs:
        for (cl, ns, pod), (node, res) in sorted(run.requests.items()):
            uid = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, "%s/%s/%s" % (cl, ns, pod)))
            add("kube_pod_status_phase",
                'cluster="%s",namespace="%s",pod="%s",uid="%s",phase="Running"'
                % (cl, ns, pod, uid), "1")
            container = "main"
            add("kube_pod_container_resource_requests",
                'cluster="%s",namespace="%s",pod="%s",uid="%s",container="%s",node="%s",'
                'resource="%s",unit="integer"' % (cl, ns, pod, uid, run.containers.get(
                    (cl, ns, pod), container), node, res), "1")
        for (cl, node), labels in sorted(run.node_labels.items()):
            add("kube_node_labels", ",".join(['cluster="%s"' % cl, 'node="%s"' % node] +
                                             ['%s="%s"' % kv for kv in labels]), "1")
    with open(path, "w") as f:
        for fam in order:
            f.write("# TYPE %s gauge\n" % fam)
            for lt, value in fams[fam]:
                for i in range(NSTEPS):
                    f.write("%s{%s} %s %d\n" % (fam, lt, value, T0 + i * STEP))
                    n += 1
        f.write("# EOF\n")
    return n, sum(len(v) for v in fams.values())


def names_device(line, dev):
    """A line of `check` output names the device: its UUID and, for a MIG
    instance, its GPU_I_ID as a separate number (GPU-x/3, GPU_I_ID=3, ...);
    for a whole GPU, the UUID not followed by /N."""
    if dev.uuid not in line:
        return False
    rest = line.split(dev.uuid, 1)[1]
    if dev.gid:
        return bool(re.search(r"(?<![0-9A-Za-z])%s(?![0-9])" % re.escape(dev.gid), rest))
    return not re.match(r"\s*/\s*[0-9]", rest)


# ---------------------------------------------------------------- the checks

class Suite(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = None

    def main(self):
        tap = self.tap
        fx = os.path.abspath(self.args.fixtures)
        files = sorted(f for f in os.listdir(fx) if f.endswith(".prom")) \
            if os.path.isdir(fx) else []
        if not files:
            tap.fail("captures found", "no .prom files in %s" % fx)
            return
        caps = []
        p = []
        for f in files:
            try:
                caps.append(Capture(os.path.join(fx, f)))
            except Exception as e:
                p.append(str(e))
        if not tap.check("%d captures parsed (%d sample lines) from %s"
                         % (len(caps), sum(len(c.samples) for c in caps), fx), p):
            return
        by = {c.file: c for c in caps}
        mps = [c for c in caps if c.file.startswith("dcgm-") and "mps" in c.file]
        dcgm = [c for c in caps if c.file.startswith("dcgm-") and c not in mps]
        hami = [c for c in caps if c.file.startswith("hami-")]
        other = [c.file for c in caps if c not in mps + dcgm + hami]
        if other:
            tap.note("captures not used (no configuration for them): %s" % other)
        self.runs = []
        if dcgm:
            self.runs.append(Run("main", dcgm, capacity=MODEL_CAPACITY))
        if mps:
            self.runs.append(Run("mps", mps, mode="device"))
        if hami:
            self.runs.append(Run("hami", hami, memory={
                "query": "hami_vgpumonitor", "unit": "bytes", "attribution": "process",
                "labels": {"uuid": "deviceuuid", "namespace": "podnamespace",
                           "pod": "podname"}}, ksm=False))
            tap.note("hami: no kube-state-metrics series (the capture names no node, so "
                     "no request could join on node = Hostname)")
        for run in self.runs:
            run.containers = {}
            run.node_labels = {}
            for cap in run.captures:
                for fam, labels, _ in cap.samples:
                    d = dict(labels)
                    idn = identity(labels)
                    if idn and d.get("container"):
                        run.containers[(cap.cluster,) + idn] = d["container"]
            if run.mode == "device":
                # MPS sharing: the device plugin advertises replicas per GPU
                for (cl, ns, pod), (node, res) in run.requests.items():
                    n = sum(1 for k, v in run.requests.items() if k[0] == cl and v[0] == node)
                    run.node_labels[(cl, node)] = [("label_nvidia_com_gpu_replicas", str(n))]
        self.by = by

        # ---- backfill, serve
        for t in ("promtool", "prometheus"):
            if not shutil.which(t):
                tap.fail("%s on PATH" % t, "not found (Debian package prometheus)")
                return
        om = self.path("data.om")
        nlines, nseries = write_openmetrics(caps, self.runs, om)
        self.nseries = nseries
        tsdb = self.path("tsdb")
        t0 = time.time()
        rc, out = harness.backfill(om, tsdb)
        if rc != 0:
            tap.fail("promtool backfill", tail(out))
            return
        tap.setup("promtool backfill of %d series x %d steps (%d lines, %.1fs)"
               % (nseries, NSTEPS, nlines, time.time() - t0))
        self.prom = harness.Prometheus(self.work, tsdb)
        try:
            self.prom.start(timeout=30)
        except RuntimeError as e:
            tap.fail("prometheus ready", e)
            return
        tap.setup("prometheus ready on %s" % self.prom.url())
        p = []
        for t in (T0, T0 + NSTEPS // 2 * STEP, T1 - STEP):
            try:
                res = self.prom.query('count({cluster=~".+"})', t)
                got = int(float(res[0]["value"][1])) if res else 0
            except Exception as e:
                p.append("%s: %s" % (fmt_time(t), e))
                continue
            if got != nseries:
                p.append("%s: %d series served, %d written" % (fmt_time(t), got, nseries))
        for t in (T0 - STEP, T1):
            res = self.prom.query('count({cluster=~".+"})', t)
            if res:
                p.append("%s (outside the window): %s series served" % (fmt_time(t),
                                                                          res[0]["value"][1]))
        tap.check("prometheus serves every capture series at every step instant of "
                  "%s .. %s and none outside" % (fmt_time(T0), fmt_time(T1)), p)

        if not (os.path.isfile(self.args.bin) and os.access(self.args.bin, os.X_OK)):
            tap.fail("engine binary present", "%s is missing or not executable" % self.args.bin)
            return
        self.bin = os.path.abspath(self.args.bin)
        self.engine = harness.Engine(self.bin, self.work, timeout=ENGINE_TIMEOUT,
                                     log_stdout=True)
        self.write_prices()
        for run in self.runs:
            self.engine_run(run)

    # ---- configuration
    def write_prices(self):
        models = sorted({d.model for r in self.runs for d in r.devices.values()})
        self.prices = self.path("prices.csv")
        with open(self.prices, "w") as f:
            f.write("model_pattern,unit,price,currency,valid_from,valid_to,capacity_gb\n")
            for m in models:
                f.write("^%s$,GB-Hours,0.01,USD,2026-01-01T00:00:00Z,,\n"
                        % re.sub(r"([.\\+*?()\[\]{}|^$])", r"\\\1", m))

    def write_queries(self, run):
        qdir = self.path("queries-" + run.name)
        os.makedirs(qdir, exist_ok=True)
        sel = 'cluster=~"%s"' % "|".join(re.sub(r"([.+*?()\[\]{}|^$\\])", r"\\\\\1", c.cluster)
                                         for c in run.captures)
        src = [os.path.join(REPO, "queries", f) for f in os.listdir(os.path.join(REPO, "queries"))
               if f.endswith(".promql")]
        src.append(os.path.join(HERE, "fixtures", "hami_vgpumonitor.promql"))
        unfiltered = []
        for s in src:
            with open(s) as f:
                text = f.read()
            if "${cluster_selector}" not in text:
                unfiltered.append(os.path.basename(s))
            with open(os.path.join(qdir, os.path.basename(s)), "w") as f:
                f.write(text.replace("${cluster_selector}", sel))
        if unfiltered:
            self.tap.note("%s: query files without ${cluster_selector} (see every cluster): %s"
                          % (run.name, unfiltered))
        return qdir

    def write_config(self, run):
        cfg = {
            "prometheus": {"url": self.prom.url(), "timeout_seconds": 20, "retries": 1},
            "cluster": {"name": "no-cluster-label", "label": "cluster"},
            "collection": {"step_seconds": STEP, "chunk_hours": 6, "identity_labels": "auto",
                           "hostname_label": "Hostname", "queries_dir": self.write_queries(run)},
            "memory_source": dict(run.memory, attribution=run.mode),
            "teams": {"rules": [{"namespace_regex": "^(.+)$", "team": "$1"}],
                      "default": "unallocated",
                      "catalogue": [{"id": "platform", "name": "GPU Platform",
                                     "cost_center": "cc-0001"}]},
            "idle_overhead": {"policy": "platform", "platform_team": "platform"},
            "prices": {"file": self.prices},
            "billing": {"currency": "USD", "account_id": "real-fixtures",
                        "account_name": "Real captures", "provider": "gpuledger tests",
                        "service_name": "GPU Platform", "basis": "used"},
        }
        if run.capacity:
            cfg["allocation"] = {"model_capacity_mib": run.capacity}
        path = self.path("config-%s.json" % run.name)
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
        return path

    # ---- one engine configuration
    def engine_run(self, run):
        tap = self.tap
        n = run.name
        cfg = self.write_config(run)
        db = self.path("%s.db" % n)
        devs, lines, waste = run.expected()
        tap.note("%s: %s; attribution %s; devices: %s" % (
            n, ", ".join(c.file for c in run.captures), run.mode,
            ", ".join("%s [%s]" % (run.devices[k].name(), devs[k]["rule"])
                      for k in sorted(devs))))
        rc, out, err = self.engine.run(cfg, db, "collect", "--from", fmt_time(T0),
                                       "--to", fmt_time(T1))
        if not tap.check("%s: collect %s .. %s exits 0" % (n, fmt_time(T0), fmt_time(T1)),
                         [] if rc == 0 else ["exit %s: %s" % (rc, tail(err))]):
            return
        self.check_summary(run, cfg, db, devs)
        self.check_invoices(run, cfg, db, devs, lines, waste)
        self.check_check(run, cfg, db, devs)

    def summary(self, run, cfg, db):
        rc, out, err = self.engine.run(cfg, db, "summary", "--period", PERIOD,
                                       "--format", "json")
        if rc != 0:
            self.tap.fail("%s: summary --format json" % run.name, "exit %s: %s" % (rc, tail(err)))
            return None
        try:
            doc = json.loads(out)
        except ValueError as e:
            self.tap.fail("%s: summary --format json" % run.name, "not JSON (%s)" % e)
            return None
        with open(self.path("summary-%s.json" % run.name), "w") as f:
            f.write(out)
        return doc

    def check_summary(self, run, cfg, db, devs):
        tap, n = self.tap, run.name
        doc = self.summary(run, cfg, db)
        if doc is None:
            return
        rows = doc.get("devices")
        if not isinstance(rows, list):
            tap.fail("%s: summary lists every device (UUID + GPU_I_ID)" % n,
                     "no \"devices\" array in the summary (keys: %s); expected %d devices: %s"
                     % (sorted(doc), len(devs), ", ".join(run.devices[k].name()
                                                          for k in sorted(devs))))
            got = {}
        else:
            got = {}
            for r in rows:
                k = (r.get("cluster"), r.get("uuid"), r.get("gpu_i_id") or "")
                got[k] = r
            p = ["missing %s" % run.devices[k].name() for k in sorted(devs) if k not in got]
            extra = [k for k in got if k not in devs]
            p += ["unexpected device %s" % (k,) for k in sorted(extra, key=str)
                  if not str(k[1]).startswith("node:")]
            tap.check("%s: summary lists every device (UUID + GPU_I_ID) of the captures, "
                      "%d devices" % (n, len(devs)), p)
        if got:
            self.check_devices(run, devs, got)
        self.check_models(run, doc, devs)

    def check_devices(self, run, devs, got):
        tap, n = self.tap, run.name
        p_cap, p_idle, p_fig, p_unk, p_zero, p_meta, p_rec = [], [], [], [], [], [], []
        for k in sorted(devs):
            if k not in got:
                continue
            e, r, dev = devs[k], got[k], run.devices[k]
            name = dev.name()
            if r.get("gpu_model") != dev.model:
                p_meta.append("%s gpu_model %r, expected %r" % (name, r.get("gpu_model"),
                                                                 dev.model))
            if (r.get("node") or None) != dev.host:
                p_meta.append("%s node %r, expected %r" % (name, r.get("node"), dev.host))
            if (r.get("gpu_i_profile") or "") != dev.profile:
                p_meta.append("%s gpu_i_profile %r, expected %r" % (name, r.get("gpu_i_profile"),
                                                                     dev.profile))
            vals = {f: dec(r.get(f)) for f in ("capacity", "memory_used", "reserved",
                                              "unattributed", "idle", "excess")}
            for f, v in vals.items():
                if v is None:
                    p_fig.append("%s %s %r is not a decimal" % (name, f, r.get(f)))
            if any(v is None for v in vals.values()):
                continue
            if dev.free is None and not e["unknown"] and r.get("unknown_usage") is True:
                # FB_USED without FB_FREE: usage is known, capacity is not; a
                # flag is no silent zero, so both readings are accepted
                tap.note("%s: %s has FB_USED but no FB_FREE: unknown_usage true (accepted)"
                         % (n, name))
            elif r.get("unknown_usage") is not e["unknown"]:
                p_unk.append("%s unknown_usage %r, expected %s (%s)" % (
                    name, r.get("unknown_usage"), str(e["unknown"]).lower(),
                    "no FB metrics" if e["unknown"] else "has FB metrics"))
            if all(v == 0 for v in vals.values()):
                if e["fb"] and e["memory_used"] + e["unattributed"] > 0:
                    # known memory in use must show somewhere, flag or not
                    p_zero.append("%s: every figure is 0 (unknown_usage %r) although the "
                                  "capture has %d MiB in use on it" % (
                                      name, r.get("unknown_usage"),
                                      (e["memory_used"] + e["unattributed"]) // STEP))
                elif r.get("unknown_usage") is not True:
                    p_zero.append("%s: every figure is 0 and unknown_usage is %r" % (
                        name, r.get("unknown_usage")))
            if e["unknown"]:
                # capacity unknown: 0, or reported as excess when pods were billed
                mu = dec(gbh(e["memory_used_q"]))
                if vals["memory_used"] != mu:
                    p_fig.append("%s memory_used %s, expected %s (pods billed by allocation)"
                                 % (name, r.get("memory_used"), mu))
                for f in ("reserved", "unattributed", "idle"):
                    if vals[f] != 0:
                        p_fig.append("%s %s %s, expected 0 (no FB metrics)" % (name, f, r.get(f)))
                if vals["capacity"] + vals["excess"] not in (0, mu) and \
                        vals["capacity"] + vals["excess"] != vals["memory_used"]:
                    p_fig.append("%s capacity %s + excess %s, expected 0 or memory_used" % (
                        name, r.get("capacity"), r.get("excess")))
                continue
            want_cap = dec(gbh(e["capacity_q"]))
            if vals["capacity"] != want_cap:
                p_cap.append("%s capacity %s, expected %s GB-h = %d MiB x %d s (%s; USED %s "
                             "FREE %s RESERVED %s%s)" % (
                                 name, r.get("capacity"), want_cap, e["capacity"],
                                 NSTEPS * STEP, e["rule"], dev.used_dev if dev.used_dev
                                 is not None else "pods", dev.free, dev.reserved,
                                 "; an absent FB_FREE counts as 0 (specification: Arithmetic)"
                                 if dev.free is None else ""))
            lhs = vals["capacity"] + vals["excess"]
            rhs = vals["memory_used"] + vals["reserved"] + vals["unattributed"] + vals["idle"]
            if lhs != rhs:
                p_rec.append("%s capacity %s + excess %s != used %s + reserved %s + "
                             "unattributed %s + idle %s" % (
                                 name, r.get("capacity"), r.get("excess"), r.get("memory_used"),
                                 r.get("reserved"), r.get("unattributed"), r.get("idle")))
            if dev.free is not None and e["excess"] == 0:
                want = dec(gbh(dev.free * STEP * NSTEPS))
                if vals["idle"] != want:
                    p_idle.append("%s idle %s, expected FB_FREE %d MiB = %s" % (
                        name, r.get("idle"), dev.free, want))
            for f in ("memory_used", "reserved", "unattributed", "idle", "excess"):
                want = dec(gbh(e[f + "_q"]))
                if vals[f] != want:
                    p_fig.append("%s %s %s, expected %s" % (name, f, r.get(f), want))
        tap.check("%s: device gpu_model, node, gpu_i_profile" % n, p_meta)
        tap.check("%s: device capacity = USED+FREE+RESERVED, or the configured model "
                  "capacity when RESERVED is absent, or USED+FREE without either (specification: Arithmetic)" % n,
                  p_cap)
        tap.check("%s: device idle = FB_FREE (consistent data)" % n, p_idle)
        tap.check("%s: every device with FB metrics reconciles: capacity + excess = "
                  "memory_used + reserved + unattributed + idle (specification: Attribution)" % n, p_rec)
        tap.check("%s: device memory_used, reserved, unattributed, idle, excess "
                  "(capture value x 10800 s)" % n, p_fig)
        tap.check("%s: unknown_usage true exactly for devices without FB metrics" % n, p_unk)
        tap.check("%s: no device with data shows all zeros" % n, p_zero)

    def check_models(self, run, doc, devs):
        tap, n = self.tap, run.name
        rows = doc.get("models")
        if not isinstance(rows, list):
            tap.fail("%s: summary models" % n, "no \"models\" array")
            return
        got = {(r.get("cluster"), r.get("gpu_model")): r for r in rows}
        want = {}
        for k, e in devs.items():
            dev = run.devices[k]
            w = want.setdefault((dev.cluster, dev.model), {f: 0 for f in (
                "capacity", "memory_used", "reserved", "unattributed", "idle")})
            w["unknown"] = w.get("unknown", False) or e["unknown"]
            for f in ("capacity", "memory_used", "reserved", "unattributed", "idle"):
                w[f] += e[f + "_q"]
        p = []
        for k in sorted(want):
            if k not in got:
                p.append("no row for %s" % (k,))
                continue
            for f in ("capacity", "memory_used", "reserved", "unattributed", "idle"):
                if f == "capacity" and want[k]["unknown"]:
                    continue
                if dec(got[k].get(f)) != dec(gbh(want[k][f])):
                    p.append("%s %s %s, expected %s" % (k, f, got[k].get(f), gbh(want[k][f])))
        tap.check("%s: summary per model = sum of its devices (%d cluster/model rows)"
                  % (n, len(want)), p)

    # ---- invoices
    def check_invoices(self, run, cfg, db, devs, lines, waste):
        tap, n = self.tap, run.name
        rc, out, err = self.engine.run(cfg, db, "invoice", "--period", PERIOD,
                                       "--format", "json")
        if rc != 0:
            tap.fail("%s: invoice --format json" % n, "exit %s: %s" % (rc, tail(err)))
            return
        try:
            doc = json.loads(out)
        except ValueError as e:
            tap.fail("%s: invoice --format json" % n, "not JSON (%s)" % e)
            return
        with open(self.path("invoices-%s.json" % n), "w") as f:
            f.write(out)
        invs = doc.get("invoices") or []
        got = {}
        p = []
        for inv in invs:
            for l in inv.get("lines", []):
                if l.get("kind") != "memory_used":
                    continue
                k = (inv.get("team"), l.get("cluster"), l.get("gpu_model"))
                try:
                    q = int(l.get("mib_seconds"))
                except (TypeError, ValueError):
                    p.append("%s: mib_seconds %r" % (k, l.get("mib_seconds")))
                    continue
                cur = got.setdefault(k, [0, False])
                cur[0] += q
                cur[1] = cur[1] or l.get("estimated") is True
        for k in sorted(set(got) | set(lines), key=str):
            g, w = got.get(k, [0, False]), lines.get(k, [0, False])
            if g[0] != w[0]:
                p.append("%s memory_used %d MiB.s, expected %d" % (k, g[0], w[0]))
            elif g[0] and g[1] != w[1]:
                p.append("%s estimated %s, expected %s" % (k, g[1], w[1]))
        tap.check("%s: invoice memory_used per team, cluster, model and its estimated flag "
                  "(%s)" % (n, ", ".join("%s/%s %d%s" % (k[0], k[1], v[0],
                                                          " est." if v[1] else "")
                                        for k, v in sorted(lines.items())) or "none"), p)

        # idle and overhead lines (policy platform), summed per cluster and model
        fleet = {}
        for inv in invs:
            for l in inv.get("lines", []):
                if l.get("kind") in ("idle_share", "overhead_share"):
                    k = (l.get("cluster"), l.get("gpu_model"), l.get("kind"))
                    fleet[k] = fleet.get(k, 0) + int(l.get("mib_seconds") or 0)
        wf = {}
        for k, e in devs.items():
            dev = run.devices[k]
            for kind, q in (("idle_share", e["idle_q"]),
                            ("overhead_share", e["reserved_q"] + e["unattributed_q"])):
                if q:
                    kk = (dev.cluster, dev.model, kind)
                    wf[kk] = wf.get(kk, 0) + q
        p = ["%s %d MiB.s, expected %d" % (k, fleet.get(k, 0), wf.get(k, 0))
             for k in sorted(set(fleet) | set(wf), key=str) if fleet.get(k, 0) != wf.get(k, 0)]
        tap.check("%s: idle_share and overhead_share lines per cluster and model "
                  "(overhead = reserved + unattributed)" % n, p)

        if n == "main":
            self.main_specifics(run, invs, devs, lines, waste)
        if n == "mps":
            self.mps_specifics(run, invs, devs)

        p = []
        for inv in invs:
            if not isinstance(inv.get("anomalies"), list):
                p.append("invoice of %s has no \"anomalies\" array" % inv.get("team"))
            for a in inv.get("anomalies") or []:
                p.append("%s %s/%s on %s" % (a.get("kind"), a.get("namespace"), a.get("pod"),
                                             a.get("device")))
        if run.ksm:
            tap.check("%s: no anomalies (every pod with memory holds a request on node = "
                      "Hostname)" % n, p)

    def main_specifics(self, run, invs, devs, lines, waste):
        tap = self.tap
        # MIG instances without FB metrics: pods billed by allocation, estimated
        unk = [run.devices[k] for k in sorted(devs) if devs[k]["unknown"]]
        p = []
        billed = {}
        for inv in invs:
            for l in inv.get("lines", []):
                if l.get("kind") == "memory_used":
                    k = (inv.get("team"), l.get("cluster"), l.get("gpu_model"))
                    billed.setdefault(k, []).append(l)
        for dev in unk:
            for ns, pod in sorted(dev.compute_pods):
                k = (ns, dev.cluster, dev.model)
                ls = billed.get(k, [])
                if not ls:
                    p.append("%s/%s on %s: no memory_used line (expected its allocation "
                             "%s MiB.s, estimated)" % (ns, pod, dev.name(), lines.get(k, [0])[0]))
                elif not all(l.get("estimated") is True for l in ls):
                    p.append("%s: line not marked estimated" % (k,))
        tap.check("main: pods on MIG instances without FB metrics billed by allocation "
                  "(%s), marked estimated" % ", ".join(
                      "%s/%s" % (d.uuid[:12], d.gid) for d in unk), p)

        # device-total rows (the dcgm-exporter's own process on the A800, the busy
        # T4 without pod labels, the A100 docs capture) bill no team
        p = []
        quiet = [d for d in run.devices.values() if not d.pods and not d.compute_pods]
        quiet_models = {(d.cluster, d.model) for d in quiet} - \
            {(d.cluster, d.model) for d in run.devices.values() if d.pods or d.compute_pods}
        for inv in invs:
            if inv.get("team") == "platform":
                continue
            for l in inv.get("lines", []):
                if (l.get("cluster"), l.get("gpu_model")) in quiet_models:
                    p.append("team %s billed %s %s MiB.s on %s/%s" % (
                        inv.get("team"), l.get("kind"), l.get("mib_seconds"), l.get("cluster"),
                        l.get("gpu_model")))
        exp_dev = [d for d in quiet if d.extra.get("DCGM_FI_PROCESS_NAME")]
        tap.check("main: rows without pod labels (%d devices, %d of them with "
                  "DCGM_FI_PROCESS_NAME=/usr/bin/dcgm-exporter; the busy T4 of a DRA cluster) "
                  "bill no team: their USED is unattributed overhead"
                  % (len(quiet), len(exp_dev)), p)

        # reserved-unused waste = allocation - used (information)
        p = []
        got = {}
        for inv in invs:
            for w in inv.get("waste") or []:
                k = (inv.get("team"), w.get("cluster"), w.get("gpu_model"))
                got[k] = got.get(k, 0) + int(w.get("mib_seconds") or 0)
        for k in sorted(set(got) | set(waste), key=str):
            if got.get(k, 0) != waste.get(k, 0):
                p.append("%s waste %d MiB.s, expected %d" % (k, got.get(k, 0), waste.get(k, 0)))
        tap.check("main: reserved-unused waste = allocation (usable = capacity - reserved; "
                  "MIG 1g.10gb = 10240 MiB) - used (%s)" % ", ".join(
                      "%s/%s %d" % (k[0], k[1], v) for k, v in sorted(waste.items()) if v), p)

        # compute indicator: GR_ENGINE_ACTIVE preferred over GPU_UTIL
        p = []
        want = {}
        for k, e in devs.items():
            dev = run.devices[k]
            if dev.busy is None:
                continue
            for (ns, pod), q in e["pods"].items():
                if q > 0:
                    w = want.setdefault((ns, dev.cluster, dev.model), [0, 0])
                    w[0] += int(round(dev.busy * 1e6)) * NSTEPS
                    w[1] += NSTEPS
        got = {}
        for inv in invs:
            for c in inv.get("compute_indicator") or []:
                got[(inv.get("team"), c.get("cluster"), c.get("gpu_model"))] = c
        for k in sorted(want):
            ppm, steps = want[k]
            exp = "%.6f" % (Fraction(ppm, steps * 10 ** 6))
            c = got.get(k)
            if c is None:
                p.append("%s: no compute_indicator (expected %s)" % (k, exp))
            elif dec(c.get("busy_ratio")) != dec(exp) or int(c.get("device_steps") or 0) != steps:
                p.append("%s busy_ratio %s over %s steps, expected %s over %d" % (
                    k, c.get("busy_ratio"), c.get("device_steps"), exp, steps))
        tap.check("main: compute indicator per team and model (GR_ENGINE_ACTIVE preferred, "
                  "GPU_UTIL / 100 otherwise)", p)

    def mps_specifics(self, run, invs, devs):
        tap = self.tap
        p = []
        for k, e in devs.items():
            dev = run.devices[k]
            if len(dev.pods) < 2:
                continue
            v = max(dev.pods.values())
            per = {}
            for inv in invs:
                for l in inv.get("lines", []):
                    if l.get("kind") == "memory_used" and l.get("cluster") == dev.cluster:
                        per[inv.get("team")] = per.get(inv.get("team"), 0) + \
                            int(l.get("mib_seconds") or 0)
                        if l.get("estimated") is not True:
                            p.append("%s line not estimated" % inv.get("team"))
            total = sum(per.values())
            if total != v * STEP * NSTEPS:
                p.append("pods billed %d MiB.s in all (%s), expected %d = %d MiB x 10800 s%s"
                         % (total, per, v * STEP * NSTEPS, v,
                            " (2x: copies summed)" if total == 2 * v * STEP * NSTEPS else ""))
            want = {ns: q for (ns, _), q in e["pods"].items()}
            if per != want:
                p.append("split %s, expected %s" % (per, want))
        tap.check("mps: the device copy (15866 MiB on both pods) is split between the 2 "
                  "pods, never counted twice", p)

    # ---- check --at
    def check_check(self, run, cfg, db, devs):
        tap, n = self.tap, run.name
        at = fmt_time(T0 + NSTEPS // 2 * STEP)
        rc, out, err = self.engine.run(cfg, db, "check", "--at", at)
        text = out + "\n" + err
        with open(self.path("check-%s.txt" % n), "w") as f:
            f.write(text)
        # check exits 4 when a required query has no data: the
        # capacity (no capture of the run has FB_FREE and no capacity is
        # configured) or the allocation (no kube-state-metrics series)
        missing = []
        if not run.capacity and all(d.free is None for d in run.devices.values()):
            missing.append("fb_free")
        if not run.ksm:  # the two kube-state-metrics queries the engine joins
            missing += ["alloc_requests", "pod_phase"]
        if missing:
            tap.check("%s: check --at %s exits 4 naming %s (required, without data)"
                      % (n, at, ", ".join(missing)),
                      [] if rc == 4 and "required queries without data" in err and
                      all("/%s" % q in err for q in missing) else
                      ["exit %s: %s" % (rc, tail(err))])
        else:
            tap.check("%s: check --at %s exits 0" % (n, at),
                      [] if rc == 0 else ["exit %s: %s" % (rc, tail(err))])
        lines = text.splitlines()
        p = []
        for k in sorted(devs):
            if not devs[k]["unknown"]:
                continue
            dev = run.devices[k]
            if not any(names_device(l, dev) for l in lines):
                p.append("%s is not listed" % dev.name())
        if any(e["unknown"] for e in devs.values()):
            tap.check("%s: check lists the devices without FB metrics (unknown usage)" % n, p)
        p = []
        for k in sorted(devs):
            dev, e = run.devices[k], devs[k]
            if e["unknown"] or dev.reserved is not None or \
                    (run.capacity.get(dev.model) and not dev.mig and dev.free is not None):
                continue
            mine = [l for l in lines if names_device(l, dev)]
            said = [l for l in mine if re.search(r"reserved|free|capacity", l, re.I)]
            if not said:
                p.append("nothing names %s, which has no FB_RESERVED%s (collect: %s)"
                         % (dev.name(), "" if dev.free is not None else " and no FB_FREE",
                            e["rule"]))
            for l in said:
                if re.search(r"configured capacity", l, re.I) and \
                        not re.search(r"USED ?\+ ?FREE", l):
                    p.append("%r, but collect uses %s for %s" % (l.strip(), e["rule"],
                                                                 dev.name()))
        tap.check("%s: check says which devices lack FB_RESERVED without a configured "
                  "capacity, and which rule collect applies" % n, p)

    def cleanup(self):
        if self.prom:
            self.prom.stop()


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--fixtures", default=DEFAULT_FIXTURES,
                    help="folder of .prom captures (default: %(default)s)")
    return harness.run_driver(Suite, ap.parse_args(), harness.Tap(limit=2000, shown=6),
                              "real fixtures run", "gpuledger-real-")


if __name__ == "__main__":
    sys.exit(main())
