#!/usr/bin/env python3
"""shrink_test.py - no silent shrink counts what the stored hours carry.

A small fleet (nodes n1 and n2, two A100 each, one pod per GPU; pod p-N-G
uses 1000*N + 100*G MiB; teams from kube_pod_labels: n1 alpha, n2 beta;
p-2-1 ends at 01:30, its GPU then reports a device series without a pod;
60 s samples for four hours from 2026-11-03T00:00Z) is backfilled into a
real Prometheus. The engine talks to it through a front of the test that
passes every answer on, or thins the query_range answers the way a backend
that lost data does: fewer samples per series, fewer series, series that
lost their pod labels. Every expected figure (series and samples per query
and hour, MiB*s per team and hour, a device's attributed and unattributed
MiB*s) is worked out here from the model with the same thinning applied,
never read from the engine.

Refused by default (exit 5, the message names cluster, hours, query and the
figures before and after; the stored rows are unchanged), then replaced
with --allow-shrink (run.allow_shrink for run) with a warning naming the
same figures, the stored figures then those of the thinned model:
  * fb_used with 1 of 60 samples per series (a re-collect);
  * 30 of 60 samples on every query (a re-collect), accepted with
    collection.shrink_tolerance 0.6;
  * 30 of 60 samples on every query in `run`'s repull of recent hours;
  * kube_pod_labels with one sample an hour (team attribution moves);
  * dcgm series of one pod that lost their pod labels (same series and
    samples: its memory becomes unattributed);
  * the series of half the pods gone (every per-pod query).
Accepted (exit 0, no warning, the full model stored):
  * the same answers again (pods that ended keep their samples);
  * the newest half hour late at the first collect (more samples later);
  * kube_pod_labels late for the newest half hour (the default team gets
    those steps first, the labelled team later: a team's MiB*s falls while
    nothing was lost);
  * one GPU's memory metrics late for the whole newest hour (its pod is
    estimated from its allocation first, measured later);
  * `run` whose first collect saw the newest half hour late, repulled.
"""

import json
import os
import sys
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import ledger_db  # noqa: E402

T0 = 1793664000  # 2026-11-03T00:00:00Z
HOURS = 4
STEP = 60
END = T0 + HOURS * 3600
FROM, TO = "2026-11-03T00:00:00Z", "2026-11-03T04:00:00Z"
NODES = (1, 2)
TEAM = {1: "alpha", 2: "beta"}
DEFAULT_TEAM = "unallocated"
ENDED_POD, ENDED_AT = "p-2-1", T0 + 5400  # 01:30
LATE = T0 + 3 * 3600 + 1800               # 03:30: the newest half hour
CAP_MIB = 81920
RESERVED = 500
DCGM = ("fb_used", "fb_free", "fb_reserved")  # the memory queries
BUSY = "0.5"  # DCGM_FI_PROF_GR_ENGINE_ACTIVE of every pod

# the engine's queries by the metric their PromQL selects
QUERY_OF = (("DCGM_FI_DEV_FB_USED", "fb_used"), ("DCGM_FI_DEV_FB_FREE", "fb_free"),
            ("DCGM_FI_DEV_FB_RESERVED", "fb_reserved"),
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gr_engine_active"), ("kube_pod_labels", "pod_labels"),
            ("kube_namespace_labels", "namespace_labels"), ("kube_node_labels", "node_labels"),
            ("kube_pod_container_resource_requests", "alloc_requests"),
            ("kube_pod_status_phase", "pod_phase"))


def classify(text):
    for needle, name in QUERY_OF:
        if needle in text:
            return name
    return "other"


def iso(t):
    import datetime
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- the model

def pods():
    for n in NODES:
        for g in (0, 1):
            name = "p-%d-%d" % (n, g)
            yield n, g, name, 1000 * n + 100 * g, ENDED_AT if name == ENDED_POD else END


