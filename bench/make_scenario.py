#!/usr/bin/env python3
"""make_scenario.py - write the benchmark cluster scenario (tests/gen format).

Usage: python3 bench/make_scenario.py OUT.json [--days N] [--start RFC3339]
           [--hours H] [--replicate K]

8 nodes x 8 devices = 64 GPUs, 60 s step, N days (default 7):
  gpu-a100-1..4  A100-SXM4-80GB, exclusive, one pod per GPU (a quarter of the
                 GPUs change pods mid-week with a 2 h idle gap in between)
  gpu-h100-5..6  H100 80GB HBM3, exclusive, one pod per GPU
  gpu-h100-7     H100, per-process mode, 2-3 pods per GPU (some in two vgpu slots)
  gpu-a100-8     4 A100 in per-process mode (2 pods each) + 4 MIG 3g.40gb
                 instances (two per physical GPU), exclusive, one pod each
Teams come from pod labels, namespace labels, a namespace regex and the
default; one namespace relabels mid-week; one node has a 10-minute scrape
gap; the A100 price changes mid-week. Deterministic (fixed seed), so the
same arguments always give the same file (the bench caches on its hash).

Scale options (bench/scale.py; without them the file is the 64-GPU week):
  --replicate K  K copies of the 8 nodes (64 x K GPUs); copy r > 1 has nodes
                 named gpu-...-N-rR with their own UUIDs and pods, drawn from
                 the same seeded generator after the first copy.
  --gpus-per-node G  G devices per node instead of 8 (2, 4 or 6: a smaller
                 fleet with the same features, for long windows,
                 bench/server_mode.sh): nodes 1-7 keep their first G
                 devices (churn on device 1 of each exclusive node), node 8
                 has G/2 per-process GPUs and G/2 MIG instances; the
                 mid-window relabel moves namespace team-nlp (whose pods
                 run across it) as well.
  --hours H      a window of H hours instead of --days (the mid-window events
                 and the pod churn scale with it; the scrape gap of day 2 is
                 left out when the window is shorter).
"""

import argparse
import calendar
import json
import random
import sys
import time

STEP = 60


