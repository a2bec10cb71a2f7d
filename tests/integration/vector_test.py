#!/usr/bin/env python3
"""vector_test.py - instant-vector answers (/api/v1/query) are read as strictly
as matrices at every place the engine asks one.

Usage: python3 tests/integration/vector_test.py --bin build/gpuledger [--work DIR] [--keep]

Runs against faultserver.py's fleet (one A100, pod ns-x/p), served by a
subclass that also answers /api/v1/query with the fleet's series at the
asked instant, and garbles one chosen instant answer:

  * good: `check` exits 0 and reads every query; a collect stores the
    pod's owner (kube_pod_owner, answered here for pod ns-x/p).
  * Each fault (a NaN value, the same series twice, invalid UTF-8 in a
    label, trailing garbage, a matrix in place of a vector, status "error"
    with HTTP 200) in the first fb_used answer: `check` (its query loop)
    fails with exit 4, stderr naming /api/v1/query, the query and the fault
    in the matrix parser's words.
  * The same in the second fb_used answer, which is the exporter schema
    probe's (check's units and hostname label): exit 4, the same words.
  * In the kube_pod_owner answer: the collect still bills (exit 0), and
    its warning "pod owners not collected" names the fault; no owner is
    stored.
  * In server mode's backend probe (changes_prometheus, asked when
    buildinfo reports no version, as VictoriaMetrics'): the collect fails
    (exit 4) naming the probe and the fault.

Output: TAP lines; exit 1 when a check failed.
"""

import json
import os
import sys
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import faultserver as fs  # noqa: E402
import harness  # noqa: E402
import ledger_db  # noqa: E402

FROM, TO = "2026-10-07T00:00:00Z", "2026-10-07T01:00:00Z"
AT = "2026-10-07T01:00:00Z"
OWNER = ({"namespace": "ns-x", "pod": "p", "owner_kind": "ReplicaSet",
          "owner_name": "web-7d4b9c6f5d", "owner_is_controller": "true"}, "1")

# fault -> (what stderr must hold, a function of the good answer's series
# giving the body)
FAULTS = {
    "nan": (["nan_inf", 'value "NaN"', "refusing the response"],
            lambda s, t: vector([(l, "NaN") for l, _ in s], t)),
    "duplicate_series": (["duplicate series", "as result #0"],
                         lambda s, t: vector(s + s, t)),
    "invalid_utf8": (["not valid JSON", 'label "note"', "UTF8"],
                     lambda s, t: vector(s, t).replace(b'"metric":{', b'"metric":{"note":"\xff",',
                                                       1)),
    "trailing_garbage": (["not valid JSON", "trailing garbage", "<html>"],
                         lambda s, t: vector(s, t) + b"\n<html>502 Bad Gateway</html>"),
    "matrix": (['data.resultType is "matrix", expected "vector"'],
               lambda s, t: fs.render([(l, [(t, v)]) for l, v in s], [t])),
    "status_error": (['status "error": bad_data: vector store down'],
                     lambda s, t: b'{"status":"error","errorType":"bad_data",'
                                  b'"error":"vector store down"}'),
}


def vector(series, t):
    """An instant-vector body (bytes) from [(labels, value text)] at t."""
    parts = ['{"metric":%s,"value":[%s,%s]}' % (json.dumps(l, separators=(",", ":")), t,
                                                 json.dumps(v))
             for l, v in series]
    return ('{"status":"success","data":{"resultType":"vector","result":[%s]}}'
            % ",".join(parts)).encode()


def which_instant(query):
    for needle, name in (("kube_pod_owner", "pod_owner"),
                         ("changes_prometheus", "metricsql")):
        if needle in query:
            return name
    return fs.classify(query)


class VectorServer(fs.FaultServer):
    """The fault server's matrices, and instant answers of the same fleet:
    the nth answer of query `target` (1 = the first) is garbled by `fault`."""

    def __init__(self):
        super().__init__("good")
        self.garble(None, None, 0)

    def garble(self, fault, target, nth):
        with self.lock:
            self.fault, self.target, self.nth = fault, target, nth
            self.seen = {}

    def handle(self, h, body):
        u = urllib.parse.urlsplit(h.path)
        if u.path == "/api/v1/status/buildinfo":  # VictoriaMetrics: no version
            return self.reply(h, 200, b'{"status":"success","data":{}}')
        if u.path != "/api/v1/query":
            return super().handle(h, body)
        params = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query).items()}
        which = which_instant(params.get("query", ""))
        t = params.get("time", "0")
        series = {"pod_owner": [OWNER], "metricsql": [({}, "0")]}.get(which) or fs.series_of(which)
        with self.lock:
            self.seen[which] = self.seen.get(which, 0) + 1
            hit = self.fault and which == self.target and self.seen[which] == self.nth
            fault = self.fault
        self.reply(h, 200, FAULTS[fault][1](series, t) if hit else vector(series, t))