def device(n, g):
    return {"gpu": str(g), "UUID": "GPU-%d-%d" % (n, g),
            "pci_bus_id": "00000000:%02X:00.0" % (7 + g), "device": "nvidia%d" % g,
            "modelName": "NVIDIA A100-SXM4-80GB", "Hostname": "n%d" % n,
            "DCGM_FI_DRIVER_VERSION": "550.54.15"}


def model():
    """[(metric, labels, value, first t, end t)]: every series of the fleet."""
    out = []
    for n, g, pod, mib, until in pods():
        podl = {"namespace": "ns-%d" % n, "pod": pod}
        dl = dict(device(n, g), container="c", **podl)
        out += [("DCGM_FI_DEV_FB_USED", dl, mib, T0, until),
                ("DCGM_FI_DEV_FB_FREE", dl, CAP_MIB - RESERVED - mib, T0, until),
                ("DCGM_FI_DEV_FB_RESERVED", dl, RESERVED, T0, until),
                ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", dl, BUSY, T0, until),
                ("kube_pod_labels", dict(podl, uid="u-" + pod, label_team=TEAM[n]), 1, T0,
                 until),
                ("kube_pod_container_resource_requests",
                 dict(podl, container="c", node="n%d" % n, resource="nvidia_com_gpu",
                      unit="integer"), 1, T0, until),
                ("kube_pod_status_phase", dict(podl, uid="u-" + pod, phase="Running"), 1, T0,
                 until)]
        if until < END:  # the GPU after its pod ended: a device series
            out += [("DCGM_FI_DEV_FB_USED", device(n, g), 0, until, END),
                    ("DCGM_FI_DEV_FB_FREE", device(n, g), CAP_MIB - RESERVED, until, END),
                    ("DCGM_FI_DEV_FB_RESERVED", device(n, g), RESERVED, until, END)]
    for n in NODES:
        out.append(("kube_node_labels", {"node": "n%d" % n, "label_pool": "a100"}, 1, T0, END))
    return out


def openmetrics():
    lines, families = [], {}
    for metric, labels, value, t0, t1 in model():
        families.setdefault(metric, []).append((labels, value, t0, t1))
    for metric, ss in families.items():
        lines.append("# TYPE %s gauge" % metric)
        for labels, value, t0, t1 in ss:
            text = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
            for t in range(t0, t1, STEP):
                lines.append("%s{%s} %s %d" % (metric, text, value, t))
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- thinning
# mode(query, labels) -> None (the series is dropped) or (labels kept,
# keep(t) or None for every sample): applied to the backend's answers by the
# front and to the model here, the same way.

def m_good(q, labels):
    return labels, None


def m_fb_used_1of60(q, labels):
    return labels, (lambda t: (t - T0) % 3600 == 0) if q == "fb_used" else None


def m_half_samples(q, labels):
    return labels, lambda t: (t - T0) // STEP % 2 == 0


def m_labels_sparse(q, labels):
    return labels, (lambda t: (t - T0) % 3600 == 0) if q == "pod_labels" else None


def m_identity_lost(q, labels):
    if q in DCGM + ("gr_engine_active",) and labels.get("pod") == "p-1-0":
        return {k: v for k, v in labels.items() if k not in ("namespace", "pod", "container")}, \
            None
    return labels, None


def m_half_series(q, labels):
    # the series of two of the four pods (p-1-1, p-2-1): half of every
    # per-pod query's series in 00:00-01:00, fewer later (p-2-1 ended),
    # so none loses more than half in any hour
    if labels.get("pod") in ("p-1-1", "p-2-1"):
        return None
    return labels, None


def m_late(q, labels):
    return labels, lambda t: t < LATE


def m_late_labels(q, labels):
    return labels, (lambda t: t < LATE) if q == "pod_labels" else None


def m_late_device(q, labels):
    # its memory metrics only: its pod is seen (compute) on a device without
    # memory metrics, billed by its allocation (estimated) at first
    if q in DCGM and labels.get("UUID") == "GPU-1-0":
        return labels, lambda t: t < T0 + 3 * 3600
    return labels, None


