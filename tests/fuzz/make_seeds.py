#!/usr/bin/env python3
"""Builds the fuzzers' seed corpora in tests/fuzz/corpus/ (run once; the
output is committed, so ./tests/run.sh never needs this script).

  matrix/   query_range bodies captured from a real Prometheus 2.42: the
            real dcgm-exporter/HAMi captures of tests/fixtures/real/*.prom
            and the integration scenario "shared" (kube-state-metrics,
            exported_* labels), backfilled with promtool and queried with the
            engine's own queries/*.promql; an error body and an empty result
            from the same server; two bodies behind a grid header (see
            fuzz_matrix.c)
  config/   config/*.json and the config of every scenario (and its runs)
            in tests/integration/scenarios/, as tests/gen/gencluster.py
            writes them
  prices/   config/prices.example.csv, every scenario's prices.csv and the
            shapes of tests/unit/test_prices.c (quoted pattern, BOM, CRLF,
            blank lines)

The matrix bodies sit on the fixed grid of fuzz_matrix.c: start
2026-10-03T12:00:00Z (GRID_T0), step 60 s, 360 steps.

usage: make_seeds.py [--keep WORKDIR]
"""

import glob
import json
import os
import re
import shutil
import struct
import sys
import tempfile
import urllib.error
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "gen"))
import harness  # noqa: E402
import gencluster  # noqa: E402
import real_fixtures  # noqa: E402

GRID_T0 = 1791028800  # 2026-10-03T12:00:00Z, fuzz_matrix.c's fixed grid
STEP = 60
WINDOW = 20 * 60      # seconds of data per captured body: small seeds
CORPUS = os.path.join(HERE, "corpus")


def write(kind, name, data):
    d = os.path.join(CORPUS, kind)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def query_text(name, selector="", cluster_label="cluster"):
    """queries/NAME.promql as the engine sends it (comments dropped)."""
    with open(os.path.join(ROOT, "queries", name + ".promql")) as f:
        lines = [ln for ln in f.read().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    q = " ".join(lines)
    return (q.replace("${cluster_selector}", selector).replace("${cluster_label}", cluster_label)
            .replace("${gpu_resources}", "nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.*"))


def fetch(prom, promql, start, end, step):
    qs = urllib.parse.urlencode({"query": promql, "start": str(start), "end": str(end),
                                 "step": str(step)})
    try:
        with harness.NO_PROXY_OPENER.open(prom.url() + "/api/v1/query_range?" + qs,
                                          timeout=30) as r:
            return r.read()
    except urllib.error.HTTPError as e:  # an error body is a seed too
        return e.read()


def fixtures_openmetrics(path):
    """The real captures, each sample repeated every STEP over the window
    (values drift a little so the bodies are not all one value)."""
    fams, order = {}, []
    for cap in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "real", "*.prom"))):
        c = real_fixtures.Capture(cap)
        for fam, labels, value in c.samples:
            lt = ",".join(['cluster="%s"' % c.cluster] + ['%s="%s"' % kv for kv in labels])
            if fam not in fams:
                fams[fam] = []
                order.append(fam)
            fams[fam].append((lt, value))
    with open(path, "w") as f:
        for fam in order:
            f.write("# TYPE %s gauge\n" % fam)
            for lt, value in fams[fam]:
                for i in range(WINDOW // STEP + 1):
                    v = float(value)
                    if i % 7 == 3 and v > 0:
                        v = v + i  # a little movement, still the capture's magnitude
                    f.write("%s{%s} %s %d\n" % (fam, lt, repr(v), GRID_T0 + i * STEP))
        # values the parser must skip and count: NaN, infinities, negative,
        # above the 2^48 plausibility bound (Prometheus writes them as text)
        f.write("# TYPE gl_fuzz_specials gauge\n")
        specials = ["NaN", "+Inf", "-Inf", "-1", "1e+300", "5e+14", "0", "81920"]
        for i in range(WINDOW // STEP + 1):
            f.write('gl_fuzz_specials{cluster="specials",UUID="GPU-0",pod="p",namespace="n"} '
                    '%s %d\n' % (specials[i % len(specials)], GRID_T0 + i * STEP))
        f.write("# EOF\n")
    return [os.path.basename(p)[:-5] for p in
            sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "real", "*.prom")))]


def serve(work, name, om):
    tsdb = os.path.join(work, name + "-tsdb")
    rc, out = harness.backfill(om, tsdb, cwd=work, timeout=300)
    if rc != 0:
        raise RuntimeError("promtool: %s" % harness.tail(out))
    wdir = os.path.join(work, name)
    os.makedirs(wdir, exist_ok=True)
    prom = harness.Prometheus(wdir, tsdb)
    prom.start()
    return prom


