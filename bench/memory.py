#!/usr/bin/env python3
"""memory.py - peak memory of `gpuledger collect` for one chunk of a large
fleet (the integrity rule "bounded memory").

Usage: python3 bench/memory.py --bin PATH [--case fleet4096|series100k|all]
           [--hours N] [--keep] [--work DIR]

The fleets are far too large to backfill into a real Prometheus in a
benchmark's time (about 15,000 OpenMetrics lines/s here: 4,096 GPUs x 6 h x
8 metrics is 12 M lines), so a loopback HTTP server of this script answers
the engine's query_range requests from a generated model, the way
Prometheus would: per request it selects the series of the query's metric,
applies a matcher on Hostname or node (=~ / !~, what the engine adds to the
device queries and to the allocation's requests when it splits an hour by
host) and the instant `count by (Hostname) (...)` (how it finds the hosts),
and writes the [start, end] samples at the step (one value per series,
constant over time). The bodies have Prometheus's shape and size (labels of
real dcgm-exporter and kube-state-metrics series).

Cases (one chunk of collection.chunk_hours, default 6 h, at 60 s):
  fleet4096   512 nodes x 8 GPUs = 4,096 GPUs, one pod per GPU: every
              dcgm-exporter query (FB_USED, FB_FREE, FB_RESERVED,
              GR_ENGINE_ACTIVE) returns 4,096 series, kube-state-metrics
              4,096 pods and 512 nodes.
  series100k  1,563 nodes x 8 GPUs = 12,504 GPUs, 2 pods of 4 containers per
              GPU: FB_USED returns 100,032 series (per process), FB_FREE,
              FB_RESERVED and GR_ENGINE_ACTIVE one per GPU, 25,008 pods.

For each case: one `gpuledger collect` of the chunk with default settings
(only the URL, teams and prices are configured) under /usr/bin/time -v, then
one curl process fetching the very same requests (recorded by the server)
to /dev/null under /usr/bin/time -v. Printed: exit status, peak RSS of the
engine and of curl, the largest response and all bytes served, the
requests, and how often the engine split the chunk (its log lines).

It runs against any binary (--bin), so the same command measures before
and after a change:
  python3 bench/memory.py --bin /tmp/base/build/gpuledger
  python3 bench/memory.py --bin build/gpuledger
"""

import argparse
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

T0 = 1793664000  # 2026-11-03T00:00:00Z
STEP = 60
MODEL = "NVIDIA A100-SXM4-80GB"
CAP = 81920


