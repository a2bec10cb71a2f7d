#!/usr/bin/env python3
"""plan_test.py - a window with stored hours starts with the unit its
stored series need, instead of learning it by asking too much.

An hour too large for collection.max_samples_in_memory is refused by the
parse and asked again in fewer hours, then in 2, 4, 8 ... host shards;
every refused ask costs the backend a whole evaluation. The hourly run
re-pulls hours it stored an hour ago, whose series per query are recorded
(the shrink guard's counts), so it plans the unit from them. Checked
against bench/memory.py's loopback backend (the requests it answers are
recorded), 512 pods on 64 nodes x 8 GPUs:
  * budget 100,000 slots, chunk_hours 1: the first collect of the hour
    splits it by host after refused asks; collecting the same hour again
    logs the plan (host shards), refuses nothing ("over the memory budget"
    absent), costs the backend fewer bytes (a refused ask is evaluated and
    sent whole), and bills what the first collect billed
    (the invoice JSON, and each team's memory_used equal to the hand
    sums);
  * budget 1,000,000 slots, chunk_hours 6 over 6 hours: the re-collect
    plans units of fewer hours without host shards, refuses nothing and
    costs the backend fewer bytes;
  * 1,536 pods, whose labels and phases (asked once for all shards) are
    near their own bound of 4 x the budget: planned too, nothing refused;
  * a first collect (nothing stored) plans from an instant `count` of
    each query: with the right count it refuses nothing, costs the
    backend fewer bytes than learning the split and bills the same
    invoice JSON; with a count too low it still splits as far as needed
    and bills the same; a backend that does not answer the count (the
    checks above: 400) leaves it unplanned, logged, and the split is
    learned by refused asks.
"""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import harness  # noqa: E402
import memory  # noqa: E402
import memory_bound_test  # noqa: E402

FLEET = dict(nodes=64, gpus=8, pods_per_gpu=1, containers=1, per_process_device_metrics=False)
REFUSED = "over the memory budget"
PLANNED = "planning the window from its stored hours"
COUNTED = "planning the window from its series count at"
UNCOUNTED = "the window's series were not counted"


def hand_teams(pods, hours):
    """{team: memory_used MiB·s}: pod k (1-based, as bench/memory.py
    numbers them) has label_team t(k % 40) and uses 1000 + 500 (k % 16)
    MiB all the time."""
    out = {}
    for k in range(1, pods + 1):
        team = "t%02d" % (k % 40)
        out[team] = out.get(team, 0) + (1000 + 500 * (k % 16)) * 3600 * hours
    return out