MODES = {k[2:]: v for k, v in globals().items() if k.startswith("m_")}


def thinned(mode):
    """[(query, labels, value, [t...])] of the model as the front answers."""
    out = []
    for metric, labels, value, t0, t1 in model():
        q = classify(metric)
        r = MODES[mode](q, dict(labels, __name__=metric))
        if r is None:
            continue
        kept, keep = r
        ts = [t for t in range(t0, t1, STEP) if keep is None or keep(t)]
        if ts:
            out.append((q, kept, value, set(ts)))
    return out


def counts(mode, q, hour):
    """(series, samples) of query q in the hour starting at `hour`."""
    ser = smp = 0
    for qq, _, _, ts in thinned(mode):
        k = sum(1 for t in ts if hour <= t < hour + 3600)
        if qq == q and k:
            ser += 1
            smp += k
    return ser, smp


def team_figures(mode):
    """{(hour, team): MiB*s of memory}: a pod's memory at step t is billed when
    its fb_used series (with its pod labels) has a sample at t, to the team
    of its kube_pod_labels sample at t, else the default team."""
    series = thinned(mode)
    mem = [(lab["pod"], v, ts) for q, lab, v, ts in series if q == "fb_used" and "pod" in lab]
    team = {}
    for q, lab, _, ts in series:
        if q == "pod_labels":
            team[lab["pod"]] = (lab["label_team"], ts)
    out = {}
    for pod, mib, ts in mem:
        for t in ts:
            tm, lts = team.get(pod, (DEFAULT_TEAM, ()))
            key = (t - (t - T0) % 3600, tm if t in lts else DEFAULT_TEAM)
            out[key] = out.get(key, 0) + mib * STEP
    return {k: v for k, v in out.items() if v}


def device_figures(mode, uuid, hour):
    """(attributed, unattributed) MiB*s of a GPU in an hour: its pods' series
    carry the attributed memory, a series of it without a pod (and no pod
    series at the same step) the unattributed."""
    att = un = 0
    series = [(lab, v, ts) for q, lab, v, ts in thinned(mode)
              if q == "fb_used" and lab.get("UUID") == uuid]
    for t in range(hour, hour + 3600, STEP):
        pod = sum(v for lab, v, ts in series if "pod" in lab and t in ts)
        dev = [v for lab, v, ts in series if "pod" not in lab and t in ts]
        att += pod * STEP
        if dev:
            un += max(dev[0] - pod, 0) * STEP
    return att, un


# ---------------------------------------------------------------- messages

def counts_text(q, hour, mode):
    s1, n1 = counts(mode, q, hour)
    s0, n0 = counts("good", q, hour)
    return ("query %s returned %d series, %d samples for the hour %s to %s where %d series, "
            "%d samples are stored" % (q, s1, n1, iso(hour), iso(hour + 3600), s0, n0))


def team_text(q, team, hour, mode):
    now = team_figures(mode).get((hour, team), 0)
    was = team_figures("good").get((hour, team), 0)
    return ("query %s returned less than stored and team %s gets %d MiB\u00b7s of memory for "
            "the hour %s to %s where %d are stored" % (q, team, now, iso(hour),
                                                       iso(hour + 3600), was))


def device_text(uuid, hour, mode):
    a1, u1 = device_figures(mode, uuid, hour)
    a0, u0 = device_figures("good", uuid, hour)
    return ("query fb_used gives device %s %d MiB\u00b7s attributed to pods and %d unattributed "
            "for the hour %s to %s where %d attributed and %d unattributed are stored"
            % (uuid, a1, u1, iso(hour), iso(hour + 3600), a0, u0))


# ---------------------------------------------------------------- the front