def log(msg):
    sys.stderr.write("# %s %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


class Fleet:
    """Series of every metric the engine asks for: name -> [(labels, value)]."""

    def __init__(self, nodes, gpus, pods_per_gpu, containers, per_process_device_metrics,
                 sparse_pods=0):
        self.series = {k: [] for k in (
            "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED",
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL", "kube_pod_labels",
            "kube_namespace_labels", "allocation", "kube_node_labels", "kube_pod_status_phase")}
        s = self.series
        pod_no = 0
        for n in range(nodes):
            host = "gpu-node-%04d" % n
            s["kube_node_labels"].append(({"node": host, "label_pool": "a100"}, "1"))
            for g in range(gpus):
                dev = {"gpu": str(g), "UUID": "GPU-%08x-%04x" % (n, g),
                       "pci_bus_id": "00000000:%02X:00.0" % (7 + g), "device": "nvidia%d" % g,
                       "modelName": MODEL, "Hostname": host,
                       "DCGM_FI_DRIVER_VERSION": "550.54.15", "instance": "10.0.%d.%d:9400"
                       % (n // 250, n % 250), "job": "dcgm-exporter"}
                used_total = 0
                for p in range(pods_per_gpu):
                    pod = "train-%06d" % pod_no
                    ns = "team-%02d" % (pod_no % 40)
                    pod_no += 1
                    s["kube_pod_labels"].append(({"namespace": ns, "pod": pod,
                                                  "uid": "u-%06d" % pod_no,
                                                  "label_team": "t%02d" % (pod_no % 40)}, "1"))
                    s["allocation"].append(({"namespace": ns, "pod": pod, "node": host,
                                             "resource": "nvidia_com_gpu"}, "1"))
                    s["kube_pod_status_phase"].append(({"namespace": ns, "pod": pod,
                                                        "phase": "Running"}, "1"))
                    for c in range(containers):
                        mib = 1000 + 500 * ((pod_no + c) % 16)
                        used_total += mib
                        lab = dict(dev, container="c%d" % c, namespace=ns, pod=pod)
                        s["DCGM_FI_DEV_FB_USED"].append((lab, str(mib)))
                        if per_process_device_metrics:
                            s["DCGM_FI_DEV_FB_FREE"].append((lab, str(CAP - 500 - mib)))
                            s["DCGM_FI_DEV_FB_RESERVED"].append((lab, "500"))
                            s["DCGM_FI_PROF_GR_ENGINE_ACTIVE"].append((lab, "0.5"))
                if not per_process_device_metrics:
                    free = max(0, CAP - 500 - used_total)
                    s["DCGM_FI_DEV_FB_FREE"].append((dev, str(free)))
                    s["DCGM_FI_DEV_FB_RESERVED"].append((dev, "500"))
                    s["DCGM_FI_PROF_GR_ENGINE_ACTIVE"].append((dev, "0.5"))
        # pod churn: pods that each left one FB_USED sample, minute i % 60 of
        # the first hour, on GPU i % (nodes x gpus) (a third element: the
        # sample's offset from T0; such a series has no other sample)
        for i in range(sparse_pods):
            n, g = (i // gpus) % nodes, i % gpus
            lab = {"gpu": str(g), "UUID": "GPU-%08x-%04x" % (n, g), "modelName": MODEL,
                   "Hostname": "gpu-node-%04d" % n, "container": "c",
                   "namespace": "team-%02d" % (i % 40), "pod": "batch-%07d" % i}
            s["DCGM_FI_DEV_FB_USED"].append((lab, str(1000 + i % 7), 60 * (i % 60)))
        for i in range(40):
            s["kube_namespace_labels"].append(({"namespace": "team-%02d" % i,
                                                "label_team": "t%02d" % i}, "1"))
        # JSON of each label set, once
        self.metric_json = {k: [json.dumps(e[0], separators=(",", ":")) for e in v]
                            for k, v in s.items()}


# which model series a query selects (the engine's queries/*.promql)
METRICS = [("kube_pod_container_resource_requests", "allocation"),
           ("kube_pod_status_phase", "kube_pod_status_phase"),
           ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_USED"),
           ("DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_FREE"),
           ("DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_FB_RESERVED"),
           ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
           ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL"),
           ("kube_pod_labels", "kube_pod_labels"),
           ("kube_namespace_labels", "kube_namespace_labels"),
           ("kube_node_labels", "kube_node_labels")]
MATCHER = re.compile(r'\b(Hostname|node)(=~|!~)"((?:[^"\\]|\\.)*)"')
COUNT_BY = re.compile(r"^\s*count by \((\w+)\)")
COUNT = re.compile(r"^\s*count\(\(")


class Server:
    """The loopback Prometheus stand-in; records every request and size."""

    def __init__(self, fleet, counts=None):
        self.fleet = fleet
        # the instant `count((QUERY))` a first collect plans from: None
        # answers it as an unknown query (400, as before the engine asked
        # it), a factor answers the series present at the instant times it
        # (1 the truth; below 1 a count too low)
        self.counts = counts
        self.requests = []  # (path, bytes)
        self.values_cache = {}
        self.by_host = {}  # (metric, label) -> {host: [series index]}, built on first use
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                outer.handle(self)

        class Quiet(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                # the engine drops a connection on purpose when a response
                # runs out of its budget: not worth a traceback
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def values(self, v, start, end, step):
        key = (v, start, end, step)
        if key not in self.values_cache:
            self.values_cache[key] = ",".join('[%d,"%s"]' % (t, v)
                                              for t in range(start, end + 1, step))
        return self.values_cache[key]

    def selected(self, name, query):
        """Indices of the metric's series that the query's Hostname (or
        node) matcher keeps, in model order; a series without the label
        matches as the empty string, as in Prometheus. The matcher is tried
        once per host, not once per series: a split asks for every host
        shard of every hour, and 100,000 regex matches per request were
        most of a test's time."""
        series = self.fleet.series[name]
        m = MATCHER.search(query)
        if not m:
            return range(len(series))
        key = (name, m.group(1))
        if key not in self.by_host:
            idx = {}
            for i, e in enumerate(series):
                idx.setdefault(e[0].get(m.group(1)), []).append(i)
            self.by_host[key] = idx
        rx = re.compile(m.group(3).replace("\\\\", "\\"))
        neg = m.group(2) == "!~"
        keep = [i for h, ix in self.by_host[key].items()
                if bool(rx.fullmatch(h or "")) != neg for i in ix]
        keep.sort()
        return keep

    def parts(self, query, start, end, step):
        name = next((m for text, m in METRICS if text in query), None)
        yield '{"status":"success","data":{"resultType":"matrix","result":['
        if name:
            series = self.fleet.series[name]
            mj = self.fleet.metric_json[name]
            cb = COUNT_BY.match(query)
            first = True
            keep = self.selected(name, query)
            if cb:
                counts = {}
                for i in keep:
                    h = series[i][0].get(cb.group(1))
                    counts[h] = counts.get(h, 0) + 1
                for h, k in counts.items():
                    metric = json.dumps({cb.group(1): h} if h is not None else {})
                    yield ("" if first else ",") + '{"metric":%s,"values":[%s]}' % (
                        metric, self.values(str(k), start, end, step))
                    first = False
            else:
                for i in keep:
                    e = series[i]
                    v = e[1]
                    if len(e) > 2:  # one sample, when it is in the window
                        t = T0 + e[2]
                        if t < start or t > end or (t - start) % step:
                            continue
                        vals = '[%d,"%s"]' % (t, v)
                    else:
                        vals = self.values(v, start, end, step)
                    yield ("" if first else ",") + '{"metric":%s,"values":[%s]}' % (mj[i], vals)
                    first = False
        yield "]}}"

    def host_counts(self, query):
        """`count by (LABEL) (...)` of the query's metric: {host: series}."""
        name = next((m for text, m in METRICS if text in query), None)
        cb = COUNT_BY.match(query)
        counts = {}
        if name and cb:
            series = self.fleet.series[name]
            for i in self.selected(name, query):
                h = series[i][0].get(cb.group(1))
                counts[h] = counts.get(h, 0) + 1
        return cb.group(1) if cb else None, counts

    def series_at(self, query, t):
        """The query's metric's series with a sample within Prometheus's
        5-minute lookback of instant t (a churned pod's one sample only
        then)."""
        name = next((m for text, m in METRICS if text in query), None)
        if not name:
            return 0
        series = self.fleet.series[name]
        return sum(1 for i in self.selected(name, query)
                   if len(series[i]) < 3 or 0 <= t - (T0 + series[i][2]) < 300)

    def instant(self, h, q):
        """/api/v1/query: the host lookup of a split hour (an instant
        `count by (Hostname) (count_over_time((memory)[1h:step]))`) and,
        when self.counts is set, a first collect's `count((QUERY))`."""
        t = q.get("time", ["0"])[0]
        if COUNT.match(q["query"][0]):
            n = int(self.series_at(q["query"][0], int(float(t))) * self.counts)
            res = '{"metric":{},"value":[%s,"%d"]}' % (t, n) if n else ""
        else:
            label, counts = self.host_counts(q["query"][0])
            res = ",".join('{"metric":%s,"value":[%s,"%d"]}'
                           % (json.dumps({label: k} if k is not None else {}), t, n)
                           for k, n in counts.items())
        body = ('{"status":"success","data":{"resultType":"vector","result":[%s]}}'
                % res).encode()
        self.requests.append((h.path, len(body)))
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def handle(self, h):
        u = urllib.parse.urlsplit(h.path)
        q = urllib.parse.parse_qs(u.query)
        asked = q.get("query", [""])[0]
        if u.path == "/api/v1/query" and (COUNT_BY.match(asked) or
                                          (self.counts is not None and COUNT.match(asked))):
            self.instant(h, q)
            return
        if u.path != "/api/v1/query_range":
            body = b'{"status":"error","errorType":"bad_data","error":"not served"}'
            h.send_response(400)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
            return
        query = q["query"][0]
        start, end = int(float(q["start"][0])), int(float(q["end"][0]))
        step = int(float(q["step"][0]))
        # built once (it used to be generated twice: to count, then to send)
        body = "".join(self.parts(query, start, end, step)).encode()
        self.requests.append((h.path, len(body)))
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        try:
            for off in range(0, len(body), 1 << 20):
                h.wfile.write(body[off:off + (1 << 20)])
        except OSError:
            pass  # the client stopped reading (a response cap)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def time_v(cmd, timefile, stdout, stderr, timeout=3600, cwd=None):
    """(exit status, wall s, peak RSS KiB) of cmd under /usr/bin/time -v."""
    t0 = time.time()
    p = subprocess.run(["/usr/bin/time", "-v", "-o", timefile] + cmd, stdin=subprocess.DEVNULL,
                       stdout=stdout, stderr=stderr, timeout=timeout, cwd=cwd)
    wall = time.time() - t0
    text = open(timefile).read()
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    return p.returncode, wall, int(m.group(1)) if m else None


CASES = {
    "fleet4096": dict(nodes=512, gpus=8, pods_per_gpu=1, containers=1,
                      per_process_device_metrics=True),
    "series100k": dict(nodes=1563, gpus=8, pods_per_gpu=2, containers=4,
                       per_process_device_metrics=False),
    # a batch cluster's pod churn: 64 nodes x 8 GPUs, 310,000 one-sample
    # FB_USED series in the first hour (a 62 MiB response, under the
    # default cap, at any chunk_hours)
    "sparse310k": dict(nodes=64, gpus=8, pods_per_gpu=0, containers=1,
                       per_process_device_metrics=False, sparse_pods=310000),
}


def run_case(name, args, work):
    log("%s: generating the model" % name)
    fleet = Fleet(**CASES[name])
    srv = Server(fleet)
    try:
        cfg = {
            "prometheus": {"url": srv.url(), "timeout_seconds": 600},
            "teams": {"rules": [{"pod_label": "team"}]},
            "prices": {"entries": [{"model_pattern": "^NVIDIA A100", "unit": "GB-Hours",
                                    "price": "0.05", "currency": "USD",
                                    "valid_from": "2026-01-01T00:00:00Z"}]},
            "billing": {"currency": "USD"},
        }
        cfg["collection"] = {}
        if args.hours:
            cfg["collection"]["chunk_hours"] = args.hours
        if args.max_samples_in_memory:
            cfg["collection"]["max_samples_in_memory"] = args.max_samples_in_memory
        if args.max_response_bytes:
            cfg["prometheus"]["max_response_bytes"] = args.max_response_bytes
        hours = args.hours or 6
        cpath = os.path.join(work, name + ".json")
        with open(cpath, "w") as f:
            json.dump(cfg, f)
        db = os.path.join(work, name + ".db")
        frm = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(T0))
        to = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(T0 + hours * 3600))
        log("%s: gpuledger collect %s..%s" % (name, frm, to))
        errf = os.path.join(work, name + ".stderr")
        with open(errf, "w") as e:
            rc, wall, rss = time_v([os.path.abspath(args.bin), "--config", cpath, "--db", db,
                                    "collect", "--from", frm, "--to", to],
                                   os.path.join(work, name + ".time"), subprocess.DEVNULL, e)
        reqs = list(srv.requests)
        err = open(errf, errors="replace").read()
        splits = err.count("splitting")
        samples = re.search(r"samples=(\d+)", err)
        log("%s: curl of the same %d requests" % (name, len(reqs)))
        lst = os.path.join(work, name + ".curl")
        with open(lst, "w") as f:
            for path, _ in reqs:
                f.write('url = "%s%s"\noutput = "/dev/null"\n' % (srv.url(), path))
        crc, cwall, crss = time_v(["curl", "-s", "--noproxy", "*", "-K", lst],
                                  os.path.join(work, name + ".ctime"), subprocess.DEVNULL,
                                  subprocess.DEVNULL)
        return {"case": name, "rc": rc, "rss": rss, "wall": wall, "requests": len(reqs),
                "largest": max((n for _, n in reqs), default=0),
                "bytes": sum(n for _, n in reqs), "splits": splits,
                "samples": samples.group(1) if samples else "-",
                "curl_rss": crss, "curl_rc": crc, "err": err if rc else ""}
    finally:
        srv.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the gpuledger binary to measure")
    ap.add_argument("--case", default="all", choices=["all"] + sorted(CASES))
    ap.add_argument("--hours", type=int, default=0,
                    help="collection.chunk_hours (default: the engine's default, 6)")
    ap.add_argument("--max-response-bytes", type=int, default=0,
                    help="prometheus.max_response_bytes (default: the engine's default; "
                    "an engine that does not know the key refuses it)")
    ap.add_argument("--max-samples-in-memory", type=int, default=0,
                    help="collection.max_samples_in_memory (default: the engine's default; "
                    "an engine that does not know the key refuses it)")
    ap.add_argument("--work", help="work directory (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    for tool in ("/usr/bin/time", "curl"):
        if not shutil.which(tool):
            sys.exit("memory.py: %s not found (apt-get install time curl)" % tool)
    work = args.work or tempfile.mkdtemp(prefix="gpuledger-membench-")
    os.makedirs(work, exist_ok=True)
    cases = sorted(CASES) if args.case == "all" else [args.case]
    rows = [run_case(c, args, work) for c in cases]
    mib = 1024 * 1024
    print("binary: %s; chunk %s h at 60 s; max_response_bytes %s; max_samples_in_memory %s; "
          "loopback server from a generated model; load average %s"
          % (args.bin, args.hours or "6 (default)", args.max_response_bytes or "default",
             args.max_samples_in_memory or "default",
             " ".join("%.2f" % x for x in os.getloadavg())))
    print("%-11s %4s %11s %9s %13s %12s %5s %6s %10s %8s" % (
        "case", "exit", "engine RSS", "curl RSS", "largest resp", "all bytes", "reqs",
        "splits", "samples", "wall"))
    for r in rows:
        print("%-11s %4s %7.0f MiB %5.0f MiB %9.1f MiB %8.1f MiB %5d %6d %10s %7.1fs" % (
            r["case"], r["rc"], (r["rss"] or 0) / 1024, (r["curl_rss"] or 0) / 1024,
            r["largest"] / mib, r["bytes"] / mib, r["requests"], r["splits"], r["samples"],
            r["wall"]))
        if r["rc"]:
            print("  engine stderr: %s" % r["err"].strip()[-600:])
    if not args.keep and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("work directory: %s" % work)
    return 0 if all(r["rc"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