def t(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def parse(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--start", default="2026-10-05T00:00:00Z")
    ap.add_argument("--hours", type=int, default=0)
    ap.add_argument("--replicate", type=int, default=1)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    a = ap.parse_args(argv[1:])
    if a.replicate < 1 or a.hours < 0:
        ap.error("--replicate >= 1 and --hours >= 0")
    if a.gpus_per_node not in (2, 4, 6, 8):
        ap.error("--gpus-per-node is 2, 4, 6 or 8")
    per = a.gpus_per_node
    rnd = random.Random(20261005)
    start = parse(a.start)
    span = a.hours * 3600 if a.hours else a.days * 86400
    end = start + span
    mid = start + (span // 2) // 3600 * 3600

    namespaces = [
        {"name": "team-a", "labels": {"team": "ml-research", "costCenter": "cc-1042"},
         "changes": [{"at": t(mid + 6 * 3600 + 17 * 60),
                      "labels": {"team": "nlp", "costCenter": "cc-2001"}}]},
        {"name": "team-nlp", "labels": {"team": "nlp"}},
        {"name": "team-vision"},                       # regex ^team-(.+)$ -> vision
        {"name": "team-recsys", "labels": {"team": "recsys"}},
        {"name": "serving", "labels": {"team": "nlp"}},
        {"name": "sandbox"},                           # default team
        {"name": "gpu-operator"},
    ]
    if per < 8:
        # the smaller fleet's team-a pods all start after the relabel: the
        # pods of team-nlp (node 1's first GPU among them, all window long)
        # change team at the same instant instead
        namespaces[1]["changes"] = [{"at": t(mid + 6 * 3600 + 17 * 60),
                                     "labels": {"team": "recsys"}}]
    ns_cycle = ["team-a", "team-nlp", "team-vision", "team-recsys", "serving", "sandbox"]
    pods = []
    counter = [0]

    def new_pod(node, ns=None, frm=None, to=None, gpus=1, res="nvidia.com/gpu"):
        counter[0] += 1
        i = counter[0]
        ns = ns or ns_cycle[i % len(ns_cycle)]
        name = "%s-%d" % (rnd.choice(["train", "eval", "infer", "etl", "vllm", "ft"]), i)
        uid = "%08x-%04x-4%03x-a%03x-%012x" % (rnd.getrandbits(32), rnd.getrandbits(16),
                                                rnd.getrandbits(12), rnd.getrandbits(12),
                                                rnd.getrandbits(48))
        p = {"namespace": ns, "name": name, "uid": uid, "container": name.split("-")[0],
             "node": node, "requests": {res: gpus}}
        if i % 5 == 0:
            p["labels"] = {"team": "vision", "app": name.split("-")[0]}
        else:
            p["labels"] = {"app": name.split("-")[0]}
        if frm is not None:
            p["from"] = t(frm)
        if to is not None:
            p["to"] = t(to)
        pods.append(p)
        return ns + "/" + name

    def swing(lo, hi):
        base = rnd.randint(lo, (lo + hi) // 2)
        return {"base": base, "swing": rnd.randint(0, hi - base),
                "period": rnd.randint(30, 400), "phase": rnd.randint(0, 400)}

    def uuid():
        return "GPU-%08x-%04x-%04x-%04x-%012x" % (rnd.getrandbits(32), rnd.getrandbits(16),
                                                  rnd.getrandbits(16), rnd.getrandbits(16),
                                                  rnd.getrandbits(48))

    A100 = ("NVIDIA A100-SXM4-80GB", 81920, 615, "NVIDIA-A100-SXM4-80GB")
    H100 = ("NVIDIA H100 80GB HBM3", 81559, 527, "NVIDIA-H100-80GB-HBM3")
    nodes = []
    for rep, n in ((r, n) for r in range(1, a.replicate + 1) for n in range(1, 9)):
        model, cap, res, product = A100 if n in (1, 2, 3, 4, 8) else H100
        name = "gpu-%s-%d" % ("a100" if model == A100[0] else "h100", n)
        if rep > 1:
            name += "-r%d" % rep
        node = {"name": name,
                "labels": {"nvidia.com/gpu.product": product, "nvidia.com/gpu.memory": str(cap),
                           "nvidia.com/gpu.count": str(per)},
                "gpus": []}
        if n == 3 and span > 86400 + 9 * 3600:
            node["gaps"] = [{"from": t(start + 86400 + 8 * 3600 + 25 * 60),
                             "to": t(start + 86400 + 8 * 3600 + 35 * 60)}]
        for i in range(per):
            # node 8's halves: per-process GPUs first, then MIG instances
            g = i if n != 8 or i < per // 2 else 4 + i - per // 2
            dev = {"gpu": g, "uuid": uuid(), "pci_bus_id": "00000000:%02X:00.0" % (0x07 + 8 * g),
                   "model": model, "capacity_mib": cap, "reserved_mib": res}
            if n <= 6:
                dev["mode"] = "exclusive"
                if (n * 8 + g) % 4 == 1:       # pod churn with an idle gap
                    cut = start + (rnd.randint(a.days * 6, a.days * 18) * 3600 if not a.hours
                                   else rnd.randint(span // 4, span // 2) // 60 * 60)
                    p1 = new_pod(name, to=cut)
                    p2 = new_pod(name, frm=cut + 7200)
                    dev["idle_used_mib"] = 4
                    dev["occupants"] = [
                        {"pod": p1, "to": t(cut), "used_mib": swing(8000, cap - res - 1)},
                        {"pod": p2, "from": t(cut + 7200), "used_mib": swing(8000, cap - res - 1)}]
                else:
                    dev["occupants"] = [{"pod": new_pod(name),
                                         "used_mib": swing(8000, cap - res - 1)}]
            elif n == 7 or g < 4:
                dev["mode"] = "process"
                dev["unattributed_mib"] = 320
                k = 2 + (g % 2) if n == 7 else 2
                budget = (cap - res - 320) // k
                occ = []
                for j in range(k):
                    o = {"pod": new_pod(name, ns="serving" if j == 0 else None),
                         "vgpu": [str(g * 4 + j)] if (g + j) % 3 else
                                 [str(g * 4 + j), str(g * 4 + j + 32)],
                         "used_mib": swing(2000, budget)}
                    occ.append(o)
                dev["occupants"] = occ
            else:                                  # MIG 3g.40gb, two per physical GPU
                phys = 4 + (g - 4) // 2
                if g % 2 == 0:
                    mig_uuid = uuid()
                    node["_mig_uuid"] = mig_uuid
                dev.update({"gpu": phys, "uuid": node["_mig_uuid"],
                            "pci_bus_id": "00000000:%02X:00.0" % (0x07 + 8 * phys),
                            "mig": {"profile": "3g.40gb", "id": 1 + (g % 2)},
                            "capacity_mib": 40192, "reserved_mib": 11, "mode": "exclusive",
                            "occupants": [{"pod": new_pod(name, res="nvidia.com/mig-3g.40gb"),
                                           "used_mib": swing(3000, 40192 - 11 - 1)}]})
            node["gpus"].append(dev)
        node.pop("_mig_uuid", None)
        nodes.append(node)

    scn = {
        "name": "bench-%dgpu-%s" % (8 * per * a.replicate,
                                    "%dh" % a.hours if a.hours else "%dd" % a.days),
        "description": "gpuledger benchmark cluster: %d nodes x %d devices, %s at 60 s "
                       "(generated by bench/make_scenario.py)"
                       % (8 * a.replicate, per, "%d hours" % a.hours if a.hours else "%d days" % a.days),
        "start": t(start), "end": t(end),
        "window": {"from": t(start), "to": t(end)},
        "step_seconds": STEP,
        "period": time.strftime("%Y-%m", time.gmtime(start)),
        "driver_version": "550.54.15",
        "cluster": {"name": "gpu-bench", "label": "cluster", "emit": True},
        "namespaces": namespaces,
        "pods": pods,
        "nodes": nodes,
        "teams": {
            "rules": [{"pod_label": "team"}, {"namespace_label": "team"},
                      {"namespace_regex": "^team-(.+)$", "team": "$1"}],
            "default": "unallocated",
            "catalogue": [
                {"id": "ml-research", "name": "ML Research", "cost_center": "cc-1042"},
                {"id": "nlp", "name": "NLP", "cost_center": "cc-2001"},
                {"id": "vision", "name": "Vision", "cost_center": "cc-3003"},
                {"id": "recsys", "name": "RecSys", "cost_center": "cc-4004"}]},
        "prices": [
            {"model_pattern": "^NVIDIA A100-SXM4-80GB$", "unit": "GB-Hours", "price": "0.05",
             "currency": "USD", "valid_from": "2026-01-01T00:00:00Z", "valid_to": t(mid)},
            {"model_pattern": "^NVIDIA A100-SXM4-80GB$", "unit": "GB-Hours", "price": "0.0625",
             "currency": "USD", "valid_from": t(mid), "valid_to": ""},
            {"model_pattern": "^NVIDIA H100 80GB HBM3$", "unit": "GPU-Hours", "price": "3.99",
             "currency": "USD", "valid_from": "2026-01-01T00:00:00Z", "valid_to": ""}],
        "billing": {"currency": "USD", "account_id": "gpu-bench-01",
                    "account_name": "GPU Bench", "provider": "Platform Team",
                    "service_name": "GPU Platform"},
    }
    with open(a.out, "w") as f:
        json.dump(scn, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