class VectorSuite(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.srv = None

    def config(self, name, mode="raw"):
        cfg = {
            "prometheus": {"url": self.srv.url(), "timeout_seconds": 10, "retries": 0},
            "collection": {"step_seconds": 60, "chunk_hours": 1, "mode": mode,
                           "hostname_label": "Hostname"},
            "teams": {"rules": [{"pod_label": "team"}]},
            "prices": {"entries": [{"model_pattern": "^NVIDIA A100", "unit": "GB-Hours",
                                    "price": "0.05", "currency": "USD",
                                    "valid_from": "2026-01-01T00:00:00Z"}]},
            "idle_overhead": {"policy": "unbilled"},
            "billing": {"currency": "USD"},
        }
        path = self.path(name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def check_cmd(self, name):
        return self.engine.run(self.config(name), self.path(name + ".db"), "check", "--at", AT)

    def collect(self, name, mode="raw"):
        db = self.path(name + ".db")
        rc, _, err = self.engine.run(self.config(name, mode), db, "collect", "--from", FROM,
                                     "--to", TO)
        return rc, err, db

    @staticmethod
    def owners(db):
        return ledger_db.pod_owners(db)

    @staticmethod
    def names(err, needles, rc, want_rc):
        p = [] if rc == want_rc else ["exit %s (expected %s)" % (rc, want_rc)]
        p += ["stderr lacks %r" % n for n in needles if n not in err]
        if p:
            p.append("stderr: %s" % harness.tail(err, 500))
        return p

    def main(self):
        self.engine = harness.Engine(os.path.abspath(self.args.bin), self.work)
        self.srv = VectorServer()
        rc, out, err = self.check_cmd("good-check")
        if not self.tap.check("good: check exits 0 reading every query at the instant",
                              [] if rc == 0 and "query fb_used" in out
                              else ["exit %s: %s %s" % (rc, harness.tail(out, 300),
                                                        harness.tail(err, 300))]):
            return
        rc, err, db = self.collect("good-collect")
        got = self.owners(db) if rc == 0 else "exit %s: %s" % (rc, harness.tail(err))
        self.tap.check("good: a collect stores pod ns-x/p's owner, Deployment web",
                       [] if got == [("ns-x", "p", "Deployment", "web")] else [str(got)])

        where = ["/api/v1/query (query="]
        for fault, (needles, _) in FAULTS.items():
            self.srv.garble(fault, "fb_used", 1)
            rc, _, err = self.check_cmd("check-" + fault)
            self.tap.check("%s in check's query loop: exit 4 naming the query and the fault"
                           % fault, self.names(err, where + ["DCGM_FI_DEV_FB_USED"] + needles,
                                               rc, 4))
        for fault, (needles, _) in FAULTS.items():
            self.srv.garble(fault, "fb_used", 2)
            rc, _, err = self.check_cmd("probe-" + fault)
            self.tap.check("%s in the exporter schema probe: exit 4 naming the query and the "
                           "fault" % fault,
                           self.names(err, where + ["DCGM_FI_DEV_FB_USED"] + needles, rc, 4))
        for fault in ("nan", "duplicate_series", "trailing_garbage", "status_error"):
            needles = FAULTS[fault][0]
            self.srv.garble(fault, "pod_owner", 1)
            rc, err, db = self.collect("owner-" + fault)
            p = self.names(err, where + ["pod owners not collected", "kube_pod_owner"] + needles,
                           rc, 0)
            if rc == 0 and self.owners(db):
                p.append("owners stored: %s" % self.owners(db))
            self.tap.check("%s in the pod owner answer: billed, a warning naming the fault, no "
                           "owner stored" % fault, p)
        for fault in ("nan", "invalid_utf8", "matrix"):
            needles = FAULTS[fault][0]
            self.srv.garble(fault, "metricsql", 1)
            rc, err, _ = self.collect("server-" + fault, mode="server")
            self.tap.check("%s in server mode's backend probe: exit 4 naming the probe and the "
                           "fault" % fault,
                           self.names(err, where + ["changes_prometheus"] + needles, rc, 4))

    def cleanup(self):
        if self.srv:
            self.srv.close()


def main():
    args = harness.arguments(__doc__).parse_args()
    tap = harness.Tap()
    return harness.run_driver(VectorSuite, args, tap, "vector test run", "gpuledger-vector-")


if __name__ == "__main__":
    sys.exit(main())