def utc(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class PlanSuite(memory_bound_test.MemorySuite):
    """memory_bound_test's loopback backend and config; its own collects."""

    def collect(self, cfg, db, hours):
        """(exit, stderr, bytes the backend answered) of one collect: every
        body in full, a refused one too (the backend evaluated it)."""
        before = len(self.srv.requests)
        p = subprocess.run([os.path.abspath(self.args.bin), "--config", cfg, "--db", db,
                            "collect", "--from", utc(memory.T0),
                            "--to", utc(memory.T0 + hours * 3600)],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=900)
        return p.returncode, p.stderr, sum(n for _, n in self.srv.requests[before:])

    def invoices(self, cfg, db):
        """The period's invoice JSON through the CLI, or (None, why)."""
        p = subprocess.run([os.path.abspath(self.args.bin), "--config", cfg, "--db", db,
                            "invoice", "--period", time.strftime("%Y-%m", time.gmtime(memory.T0))],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
        if p.returncode:
            return None, "invoice exit %d: %s" % (p.returncode, harness.tail(p.stderr))
        return p.stdout, None

    @staticmethod
    def memory_by_team(text):
        """{team: memory_used MiB·s} summed over the invoice lines."""
        out = {}
        for inv in json.loads(text)["invoices"]:
            for line in inv["lines"]:
                if line["kind"] == "memory_used":
                    out[inv["team"]] = out.get(inv["team"], 0) + int(line["mib_seconds"])
        return out

    def main(self):
        t = self.tap
        self.srv = memory.Server(memory.Fleet(**FLEET))
        pods = FLEET["nodes"] * FLEET["gpus"] * FLEET["pods_per_gpu"]
        t.setup("loopback backend: %d pods on 64 nodes x 8 GPUs" % pods)

        cfg = self.config("shards", {"chunk_hours": 1, "max_samples_in_memory": 100000})
        db = self.path("shards.db")
        rc, err, first = self.collect(cfg, db, 1)
        t.check("a first collect exits 0", [] if rc == 0 else ["exit %d: %s" % (rc, harness.tail(err))])
        t.check("a first collect plans nothing and learns the split by refused asks",
                [] if PLANNED not in err and REFUSED in err and "splitting hour" in err
                else ["log: %s" % harness.tail(err)])
        said = [ln.split(UNCOUNTED)[0] for ln in err.splitlines() if UNCOUNTED in ln]
        t.check("a backend that does not answer the count: the first collect says so, "
                "as a warning",
                [] if said and all("warn" in x for x in said) and COUNTED not in err
                else ["log: %s" % harness.tail(err)])
        inv1, why1 = self.invoices(cfg, db)
        rc, err, again = self.collect(cfg, db, 1)
        t.check("the stored hour collected again exits 0",
                [] if rc == 0 else ["exit %d: %s" % (rc, harness.tail(err))])
        t.check("the stored hour is planned in host shards from its stored series",
                [] if PLANNED in err and "host shards" in err else ["log: %s" % harness.tail(err)])
        t.check("the planned collect refuses nothing",
                [] if REFUSED not in err and "splitting" not in err
                else ["log: %s" % harness.tail(err)])
        t.check("the planned collect costs the backend fewer bytes (%d, first %d)" % (again, first),
                [] if 0 < again < first else ["%d bytes, first collect %d" % (again, first)])
        inv2, why2 = self.invoices(cfg, db)
        t.check("the planned collect bills what the first billed (invoice JSON)",
                [] if inv1 and inv1 == inv2 else [why1 or why2 or "the invoices differ"])
        got = self.memory_by_team(inv2) if inv2 else {}
        t.check("memory_used per team equals the hand sums",
                [] if got == hand_teams(pods, 1) else ["got %s" % (sorted(got.items())[:3],)])
        self.counted(inv1, first)

        # 1,536 pods: their labels and phases, asked once for all shards,
        # near their own bound (4 x the budget) but within it
        self.srv.close()
        self.srv = memory.Server(memory.Fleet(**dict(FLEET, pods_per_gpu=3)))
        t.setup("loopback backend: 1,536 pods on 64 nodes x 8 GPUs")
        cfg = self.config("kept", {"chunk_hours": 1, "max_samples_in_memory": 100000})
        db = self.path("kept.db")
        rc, err, first = self.collect(cfg, db, 1)
        t.check("kept queries near their bound: a first collect exits 0",
                [] if rc == 0 else ["exit %d: %s" % (rc, harness.tail(err))])
        rc, err, again = self.collect(cfg, db, 1)
        t.check("kept queries near their bound: collected again, planned in host shards "
                "and nothing refused",
                [] if rc == 0 and PLANNED in err and REFUSED not in err
                else ["exit %d: %s" % (rc, harness.tail(err))])
        self.srv.close()
        self.srv = memory.Server(memory.Fleet(**FLEET))

        cfg = self.config("hours", {"chunk_hours": 6, "max_samples_in_memory": 1000000})
        db = self.path("hours.db")
        rc, err, first = self.collect(cfg, db, 6)
        t.check("6 hours at chunk_hours 6: a first collect exits 0 after splitting the chunk",
                [] if rc == 0 and REFUSED in err and PLANNED not in err
                else ["exit %d: %s" % (rc, harness.tail(err))])
        rc, err, again = self.collect(cfg, db, 6)
        t.check("the stored hours are planned in units of fewer hours, no host shard",
                [] if rc == 0 and PLANNED in err and "in 1 host shard " in err
                and "6-hour units" not in err else ["exit %d: %s" % (rc, harness.tail(err))])
        t.check("the planned hours refuse nothing and cost the backend fewer bytes (%d, first %d)"
                % (again, first),
                [] if REFUSED not in err and 0 < again < first else ["log: %s" % harness.tail(err)])
        inv, why = self.invoices(cfg, db)
        got = self.memory_by_team(inv) if inv else {}
        t.check("6 hours: memory_used per team equals the hand sums",
                [] if got == hand_teams(pods, 6) else [why or "got %s" % (sorted(got.items())[:3],)])

        # the same 6 hours first collected with the series counted
        self.srv.close()
        self.srv = memory.Server(memory.Fleet(**FLEET), counts=1)
        cfg = self.config("hours-counted", {"chunk_hours": 6, "max_samples_in_memory": 1000000})
        db = self.path("hours-counted.db")
        rc, err, counted = self.collect(cfg, db, 6)
        t.check("6 hours, a first collect with the series counted: planned in units of fewer "
                "hours, no host shard",
                [] if rc == 0 and COUNTED in err and "in 1 host shard " in err
                and "6-hour units" not in err else ["exit %d: %s" % (rc, harness.tail(err))])
        t.check("6 hours counted: nothing refused, fewer bytes than learning the split "
                "(%d, learned %d)" % (counted, first),
                [] if REFUSED not in err and "splitting" not in err and 0 < counted < first
                else ["%d bytes; log: %s" % (counted, harness.tail(err))])
        got_inv, why_c = self.invoices(cfg, db)
        t.check("6 hours counted: the invoice JSON of the learned first collect",
                [] if inv and got_inv == inv else [why or why_c or "the invoices differ"])

    def counted(self, learned_inv, learned_bytes):
        """A first collect of the hour planned from the backend's instant
        series counts: right (it refuses nothing) and too low (a quarter of
        the truth: planned, then split further as when learning). Either
        bills the invoice JSON of the collect that learned its split."""
        t = self.tap
        pods = FLEET["nodes"] * FLEET["gpus"] * FLEET["pods_per_gpu"]
        for name, factor in (("counted", 1), ("counted-low", 0.25)):
            self.srv.close()
            self.srv = memory.Server(memory.Fleet(**FLEET), counts=factor)
            cfg = self.config(name, {"chunk_hours": 1, "max_samples_in_memory": 100000})
            db = self.path(name + ".db")
            rc, err, spent = self.collect(cfg, db, 1)
            what = "the right count" if factor == 1 else "a count too low"
            t.check("a first collect with %s exits 0" % what,
                    [] if rc == 0 else ["exit %d: %s" % (rc, harness.tail(err))])
            if factor == 1:
                t.check("a first collect with the right count is planned in host shards and "
                        "refuses nothing",
                        [] if COUNTED in err and "host shards" in err and REFUSED not in err
                        and "splitting" not in err else ["log: %s" % harness.tail(err)])
                t.check("the counted first collect costs the backend fewer bytes than "
                        "learning (%d, learned %d)" % (spent, learned_bytes),
                        [] if 0 < spent < learned_bytes else ["%d bytes" % spent])
            else:
                t.check("a first collect with a count too low is planned, then split further",
                        [] if COUNTED in err and REFUSED in err and "splitting hour" in err
                        else ["log: %s" % harness.tail(err)])
            inv, why = self.invoices(cfg, db)
            t.check("a first collect with %s bills the learned collect's invoice JSON" % what,
                    [] if inv and learned_inv and inv == learned_inv
                    else [why or "the invoices differ"])
            got = self.memory_by_team(inv) if inv else {}
            t.check("a first collect with %s: memory_used per team equals the hand sums" % what,
                    [] if got == hand_teams(pods, 1) else ["got %s" % (sorted(got.items())[:3],)])
        self.srv.close()
        self.srv = memory.Server(memory.Fleet(**FLEET))


def main():
    args = harness.arguments(__doc__).parse_args()
    tap = harness.Tap()
    return harness.run_driver(PlanSuite, args, tap, "plan", "gpuledger-plantest-")


if __name__ == "__main__":
    sys.exit(main())
