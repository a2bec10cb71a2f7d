#!/usr/bin/env python3
"""memory_bound_test.py - peak memory bounded by samples held, not by series
x steps: a batch cluster's pod churn at collection.chunk_hours 24.

30,000 pods each left one DCGM_FI_DEV_FB_USED sample (1000 + i % 7 MiB,
minute i % 60 of the first hour) on 64 nodes x 8 GPUs: a 6 MiB response,
under the default prometheus.max_response_bytes, whatever the chunk. A
parsed series used to get a value slot per step of the chunk (1,440 at 24
hours): 760 MiB peak here (the same engine with the budget at its maximum
measures that today), 7.3 GiB for bench/memory.py's 310,000-pod case (the
figure the bench measures; this suite keeps to a tenth of it so that the
split hours' host shards stay few: 100,000 pods took a minute of requests). collection.max_samples_in_memory (default 1 M slots)
now splits the unit (fewer hours, then host shards) like an oversized
response. Checked:
  * `collect` of the day at chunk_hours 24, default settings: exit 0, peak
    RSS (/usr/bin/time -v) <= 256 MiB, the split logged, and the stored
    memory_used equal to the hand sum: sum over pods of MiB x 60 s;
  * a budget too small for one host's share of the hour (every pod on one
    host): refused with exit status != 0 naming
    collection.max_samples_in_memory, nothing stored;
  * a fleet whose kube-state-metrics series alone are past the budget
    (512 pods on 64 nodes x 8 GPUs at the smallest budget, 100,000 slots:
    pod labels, pod phase and requests are about 140,000 slots for the
    hour). Host shards used to ask them whole in every shard, so no number
    of shards fitted and the hour failed (exit 4). Now the requests are
    asked per shard by `node` and the rest once for the hour: exit 0,
    memory_used and allocated_gpu per team equal to the hand sums, every
    usage row equal to an unsplit collect's (a budget of 10 M slots), peak
    RSS <= 256 MiB;
  * the same with 2,560 pods: the labels and phases that are asked once
    are past 4 x the budget, and more shards cannot help: exit 4 naming
    the query and collection.max_samples_in_memory, nothing stored.

The backend is bench/memory.py's loopback stand-in (it answers
query_range from the model as Prometheus would, with the Hostname matchers
of a split): backfilling 310,000 series into a real Prometheus takes longer
than the suite's budget and holds the machine's memory.
"""

import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import harness  # noqa: E402
import ledger_db  # noqa: E402
import memory  # noqa: E402

PODS = 30000
BOUND_KIB = 256 * 1024
DAY = 86400


def expected_mib_s():
    """Each pod's one sample holds for its 60 s step."""
    return sum((1000 + i % 7) * 60 for i in range(PODS))


KSM_FLEET = dict(nodes=64, gpus=8, pods_per_gpu=1, containers=1,
                 per_process_device_metrics=False)


def expected_ksm_teams(pods):
    """{team: (memory_used MiB·s, allocated_gpu micro-GPU-s)} of the hour:
    pod k (1-based, as bench/memory.py numbers them) has label_team
    t(k % 40), uses 1000 + 500 (k % 16) MiB all hour and requests one GPU."""
    out = {}
    for k in range(1, pods + 1):
        mib, gpu = out.get("t%02d" % (k % 40), (0, 0))
        out["t%02d" % (k % 40)] = (mib + (1000 + 500 * (k % 16)) * 3600, gpu + 3600 * 10**6)
    return out


