#!/usr/bin/env python3
"""The fixed database of the golden-file tests (tests/golden/README.md).

Usage: python3 tests/golden/make_db.py DB STAGE [STAGE...]

Writes rows straight into SQLite (the engine's own schema files, applied in
order, PRAGMA user_version set as engine/ledger/store.c does), so the outputs do
not depend on Prometheus, the collector or the clock. The statements are the
writers of tests/integration/ledger_db.py (the tests' one view of the
schema); this file holds only the model of what is stored. Stages:

  base   devices; 2026-08-30, 2026-09-29 and 2026-10-01/02 (3 + 2 + 3 hours);
         every other hour of August and September collected with no data
         (the backend had none), so that both months are complete and close
  late   one more hour of 2026-09 (2026-09-30T12), collected after the close
         of 2026-09: it becomes correction lines of 2026-10

Every quantity is written from the small model below (MiB held x seconds),
never from engine output. Per device and hour the rows reconcile:
capacity = used + reserved-unused billed + reserved + unattributed + idle
- excess. Labels carry characters that every format must escape (|, <, &,
backquote, brackets).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import ledger_db  # noqa: E402

A100 = "NVIDIA A100-SXM4-80GB"
H100 = "NVIDIA H100 80GB HBM3"
CLUSTER = "east"
HOSTILE_TEAM = "t<&>|`x`"
HOSTILE_NODE = "node-<2>|[x](y)"

# id, uuid, gpu_i_id, profile, model, hostname, max capacity MiB
DEVICES = [
    (1, "GPU-aaaa", "", "", A100, "node-1", 81920),
    (2, "GPU-bbbb", "3", "1g.10gb", A100, "node-1", 9856),
    (3, "GPU-cccc", "", "", H100, HOSTILE_NODE, 81559),
    (4, "node:node-1", A100, "", A100, "node-1", 0),      # allocation rows
    (5, "node:" + HOSTILE_NODE, H100, "", H100, HOSTILE_NODE, 0),
    (6, "GPU-dddd", "", "", A100, "node-3", 81920),       # seen, no memory metrics
    (7, "node:", "unknown", "", "unknown", "", 0),        # unscheduled Pending pods
]

S = 3600


def hour(ts):
    import calendar
    import time
    return calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H"))


BASE_HOURS = ["2026-08-30T10", "2026-08-30T11", "2026-08-30T12",
              "2026-09-29T10", "2026-09-29T11",
              "2026-10-01T10", "2026-10-01T11", "2026-10-02T10"]
LATE_HOURS = ["2026-09-30T12"]


def rows_of_hour(h, late):
    """(namespace, pod, device_id, team, kind, quantity, estimated) rows of one hour."""
    r = []
    october = h >= hour("2026-10-01T00")
    # GPU-aaaa (A100, 81920 MiB): two pods share it
    train = 40000 if not late else 30000
    infer = 20000
    rub_vision = 480 if october else 0   # billed reserved-unused (basis allocated)
    reserved, unattr = 500, 1000
    cap = 81920
    idle = cap - train - infer - rub_vision - reserved - unattr
    r += [("ml", "train-0", 1, "ml-research", "memory_used", train * S, 0),
          ("cv", "infer-<b>", 1, "vision", "memory_used", infer * S, 1 if october else 0),
          ("", "", 1, "", "capacity", cap * S, 0),
          ("", "", 1, "", "reserved", reserved * S, 0),
          ("", "", 1, "", "unattributed", unattr * S, 0),
          ("", "", 1, "", "idle", idle * S, 0),
          ("", "", 1, "ml-research", "busy_ppm", 60 * 500000, 0),
          ("", "", 1, "ml-research", "busy_steps", 60, 0),
          ("", "", 1, "vision", "busy_ppm", 60 * 250000, 0),
          ("", "", 1, "vision", "busy_steps", 60, 0)]
    # allocation on node-1's pseudo-device: train-0 one GPU, infer a 20 GiB slice
    r += [("ml", "train-0", 4, "ml-research", "allocated", 81920 * S, 0),
          ("ml", "train-0", 4, "ml-research", "allocated_gpu", 1000000 * S, 0),
          ("ml", "train-0", 4, "ml-research", "reserved_unused", (81920 - train) * S, 0),
          ("cv", "infer-<b>", 4, "vision", "allocated", (infer + 480) * S, 0),
          ("cv", "infer-<b>", 4, "vision", "allocated_gpu", 250000 * S, 0),
          ("cv", "infer-<b>", 4, "vision", "reserved_unused", 480 * S, 0)]
    if rub_vision:
        r.append(("cv", "infer-<b>", 4, "vision", "reserved_unused_billed", rub_vision * S, 0))
    if late:
        return r
    # GPU-bbbb (MIG 1g.10gb): a pod without an allocation (an anomaly)
    r += [("team-x", "stray|pod", 2, HOSTILE_TEAM, "memory_used", 5000 * S, 0),
          ("team-x", "stray|pod", 2, HOSTILE_TEAM, "anomaly_unallocated", 5000 * S, 0),
          ("", "", 2, "", "capacity", 9856 * S, 0),
          ("", "", 2, "", "idle", (9856 - 5000) * S, 0)]
    # GPU-cccc (H100): more memory than its capacity for one hour (excess)
    used = 60000 if h != hour("2026-10-01T11") else 83000
    capacity = 81559
    excess = max(0, used + 1000 - capacity)
    r += [("cv", "render-[1]", 3, "vision", "memory_used", used * S, 0),
          ("", "", 3, "", "capacity", capacity * S, 0),
          ("", "", 3, "", "reserved", 1000 * S, 0),
          ("", "", 3, "", "idle", (capacity - used - 1000 + excess) * S, 0),
          ("cv", "render-[1]", 5, "vision", "allocated", 81559 * S, 0),
          ("cv", "render-[1]", 5, "vision", "allocated_gpu", 1000000 * S, 0),
          ("cv", "render-[1]", 5, "vision", "reserved_unused", max(0, 81559 - used) * S, 0)]
    if excess:
        r += [("", "", 3, "", "excess", excess * S, 0),
              ("cv", "render-[1]", 3, "vision", "anomaly_excess_devices", used * S, 0)]
    if h == hour("2026-10-02T10"):
        r.append(("", "", 1, "", "unknown_steps", 12, 0))
    # demand waiting in October (never billed): ml-research's queue-0 asks for
    # two GPUs unscheduled; vision's wait-0 one GPU on node-1, not started
    if october:
        r.append(("ml", "queue-0", 7, "ml-research", "pending_gpu", 2000000 * S, 0))
    if h == hour("2026-10-02T10"):
        r.append(("cv", "wait-0", 4, "vision", "pending_gpu", 1000000 * S, 0))
    return r


def open_db(path):
    if os.path.exists(path):
        return ledger_db.open_ledger(path)
    db = ledger_db.create_ledger(path)
    first, last = hour("2026-08-30T10"), hour("2026-10-02T10") + S - 1
    for d in DEVICES:
        seen = (first, last) if d[0] != 6 else (hour("2026-10-01T10"), last)
        ledger_db.insert_device(db, d[0], CLUSTER, *(d[1:] + seen))
    # run has collected up to 2026-10-03T00: `run --now 2026-10-03T00:10:00Z`
    # (delay 10 minutes, no re-pull) has nothing to collect
    ledger_db.insert_watermark(db, CLUSTER, hour("2026-10-03T00"), hour("2026-10-03T00"))
    return db


def add_hours(db, hours, late):
    for ts in hours:
        h = hour(ts)
        for ns, pod, dev, team, kind, q, est in rows_of_hour(h, late):
            ledger_db.insert_usage(db, h, CLUSTER, ns, pod, dev, team, kind, q, est, h,
                                   h + S - 60)
        ledger_db.insert_collected_hour(db, CLUSTER, h, h + S, 60, 0)


def add_empty_hours(db, first, end):
    """Hours [first, end) not collected yet, collected with no data."""
    for h in range(hour(first), hour(end), S):
        ledger_db.insert_collected_hour(db, CLUSTER, h, h + S, 0, 0, replace=False)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    db = open_db(sys.argv[1])
    for stage in sys.argv[2:]:
        if stage == "base":
            add_hours(db, BASE_HOURS, False)
            add_empty_hours(db, "2026-08-01T00", "2026-10-01T00")
        elif stage == "late":
            add_hours(db, LATE_HOURS, True)
        else:
            sys.exit("unknown stage %s" % stage)
    db.commit()
    db.close()


if __name__ == "__main__":
    main()
