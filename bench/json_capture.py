#!/usr/bin/env python3
"""json_capture.py - the engine's own query_range bodies of a 6 h collect,
captured for bench/json_eval.cpp (bench/json_eval.sh runs it).

Usage: python3 bench/json_capture.py --bin build/gpuledger --out DIR [--sizes 64,1024,4096]

Per fleet (bench/scale.py's cached fleets, built by it when missing): a copy
of the fleet's TSDB served by a real Prometheus (as scale.py starts it), one
`collect` of 2026-11-29T00:00Z..06:00Z through collect_bench's recording
proxy for the exact request list, then every request fetched again with curl:
  DIR/<gpus>/NN.json   the decompressed body (curl --compressed)
  DIR/<gpus>/NN.z      the body as Prometheus sends it to libcurl's default
                       Accept-Encoding (the engine's), its Content-Encoding
                       in the manifest
  DIR/<gpus>/manifest.tsv  NN, start, step, nsteps, encoding, json bytes,
                       compressed bytes, the request path
With --callgrind, the request-list collect runs under valgrind's callgrind
(through the proxy: its CPU is not the engine's) and the engine's total
instructions are printed, the denominator of json_eval's projection.
Prometheus is stopped (by its PID) before the next fleet.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import collect_bench  # noqa: E402
import scale  # noqa: E402

# what libcurl 7.88 (zlib, brotli, zstd) sends for CURLOPT_ACCEPT_ENCODING ""
ACCEPT = "deflate, gzip, br, zstd"


def capture(fleet, binary, out, work, callgrind=False):
    d = os.path.join(out, str(fleet.gpus))
    os.makedirs(d, exist_ok=True)
    tsdb = os.path.join(work, "tsdb-%d" % fleet.gpus)
    shutil.rmtree(tsdb, ignore_errors=True)
    shutil.copytree(fleet.tsdb, tsdb)  # Prometheus writes into its TSDB
    prom = scale.Prometheus(tsdb, os.path.join(work, "prometheus-%d.log" % fleet.gpus))
    try:
        w0 = scale.rfc(fleet.start)
        w1 = scale.rfc(fleet.start + 6 * 3600)
        proxy = collect_bench.RecordingProxy(prom.url)
        try:
            cfg = fleet.config(os.path.join(work, "cfg-%d.json" % fleet.gpus), proxy.url)
            vg = (["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
                  if callgrind else [])
            r = subprocess.run(vg + [binary, "--config", cfg, "--db", os.path.join(work, "c-%d.db" % fleet.gpus),
                            "--quiet", "collect", "--from", w0, "--to", w1],
                           check=True, stdin=subprocess.DEVNULL,
                           stderr=subprocess.PIPE if callgrind else None, text=True)
            if callgrind:
                ir = [l.split(":")[1].strip() for l in r.stderr.splitlines() if "Collected :" in l]
                scale.log("%d GPUs: collect under callgrind: %s instructions" % (fleet.gpus, ir[-1]))
        finally:
            proxy.close()
        rows = []
        for i, (method, path) in enumerate(proxy.requests):
            if method != "GET" or not path.startswith("/api/v1/query_range"):
                continue
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
            start, end, step = (int(float(q[k][0])) if k != "step" else
                                int(float(q[k][0].rstrip("s"))) for k in ("start", "end", "step"))
            nsteps = (end - start) // step + 1
            js = os.path.join(d, "%02d.json" % i)
            z = os.path.join(d, "%02d.z" % i)
            url = prom.url + path
            subprocess.run(["curl", "-sSf", "--noproxy", "*", "--compressed", "-H",
                            "Accept: application/json", "-o", js, url], check=True)
            hdr = subprocess.run(["curl", "-sSf", "--noproxy", "*", "-H", "Accept-Encoding: " + ACCEPT,
                                  "-H", "Accept: application/json", "-D", "-", "-o", z, url],
                                 check=True, capture_output=True, text=True).stdout
            enc = "identity"
            for line in hdr.splitlines():
                if line.lower().startswith("content-encoding:"):
                    enc = line.split(":", 1)[1].strip()
            rows.append("%02d\t%d\t%d\t%d\t%s\t%d\t%d\t%s" % (i, start, step, nsteps, enc,
                                                            os.path.getsize(js), os.path.getsize(z), path))
        with open(os.path.join(d, "manifest.tsv"), "w") as f:
            f.write("\n".join(rows) + "\n")
        scale.log("%d GPUs: %d bodies, %.1f MB JSON" % (
            fleet.gpus, len(rows), sum(int(r.split("\t")[5]) for r in rows) / 1e6))
    finally:
        prom.stop()
        shutil.rmtree(tsdb, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="64,1024,4096")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "gpuledger-scale-cache"))
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gpuledger-jsoncap-")
    try:
        for g in (int(x) for x in a.sizes.split(",")):
            capture(scale.Fleet(a.cache, g, 6), os.path.abspath(a.bin), os.path.abspath(a.out), work,
                    a.callgrind)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
