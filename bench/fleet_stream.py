#!/usr/bin/env python3
"""fleet_stream.py - a large bench fleet into a Prometheus TSDB without
holding the fleet in memory.

Usage:
  python3 bench/fleet_stream.py SCENARIO.json OUT_DIR [--slice-hours 2]
      [--jobs 2] [--shard-nodes 64] [--om-only]

tests/gen/gencluster.py builds every sample of a scenario in memory before
it writes one line (26 h of 10,240 GPUs: over 10 GB, 25 GB of text). Here the
window is cut into slices of --slice-hours (whole hours from the scenario's
start) and the nodes into shards of --shard-nodes (each with the pods that
run on it; the namespaces go with the first shard only, so their series are
written once). A slice's file is the shards' gencluster output one after
another, each built by gencluster itself over that slice alone (its steps
clipped: the values, churn and gaps stay those of the whole window, as they
are indexed from the scenario's start), so the sample lines are exactly
gencluster's. Each slice file is backfilled by its own `promtool tsdb
create-blocks-from openmetrics --max-block-duration=<slice>` run and deleted,
--jobs slices at a time; the blocks land in OUT_DIR/tsdb (one per slice, no
overlap). OUT_DIR also gets prices.csv and config.json (gencluster's).

--om-only writes the slice files to OUT_DIR and backfills nothing (the
check that the lines are gencluster's: bench/fleet_stream_check.sh).
Memory: one shard of one slice per job. Disk: --jobs slice files at a time.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "gen"))
import gencluster  # noqa: E402

EOF_LINE = "# EOF\n"


class SliceCluster(gencluster.Cluster):
    """gencluster's cluster with its samples limited to [lo, hi): every
    series is generated through _steps, so clipping it clips them all while
    the step index (values, churn) still counts from the scenario's start."""

    def __init__(self, scn, lo, hi):
        self._clip = (lo, hi)
        super().__init__(scn)

    def _steps(self, lo, hi):
        return super()._steps(max(lo, self._clip[0]), min(hi, self._clip[1]))


def shards(scn, per):
    """Scenarios of `per` nodes each with their pods; namespaces in the first."""
    nodes = scn["nodes"]
    groups = [nodes[i:i + per] for i in range(0, len(nodes), per)] or [[]]
    where = {n["name"]: k for k, g in enumerate(groups) for n in g}
    pods = [[] for _ in groups]
    for p in scn["pods"]:
        pods[where.get(p["node"], 0)].append(p)
    for k, g in enumerate(groups):
        s = dict(scn)
        s.update(nodes=g, pods=pods[k], namespaces=scn["namespaces"] if k == 0 else [])
        yield s


def write_slice(scn, lo, hi, per, path):
    """One slice's OpenMetrics, shard after shard; returns its sample lines."""
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for s in shards(scn, per):
            n += SliceCluster(s, lo, hi).write_openmetrics(f)
            # one exposition per file: drop the shard's own "# EOF"
            f.flush()
            f.seek(f.tell() - len(EOF_LINE))
            f.truncate()
        f.write(EOF_LINE)
    return n


def one_slice(job):
    scn, lo, hi, per, out, om_only = job
    path = os.path.join(out, "slice-%d.om" % lo)
    t0 = time.time()
    n = write_slice(scn, lo, hi, per, path)
    t1 = time.time()
    if not om_only:
        blocks = os.path.join(out, "blocks-%d" % lo)
        shutil.rmtree(blocks, ignore_errors=True)
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q",
                        "--max-block-duration=%dh" % ((hi - lo) // 3600), path, blocks],
                       check=True, stdout=subprocess.DEVNULL)
        os.unlink(path)
    return lo, n, t1 - t0, time.time() - t1


def build(scn_path, out, slice_hours=2, jobs=2, shard_nodes=64, om_only=False, log=None):
    """Writes out/tsdb (or the slice files), out/prices.csv, out/config.json;
    returns (sample lines, generation s, backfill s) summed over the slices."""
    with open(scn_path) as f:
        scn = json.load(f)
    os.makedirs(out, exist_ok=True)
    head = SliceCluster(dict(scn, nodes=[], pods=[]), 0, 0)
    with open(os.path.join(out, "prices.csv"), "w", newline="") as f:
        f.write(head.prices_csv())
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(head.run_config(), f, indent=1)
    step = slice_hours * 3600
    cuts = list(range(head.start, head.end, step))
    todo = [(scn, lo, min(lo + step, head.end), shard_nodes, out, om_only) for lo in cuts]
    total = [0, 0.0, 0.0]
    tsdb = os.path.join(out, "tsdb")
    os.makedirs(tsdb, exist_ok=True)
    with multiprocessing.Pool(jobs) as pool:
        for lo, n, gen_s, fill_s in pool.imap_unordered(one_slice, todo):
            total[0] += n
            total[1] += gen_s
            total[2] += fill_s
            if not om_only:
                blocks = os.path.join(out, "blocks-%d" % lo)
                for b in os.listdir(blocks):
                    os.rename(os.path.join(blocks, b), os.path.join(tsdb, b))
                os.rmdir(blocks)
            if log:
                log("slice %s: %d samples, generated in %.1f s (%.0f/s)%s"
                    % (gencluster.fmt_time(lo), n, gen_s, n / max(gen_s, 1e-9),
                       "" if om_only else ", backfilled in %.1f s (%.0f/s)"
                       % (fill_s, n / max(fill_s, 1e-9))))
    return tuple(total)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("out")
    ap.add_argument("--slice-hours", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--shard-nodes", type=int, default=64)
    ap.add_argument("--om-only", action="store_true")
    a = ap.parse_args(argv[1:])
    if a.slice_hours < 1 or a.jobs < 1 or a.shard_nodes < 1:
        ap.error("--slice-hours, --jobs and --shard-nodes are at least 1")

    def log(msg):
        print("fleet_stream: " + msg, file=sys.stderr, flush=True)
    n, gen_s, fill_s = build(a.scenario, a.out, a.slice_hours, a.jobs, a.shard_nodes,
                             a.om_only, log)
    log("%d samples: generation %.0f s, backfill %.0f s (CPU-side sums over the slices)"
        % (n, gen_s, fill_s))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