class Front(harness.LoopbackServer):
    """Passes every request on to the real Prometheus; thins the answers of
    query_range by `mode`."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.mode = "good"
        super().__init__(post=True)

    def handle(self, h, body):
        status, data, ctype = self.relay(h, self.upstream, body)
        u = urllib.parse.urlsplit(h.path)
        if u.path != "/api/v1/query_range" or status != 200 or self.mode == "good":
            return self.reply(h, status, data, ctype)
        params = urllib.parse.parse_qs(u.query or body.decode())
        q = classify(params.get("query", [""])[-1])
        doc = json.loads(data)
        result = []
        for r in doc["data"]["result"]:
            out = MODES[self.mode](q, r["metric"])
            if out is None:
                continue
            labels, keep = out
            values = [v for v in r["values"] if keep is None or keep(int(float(v[0])))]
            if values:
                result.append({"metric": labels, "values": values})
        doc["data"]["result"] = result
        self.reply(h, 200, json.dumps(doc).encode())


def rows(db):
    """What a collect stores (devices by identity; not when it was stored)."""
    return {"usage": ledger_db.usage_by_device(db), "collected_hour": ledger_db.collected_hours(db),
            "collected_query": ledger_db.query_counts(db), "watermark": ledger_db.watermarks(db)}


def stored_teams(db):
    return ledger_db.team_memory_by_hour(db)


def within(figs, lo, hi):
    return {k: v for k, v in figs.items() if lo <= k[0] < hi}


class ShrinkSuite(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = self.front = None

    def cleanup(self):
        if self.front:
            self.front.close()
        if self.prom:
            self.prom.stop()

    def config(self, name, collection=None, run=None):
        cfg = {
            "prometheus": {"url": self.front.url()},
            "collection": dict({"step_seconds": STEP, "chunk_hours": 6}, **(collection or {})),
            "teams": {"rules": [{"pod_label": "team"}]},
            "prices": {"entries": [{"model_pattern": "^NVIDIA A100", "unit": "GB-Hours",
                                    "price": "0.05", "currency": "USD",
                                    "valid_from": "2026-01-01T00:00:00Z"}]},
            "idle_overhead": {"policy": "unbilled"},
            "billing": {"currency": "USD"},
        }
        if run is not None:
            cfg["run"] = dict({"start": FROM, "delay_minutes": 0, "repull_hours": 2,
                               "out_dir": self.path("out-" + name)}, **run)
        path = self.path(name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def collect(self, cfg, db, *extra):
        return self.engine.run(cfg, db, "collect", "--from", FROM, "--to", TO, *extra)

    def figures(self, db, want):
        got = stored_teams(db)
        if got == want:
            return []
        diff = sorted(set(got) | set(want))
        return ["MiB*s per (hour, team) differ: %s" % "; ".join(
            "%s %s: stored %s, expected %s" % (iso(h), t, got.get((h, t)), want.get((h, t)))
            for h, t in diff if got.get((h, t)) != want.get((h, t)))]

    def baseline(self, cfg, db, mode="good", argv=None):
        """A set-up collect in `mode`: problems (the set-up is never a check)."""
        if os.path.exists(db):
            os.remove(db)
        self.front.mode = mode
        rc, _, err = self.engine.run(cfg, db, *(argv or ("collect", "--from", FROM, "--to", TO)))
        self.front.mode = "good"
        if rc != 0:
            return ["set-up %s in mode %s: exit %s: %s" % (" ".join(argv or ("collect",)), mode,
                                                           rc, harness.tail(err))]
        return []

    # ------------------------------------------------------------ main
    def main(self):
        self.engine = harness.Engine(os.path.abspath(self.args.bin), self.work)
        om = self.path("fleet.om")
        with open(om, "w") as f:
            f.write(openmetrics())
        rc, out = harness.backfill(om, self.path("tsdb"), args=("--max-block-duration=768h",))
        if rc != 0:
            self.tap.fail("promtool backfill", harness.tail(out))
            return
        self.prom = harness.Prometheus(self.work, self.path("tsdb"))
        self.prom.start()
        self.front = Front(self.prom.port)
        cfg = self.config("default")
        db = self.path("setup.db")
        p = self.baseline(cfg, db) or self.figures(db, team_figures("good"))
        if p:
            self.tap.fail("set-up: a collect through the passing front stores the model", p)
            return
        self.tap.note("set-up: the full model stored (%d team-hours)" % len(team_figures("good")))
        self.refused_checks(cfg)
        self.run_checks()
        self.accepted_checks(cfg)

    # ------------------------------------------------------------ refused
    def refused(self, cfg, name, mode, want, allow_cfg=None):
        """Baseline (good), then a re-collect in `mode`: refused naming `want`
        (texts) with the rows unchanged; then --allow-shrink replaces them
        with a warning naming the same, the model's figures stored."""
        db = self.path(mode + ".db")
        p = self.baseline(cfg, db)
        if p:
            self.tap.fail(name + ": refused (exit 5)", p)
            return
        before = rows(db)
        self.front.mode = mode
        rc, _, err = self.collect(cfg, db)
        p = [] if rc == 5 else ["exit %s, expected 5: %s" % (rc, harness.tail(err, 400))]
        for w in ["cluster default", "not replaced"] + want:
            if w not in err:
                p.append("message lacks %r: %s" % (w, harness.tail(err, 1500)))
        if rows(db) != before:
            p.append("the stored rows changed")
        self.tap.check(name + ": refused (exit 5) naming cluster, hours, query and figures; "
                       "stored rows unchanged", p)
        rc, _, err = self.collect(allow_cfg or cfg, db, "--allow-shrink")
        self.front.mode = "good"
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err, 400))]
        for w in ["replacing stored data with less, as allowed"] + want:
            if w not in err:
                p.append("warning lacks %r: %s" % (w, harness.tail(err, 1500)))
        p += self.figures(db, team_figures(mode))
        self.tap.check(name + ": --allow-shrink replaces them with a warning naming the same; "
                       "the thinned figures stored", p)

    def refused_checks(self, cfg):
        hours = "hours %s to %s" % (FROM, TO)
        h0, h1 = T0, T0 + 3600
        self.refused(cfg, "fb_used with 1 of 60 samples per series (re-collect)",
                     "fb_used_1of60",
                     [hours, counts_text("fb_used", h0, "fb_used_1of60"),
                      team_text("fb_used", "alpha", h0, "fb_used_1of60")])
        self.refused(cfg, "30 of 60 samples on every query (re-collect)", "half_samples",
                     [hours, counts_text("fb_used", h0, "half_samples"),
                      "collection.shrink_tolerance 0.01"])
        self.refused(cfg, "kube_pod_labels with one sample an hour", "labels_sparse",
                     [hours, counts_text("pod_labels", h1, "labels_sparse"),
                      team_text("pod_labels", "alpha", h0, "labels_sparse"),
                      team_text("pod_labels", "beta", h0, "labels_sparse")])
        self.refused(cfg, "dcgm series of p-1-0 without their pod labels (same series and "
                     "samples)", "identity_lost",
                     [hours, device_text("GPU-1-0", h0, "identity_lost"),
                      device_text("GPU-1-0", h1, "identity_lost")])
        self.refused(cfg, "the series of half the pods gone", "half_series",
                     [hours, counts_text("fb_used", h0, "half_series")])
        # the tolerance is the user's: 30 of 60 samples is within 0.6
        db = self.path("tolerant.db")
        tol = self.config("tolerant", collection={"shrink_tolerance": 0.6})
        p = self.baseline(tol, db)
        if not p:
            self.front.mode = "half_samples"
            rc, _, err = self.collect(tol, db)
            self.front.mode = "good"
            p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err, 600))]
            if "replacing stored data with less" in err:
                p.append("a warning for data within the tolerance")
            p += self.figures(db, team_figures("half_samples"))
        self.tap.check("30 of 60 samples with collection.shrink_tolerance 0.6: replaced", p)

    # ------------------------------------------------------------ run
    def run_checks(self):
        """run stores hours 00-03 (--now 03:00), then runs at 04:00 on a
        thinned backend: its repull of 01-03 is refused, nothing changes (the
        watermark included); with run.allow_shrink it is replaced."""
        name = "30 of 60 samples on every query in run's repull"
        cfg = self.config("run", run={})
        allow = self.config("run-allow", run={"allow_shrink": True})
        db = self.path("run.db")
        now1, now2 = iso(T0 + 3 * 3600), iso(END)
        p = self.baseline(cfg, db, argv=("run", "--now", now1))
        if p:
            self.tap.fail(name + ": refused (exit 5)", p)
            return
        before = rows(db)
        h1, h2 = T0 + 3600, T0 + 2 * 3600
        want = ["cluster default", "hours %s to %s" % (iso(h1), iso(h2 + 3600)),
                counts_text("fb_used", h1, "half_samples")]
        self.front.mode = "half_samples"
        rc, _, err = self.engine.run(cfg, db, "run", "--now", now2)
        p = [] if rc == 5 else ["exit %s, expected 5: %s" % (rc, harness.tail(err, 400))]
        for w in want:
            if w not in err:
                p.append("message lacks %r: %s" % (w, harness.tail(err, 1500)))
        if rows(db) != before:
            p.append("the stored rows or the watermark changed")
        self.tap.check(name + ": refused (exit 5) naming cluster, hours, query and figures; "
                       "stored rows and watermark unchanged", p)
        rc, _, err = self.engine.run(allow, db, "run", "--now", now2)
        self.front.mode = "good"
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err, 400))]
        for w in ["replacing stored data with less, as allowed"] + want[1:]:
            if w not in err:
                p.append("warning lacks %r: %s" % (w, harness.tail(err, 1500)))
        want_figs = within(team_figures("good"), T0, h1)
        want_figs.update(within(team_figures("half_samples"), h1, END))
        p += self.figures(db, want_figs)
        self.tap.check(name + ": run.allow_shrink replaces them with a warning; the thinned "
                       "figures stored", p)

    # ------------------------------------------------------------ accepted
    def accepted(self, name, cfg, db, first, argv1, argv2):
        """A set-up in mode `first`, then argv2 on the full answers: exit 0,
        no warning, the full model stored."""
        p = self.baseline(cfg, db, first, argv1)
        if not p:
            full = team_figures("good")
            moved = {k: v for k, v in stored_teams(db).items() if full.get(k) != v}
            self.tap.note("%s: the first collect stored %s where the full model has %s" % (
                first, sorted(moved.items()), sorted((k, full.get(k)) for k in moved)))
            rc, _, err = self.engine.run(cfg, db, *argv2)
            p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err, 1500))]
            if "replacing stored data with less" in err:
                p.append("warned of a shrink: %s" % harness.tail(err, 600))
            p += self.figures(db, team_figures("good"))
        self.tap.check(name, p)

    def accepted_checks(self, cfg):
        coll = ("collect", "--from", FROM, "--to", TO)
        self.accepted("the same answers again (a pod that ended keeps its samples): replaced",
                      cfg, self.path("same.db"), "good", coll, coll)
        self.accepted("the newest half hour late at the first collect, then complete: "
                      "replaced", cfg, self.path("late.db"), "late", coll, coll)
        db = self.path("late-labels.db")
        self.accepted("kube_pod_labels late for the newest half hour (the default team's "
                      "MiB*s fall as the labels arrive): replaced", cfg, db, "late_labels",
                      coll, coll)
        self.accepted("one GPU's memory metrics late for the newest hour (estimated first, "
                      "measured later): replaced", cfg, self.path("late-device.db"),
                      "late_device", coll, coll)
        run = self.config("run-late", run={})
        self.accepted("run: the newest half hour late at the first run, complete at its "
                      "repull: replaced", run, self.path("run-late.db"), "late",
                      ("run", "--now", TO), ("run", "--now", TO))


def main():
    args = harness.arguments(__doc__).parse_args()
    tap = harness.Tap()
    return harness.run_driver(ShrinkSuite, args, tap, "shrink_test", "gpuledger-shrink-")


if __name__ == "__main__":
    sys.exit(main())