class MemorySuite(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.srv = None

    def config(self, name, collection):
        cfg = {
            "prometheus": {"url": self.srv.url(), "timeout_seconds": 600},
            "teams": {"rules": [{"pod_label": "team"}]},
            "prices": {"entries": [{"model_pattern": "^NVIDIA A100", "unit": "GB-Hours",
                                    "price": "0.05", "currency": "USD",
                                    "valid_from": "2026-01-01T00:00:00Z"}]},
            "billing": {"currency": "USD"},
            "collection": collection,
        }
        path = self.path(name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def collect(self, name, collection, hours):
        cfg = self.config(name, collection)
        db = self.path(name + ".db")
        frm = memory.T0
        argv = [os.path.abspath(self.args.bin), "--config", cfg, "--db", db, "collect",
                "--from", harness_time(frm), "--to", harness_time(frm + hours * 3600)]
        timef = self.path(name + ".time")
        p = subprocess.run(["/usr/bin/time", "-v", "-o", timef] + argv,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=1800)
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(timef).read())
        return p.returncode, p.stderr, int(m.group(1)) if m else None, db

    def stored(self, db):
        """(rows, MiB·s) of memory_used in the database."""
        if not os.path.exists(db):
            return 0, 0
        return ledger_db.memory_used_total(db)

    def main(self):
        t = self.tap
        fleet = memory.Fleet(**dict(memory.CASES["sparse310k"], sparse_pods=PODS))
        self.srv = memory.Server(fleet)
        t.setup("loopback backend: %d one-sample FB_USED series on 64 nodes" % PODS)

        rc, err, rss, db = self.collect("day", {"chunk_hours": 24}, 24)
        t.note("collect, chunk_hours 24: exit %d, peak RSS %s KiB, load average %s"
               % (rc, rss, " ".join("%.2f" % x for x in os.getloadavg())))
        t.check("pod churn at chunk_hours 24: collect exits 0",
                [] if rc == 0 else ["exit %d: %s" % (rc, harness.tail(err))])
        t.check("pod churn at chunk_hours 24: peak RSS <= 256 MiB",
                [] if rss is not None and rss <= BOUND_KIB
                else ["peak RSS %s KiB" % rss])
        t.check("the unit is split on the memory budget, and says so",
                [] if "over the memory budget" in err and "splitting" in err
                else ["no split logged: %s" % harness.tail(err)])
        rows, mib_s = self.stored(db)
        want = expected_mib_s()
        t.check("stored memory_used is exact (every pod, MiB x 60 s)",
                [] if (rows, mib_s) == (PODS, want)
                else ["%d rows, %d MiB·s; want %d rows, %d MiB·s" % (rows, mib_s, PODS, want)])

        # one host holding every pod: its hour (30,000 series x 60 steps) is
        # past the smallest budget allowed, and a host cannot be split
        self.srv.close()
        self.srv = memory.Server(memory.Fleet(**dict(memory.CASES["sparse310k"], nodes=1,
                                                     sparse_pods=PODS)))
        rc, err, rss, db = self.collect("small", {"chunk_hours": 1,
                                                  "max_samples_in_memory": 100000}, 1)
        t.check("a budget too small for one host's hour is refused, naming the key",
                [] if rc != 0 and "collection.max_samples_in_memory" in err
                else ["exit %d: %s" % (rc, harness.tail(err))])
        rows, _ = self.stored(db)
        t.check("the refused hour stores nothing", [] if rows == 0 else ["%d rows" % rows])
        self.ksm_heavy()

    def usage_rows(self, db):
        """Every usage row, devices by UUID (ids are the database's own)."""
        if not os.path.exists(db):
            return []
        return ledger_db.pod_usage(db)

    def team_sums(self, db):
        return ledger_db.team_memory_and_gpu(db)

    def ksm_heavy(self):
        t = self.tap
        self.srv.close()
        self.srv = memory.Server(memory.Fleet(**KSM_FLEET))
        pods = KSM_FLEET["nodes"] * KSM_FLEET["gpus"]
        t.setup("loopback backend: %d pods on 64 nodes x 8 GPUs, budget 100,000 slots" % pods)
        rc, err, rss, db = self.collect("ksm", {"chunk_hours": 1,
                                                "max_samples_in_memory": 100000}, 1)
        t.note("kube-state-metrics past the budget: exit %d, peak RSS %s KiB, load average %s"
               % (rc, rss, " ".join("%.2f" % x for x in os.getloadavg())))
        t.check("kube-state-metrics past one shard's budget: collect exits 0",
                [] if rc == 0 else ["exit %d: %s" % (rc, harness.tail(err))])
        t.check("kube-state-metrics past one shard's budget: the hour is split by host",
                [] if "splitting hour" in err else ["no host split logged: %s"
                                                    % harness.tail(err)])
        t.check("kube-state-metrics past one shard's budget: peak RSS <= 256 MiB",
                [] if rss is not None and rss <= BOUND_KIB else ["peak RSS %s KiB" % rss])
        want = expected_ksm_teams(pods)
        got = self.team_sums(db) if os.path.exists(db) else {}
        t.check("split by host: memory_used and allocated_gpu per team equal the hand sums",
                [] if got == want else ["got %s, want %s" % (sorted(got.items())[:3],
                                                             sorted(want.items())[:3])])
        rc2, err2, _, db2 = self.collect("ksm-whole", {"chunk_hours": 1,
                                                       "max_samples_in_memory": 10000000}, 1)
        whole = self.usage_rows(db2) if rc2 == 0 else None
        split = self.usage_rows(db)
        t.check("split by host: every usage row equals an unsplit collect's",
                [] if whole and split == whole
                else ["unsplit exit %d (%s); %d rows split, %s unsplit"
                      % (rc2, harness.tail(err2), len(split),
                         len(whole) if whole is not None else "no")])

        # 2,560 pods: the kept queries alone (labels, phases) are past
        # 4 x 100,000 slots, whatever the shards
        self.srv.close()
        self.srv = memory.Server(memory.Fleet(**dict(KSM_FLEET, pods_per_gpu=5)))
        rc, err, rss, db = self.collect("ksm-over", {"chunk_hours": 1,
                                                     "max_samples_in_memory": 100000}, 1)
        named = re.search(r"(pod_labels|pod_phase|node_labels|namespace_labels)\.promql", err)
        t.check("kube-state-metrics past 4 x the budget: exit 4 naming the query and the key",
                [] if rc == 4 and named and "collection.max_samples_in_memory" in err
                and "more shards cannot" in err
                else ["exit %d: %s" % (rc, harness.tail(err))])
        rows, _ = self.stored(db)
        t.check("kube-state-metrics past 4 x the budget: nothing stored",
                [] if rows == 0 else ["%d rows" % rows])

    def cleanup(self):
        if self.srv:
            self.srv.close()


def harness_time(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def main():
    args = harness.arguments(__doc__).parse_args()
    tap = harness.Tap()
    return harness.run_driver(MemorySuite, args, tap, "memory bound", "gpuledger-memtest-")


if __name__ == "__main__":
    sys.exit(main())