def matrix_seeds(work):
    om = os.path.join(work, "fixtures.om")
    clusters = fixtures_openmetrics(om)
    prom = serve(work, "fixtures", om)
    try:
        end = GRID_T0 + WINDOW
        for cl in clusters:
            sel = 'cluster="%s"' % cl
            for q in ("fb_used", "fb_free", "fb_reserved", "gpu_util", "gr_engine_active"):
                body = fetch(prom, query_text(q, sel), GRID_T0, end, STEP)
                if b'"result":[]' not in body:
                    write("matrix", "real-%s-%s.json" % (cl, q), body)
        hami = 'cluster="hami-vgpumonitor"'
        for fam in ("vGPU_device_memory_usage_in_bytes", "HostGPUMemoryUsage",
                    "Device_memory_desc_of_container"):
            write("matrix", "real-hami-%s.json" % fam,
                  fetch(prom, "%s{%s}" % (fam, hami), GRID_T0, end, STEP))
        # the same data at a 30 s step: half the timestamps are off the 60 s grid
        write("matrix", "real-t4-fb_used-step30.json",
              fetch(prom, query_text("fb_used", 'cluster="dcgm-t4"'), GRID_T0, end, 30))
        # starting before the grid: samples outside the window
        write("matrix", "real-t4-fb_used-early.json",
              fetch(prom, query_text("fb_used", 'cluster="dcgm-t4"'), GRID_T0 - 600, end, STEP))
        write("matrix", "real-specials-nan-inf-negative-huge.json",
              fetch(prom, 'gl_fuzz_specials{cluster="specials"}', GRID_T0, end, STEP))
        write("matrix", "real-empty-result.json",
              fetch(prom, "DCGM_FI_DEV_FB_USED{cluster=\"none\"}", GRID_T0, end, STEP))
        write("matrix", "real-error-bad-data.json",
              fetch(prom, "sum by (", GRID_T0, end, STEP))
        body = fetch(prom, query_text("fb_used", 'cluster="dcgm-rtx4000ada-k8s"'), GRID_T0, end,
                     STEP)
    finally:
        prom.stop()
    # grid header (fuzz_matrix.c): 0x00, step index, chunk hours, int16 hour offset
    divisors = [d for d in range(1, 3601) if 3600 % d == 0]
    write("matrix", "grid-step60-6h.bin", struct.pack("<BBBh", 0, divisors.index(60), 6, 0) + body)
    write("matrix", "grid-step30-1h-early.bin",
          struct.pack("<BBBh", 0, divisors.index(30), 1, -1) + body)

    # the scenario "shared": kube-state-metrics series and exported_* labels
    gen = os.path.join(work, "shared")
    cl, _, _ = gencluster.generate(os.path.join(ROOT, "tests", "integration", "scenarios",
                                                "shared.json"), gen)
    prom = serve(work, "shared", os.path.join(gen, "data.om"))
    try:
        end = GRID_T0 + WINDOW
        for q in ("fb_used", "gr_engine_active", "gpu_util", "allocation", "pod_labels",
                  "namespace_labels", "node_labels"):
            body = fetch(prom, query_text(q), GRID_T0, end, STEP)
            if b'"result":[]' not in body:
                write("matrix", "shared-%s.json" % q, body)
    finally:
        prom.stop()


def config_seeds():
    for path in sorted(glob.glob(os.path.join(ROOT, "config", "*.json"))):
        shutil.copyfile(path, os.path.join(CORPUS, "config", os.path.basename(path)))
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "integration", "scenarios", "*.json"))):
        name = os.path.basename(path)[:-5]
        cl = gencluster.load_scenario(path)
        write("config", "scenario-%s.json" % name, json.dumps(cl.run_config(), indent=2) + "\n")
        for run in cl.runs:
            write("config", "scenario-%s-%s.json" % (name, run["name"]),
                  json.dumps(cl.run_config(run["config"]), indent=2) + "\n")
        write("prices", "scenario-%s.csv" % name, cl.prices_csv())
    # prices given inline: the example's rows as prices.entries
    with open(os.path.join(ROOT, "config", "gpuledger.example.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(ROOT, "config", "prices.example.csv")) as f:
        rows = [ln.split(",") for ln in f.read().splitlines()[1:]]
    cols = ["model_pattern", "unit", "price", "currency", "valid_from", "valid_to", "capacity_gb"]
    cfg["prices"] = {"entries": [{k: v for k, v in zip(cols, r) if v} for r in rows]}
    write("config", "example-price-entries.json", json.dumps(cfg, indent=2) + "\n")


def price_seeds():
    shutil.copyfile(os.path.join(ROOT, "config", "prices.example.csv"),
                    os.path.join(CORPUS, "prices", "prices.example.csv"))
    head = "model_pattern,unit,price,currency,valid_from,valid_to,capacity_gb\n"
    write("prices", "quoted-bom-crlf.csv",
          ("\ufeff" + head + '"^NVIDIA H100.*$",GPU-Hours,4.00,USD,2026-01-01T00:00:00Z,,80\n'
           '\n"^Tesla, T4$",GB-Hours,0.000000000001,USD,2026-01-01T00:00:00Z,'
           '2026-10-02T12:00:00Z,\n').replace("\n", "\r\n"))
    write("prices", "six-columns.csv",
          "model_pattern,unit,price,currency,valid_from,valid_to\n"
          "^NVIDIA A30$,GPU-Hours,1.10,USD,2026-01-01T00:00:00Z,\n"
          "^NVIDIA A30$,GPU-Hours,1.20,USD,2026-01-01T00:00:00Z,\n")


def main():
    keep = None
    if sys.argv[1:2] == ["--keep"]:
        keep = sys.argv[2]
    for kind in ("matrix", "config", "prices"):
        shutil.rmtree(os.path.join(CORPUS, kind), ignore_errors=True)
        os.makedirs(os.path.join(CORPUS, kind))
    work = keep or tempfile.mkdtemp(prefix="gl-seeds-")
    try:
        config_seeds()
        price_seeds()
        matrix_seeds(work)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    total = sum(os.path.getsize(p) for p in glob.glob(os.path.join(CORPUS, "*", "*")))
    print("corpus: %d files, %d bytes" % (len(glob.glob(os.path.join(CORPUS, "*", "*"))), total))


if __name__ == "__main__":
    main()
