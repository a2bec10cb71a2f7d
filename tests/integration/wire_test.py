#!/usr/bin/env python3
"""wire_test.py - what comes off HTTP and how it is parsed (the wire side of
collection integrity).

Usage: python3 tests/integration/wire_test.py --bin build/gpuledger [--work DIR] [--keep]

Everything runs against faultserver.py (a fault-injecting Prometheus API on
127.0.0.1, in a thread of this driver): the failures checked here are ones a
real Prometheus cannot produce on demand. Its fleet is one A100 with pod
ns-x/p (team alpha) using 1000 MiB at every 60 s step.

  * A good collect of 2026-10-07 00:00-02:00 (1-hour chunks) bills alpha
    1000 MiB x 7200 s = 7,200,000 MiB.s (the model's own figure), and every
    query_range request carries partial_response=false.
  * Garbled answers for the same window, each on a copy of that database:
    trailing HTML, two documents, duplicate status / data keys, a raw NUL,
    "20000\\u0000junk", a hex value, samples as objects, invalid UTF-8 in a
    pod label and in a team label, a duplicate timestamp, timestamps off the
    grid, a sample outside the window, Thanos-style warnings, VictoriaMetrics
    isPartial. Each: collect exits 4, stderr names the query file, the chunk
    and the place (series, label, timestamp), and the stored rows (usage,
    device, collected_hour, label_series, watermark) are exactly the good
    run's.
  * prometheus.accept_warnings accepts the warnings it matches (collect
    exits 0, the warning logged, figures unchanged) and still refuses one it
    does not match.
  * Implausible values (1e13 MiB, a busy ratio of 1e9) at two steps per
    chunk are skipped, logged by query, chunk, reason and count with the
    first samples, and alpha is billed 1000 MiB x 60 s x 116 steps.
  * The response cap: 65 MiB with Content-Length and a gzip bomb (100 MiB
    decompressed, 100 KB on the wire) against the 64 MiB default, 2 MiB
    chunked against max_response_bytes 1048576: collect fails naming the
    limit and the key, the database unchanged.
  * Answers that are not whole: a gzip body followed by a second gzip
    member or by garbage fails naming "trailing data after the compressed
    body" (not libcurl's "Failed writing received data"); an HTTP 206 with a
    complete-looking body fails naming the status and the URL; each leaves
    the stored rows unchanged.
  * Retry-After: 300 s, an HTTP-date 600 s ahead and 99999999999999999999 s
    (beyond any integer type; no UBSan report) against the default deadline
    (300 s), Retry-After: 300 with request_deadline_seconds 3: each fails in
    seconds, saying so; Retry-After: 1 once is waited for and the collect
    succeeds.
  * An HTTP 400 body that echoes the request headers (bearer token; basic
    auth as JSON with access_token= and password=) is logged without the
    token, the password or the base64 credentials, with [redacted] and the
    non-secret X-Scope-OrgID kept.
  * bearer_token_file / basic_auth_file = /dev/zero: a config error (exit 3)
    naming the 64 KiB limit, at once (the run is bounded by ulimit -v, so an
    engine that reads it whole fails instead of eating the machine).

Output: TAP lines; exit 1 when a check failed.
"""

import base64
import json
import os
import secrets
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import faultserver as fs  # noqa: E402
import harness  # noqa: E402
import ledger_db  # noqa: E402

FROM, TO = "2026-10-07T00:00:00Z", "2026-10-07T02:00:00Z"
STEPS = 120  # 2 hours of 60 s steps
GOOD_MIB_S = fs.USED_MIB * 60 * STEPS
TENANT = "tenant-wire"

# mode -> what stderr must name (besides the chunk)
GARBLED = {
    "trailing_garbage": ["fb_used.promql", "trailing garbage", "<html>"],
    "two_documents": ["fb_used.promql", "trailing garbage"],
    "duplicate_status": ["fb_used.promql", 'duplicate key "status"'],
    "duplicate_data": ["fb_used.promql", 'duplicate key "data"'],
    "nul_byte": ["fb_used.promql", "not valid JSON at byte"],
    "nul_escape_value": ["fb_used.promql", "20000\\x00junk", "is not a number",
                         "2026-10-07T00:00:00Z", 'UUID="GPU-1"', 'pod="p"'],
    "hex_value": ["fb_used.promql", '"0x3e8" is not a number', 'pod="p"'],
    "sample_object": ["fb_used.promql", "unexpected object", 'pod="p"'],
    "invalid_utf8_label": ["fb_used.promql", 'label "pod"', "UTF8", 'UUID="GPU-1"'],
    "invalid_utf8_team": ["pod_labels.promql", 'label "label_team"', "UTF8",
                          'namespace="ns-x"'],
    "duplicate_timestamp": ["fb_used.promql", "duplicate timestamp", "2026-10-07T00:05:00Z",
                            'pod="p"'],
    "off_grid": ["fb_used.promql", "off the step grid", "2026-10-07T00:00:30Z", 'pod="p"'],
    "out_of_window": ["fb_used.promql", "outside the requested window",
                      "2026-10-07T01:00:00Z", 'pod="p"'],
    "warnings": ["fb_used.promql", "2 warnings", "No StoreAPIs matched for this query",
                 "prometheus.accept_warnings"],
    "vm_partial": ["fb_used.promql", "isPartial: true"],
}


def is_asan(path):
    with open(path, "rb") as f:
        return b"__asan_init" in f.read()


class WireSuite(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.srv = None

    def config(self, name, **prom):
        p = {"url": self.srv.url(), "headers": {"X-Scope-OrgID": TENANT},
             "timeout_seconds": 10}
        p.update(prom)
        cfg = {
            "prometheus": p,
            "collection": {"step_seconds": 60, "chunk_hours": 1},
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

    def collect(self, cfg, db, timeout=60):
        t0 = time.time()
        rc, out, err = self.engine.run(cfg, db, "collect", "--from", FROM, "--to", TO,
                                       timeout=timeout)
        return rc, out, err, time.time() - t0

    def alpha(self, cfg, db):
        rc, out, err = self.engine.run(cfg, db, "invoice", "--period", "2026-10")
        if rc != 0:
            return "invoice exit %s: %s" % (rc, harness.tail(err))
        total = 0
        for inv in json.loads(out)["invoices"]:
            for line in inv["lines"]:
                if inv["team"] == "alpha" and line["kind"] == "memory_used":
                    total += int(line["mib_seconds"])
        return total

    @staticmethod
    def rows(db):
        # what collect stores, text as bytes (an engine may have stored
        # invalid UTF-8), not when it was stored
        return ledger_db.raw_tables(db)

    def copy_good(self, name):
        db = self.path(name + ".db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.good_db + suffix):
                shutil.copy(self.good_db + suffix, db + suffix)
        return db

    def unchanged(self, db):
        """Problems when db's stored rows differ from the good run's."""
        got = self.rows(db)
        return ["%s rows changed (%d -> %d rows)" % (t, len(self.good_rows[t]), len(got[t]))
                for t in got if got[t] != self.good_rows[t]]

    def main(self):
        self.engine = harness.Engine(os.path.abspath(self.args.bin), self.work)
        self.srv = fs.FaultServer()
        good_cfg = self.config("good")
        self.good_db = self.path("good.db")
        rc, _, err, _ = self.collect(good_cfg, self.good_db)
        got = self.alpha(good_cfg, self.good_db) if rc == 0 else "collect exit %s: %s" % (
            rc, harness.tail(err))
        if not self.tap.check("a good collect from the fault server bills alpha %d MiB.s"
                              % GOOD_MIB_S, [] if got == GOOD_MIB_S else [str(got)]):
            return
        self.good_rows = self.rows(self.good_db)
        reqs = [r for r in self.srv.requests if r[0] == "/api/v1/query_range"]
        bad = [r[1].get("query", "")[:60] for r in reqs if r[1].get("partial_response") != "false"]
        self.tap.check("every query_range request sends partial_response=false (%d requests)"
                       % len(reqs), ["%d without it, e.g. %s" % (len(bad), bad[:2])] if bad or not reqs
                       else [])

        self.compression(reqs)
        for mode, needles in GARBLED.items():
            self.garbled(mode, needles, good_cfg)
        self.accepted_warnings()
        self.implausible(good_cfg)
        self.cap()
        self.refused_responses()
        self.retry_after()
        self.scrubbed()
        self.dev_zero()

    def compression(self, reqs):
        """prometheus.compression: over http:// auto asks identity; "on" asks
        what libcurl decodes; the figures are the same."""
        enc = sorted({r[2].get("Accept-Encoding", "(none)") for r in reqs})
        self.tap.check("prometheus.compression auto over http:// asks Accept-Encoding: identity",
                       [] if enc == ["identity"] else ["sent %s" % enc])
        for value, want in (("on", lambda e: "deflate" in e and "gzip" in e),
                            ("off", lambda e: e == "identity")):
            n = len(self.srv.requests)
            cfg = self.config("compression-" + value, compression=value)
            db = self.path("compression-%s.db" % value)
            rc, _, err, _ = self.collect(cfg, db)
            p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
            sent = sorted({r[2].get("Accept-Encoding", "(none)") for r in self.srv.requests[n:]
                           if r[0] == "/api/v1/query_range"})
            if not sent or not all(want(e) for e in sent):
                p.append("sent Accept-Encoding %s" % sent)
            if not p:
                p += self.unchanged(db)
            self.tap.check("prometheus.compression %s: Accept-Encoding %s, the same rows"
                           % (value, "deflate, gzip, ..." if value == "on" else "identity"), p)

    def garbled(self, mode, needles, cfg, db_name=None):
        self.srv.set_mode(mode)
        db = self.copy_good(db_name or mode)
        rc, _, err, _ = self.collect(cfg, db)
        p = [] if rc == 4 else ["exit %s (expected 4)" % rc]
        for n in needles + ["chunk 2026-10-07T00:00:00Z"]:
            if n not in err:
                p.append("stderr lacks %r" % n)
        p += self.unchanged(db)
        if p:
            p.append("stderr: %s" % harness.tail(err, 400))
        self.tap.check("%s: collect refuses it naming the place, stored rows unchanged" % mode, p)

    def accepted_warnings(self):
        self.srv.set_mode("warnings")
        cfg = self.config("accept", accept_warnings=["^No StoreAPIs matched",
                                                     "code = Unavailable$"])
        db = self.copy_good("accept")
        rc, _, err, _ = self.collect(cfg, db)
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        if err.count("backend warning accepted") < 2 or "receive-eu-2" not in err:
            p.append("accepted warnings not logged: %s" % harness.tail(err, 300))
        got = self.alpha(cfg, db)
        if got != GOOD_MIB_S:
            p.append("alpha %s, expected %d" % (got, GOOD_MIB_S))
        self.tap.check("prometheus.accept_warnings: matching warnings are logged and accepted", p)
        cfg = self.config("accept-one", accept_warnings=["^No StoreAPIs matched"])
        db = self.copy_good("accept-one")
        rc, _, err, _ = self.collect(cfg, db)
        p = [] if rc == 4 else ["exit %s (expected 4)" % rc]
        if "receive-eu-2: rpc error" not in err or "1 warning " not in err:
            p.append("stderr lacks the unaccepted warning: %s" % harness.tail(err, 300))
        p += self.unchanged(db)
        self.tap.check("prometheus.accept_warnings: a warning no pattern matches still fails", p)

    def implausible(self, cfg):
        self.srv.set_mode("implausible")
        db = self.path("implausible.db")
        rc, _, err, _ = self.collect(cfg, db)
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        n = len(fs.IMPLAUSIBLE_STEPS)
        for q in ("fb_used", "gr_engine_active"):
            for chunk in ("2026-10-07T00:00:00Z", "2026-10-07T01:00:00Z"):
                line = "skipped samples query=%s chunk=%s reason=out_of_bounds count=%d" % (
                    q, chunk, n)
                if line not in err:
                    p.append("no %r" % line)
        for first in ('query=fb_used chunk=2026-10-07T00:00:00Z out_of_bounds: value '
                      '"10000000000000" at 2026-10-07T00:03:00Z',
                      'query=gr_engine_active chunk=2026-10-07T00:00:00Z out_of_bounds: value '
                      '"1000000000" at 2026-10-07T00:03:00Z'):
            if first not in err:
                p.append("the first skipped sample is not shown: %r" % first)
        want = fs.USED_MIB * 60 * (STEPS - 2 * n)
        got = self.alpha(cfg, db)
        if got != want:
            p.append("alpha %s, expected %d (the implausible steps skipped)" % (got, want))
        if p:
            p.append("stderr: %s" % harness.tail(err, 600))
        self.tap.check("implausible values (1e13 MiB, busy 1e9) are skipped and logged by query, "
                       "chunk, reason and count with the first samples", p)

    def cap(self):
        small = self.config("cap", max_response_bytes=1 << 20)
        default = self.config("cap-default")
        # compression "on": a compressed Content-Length says nothing of the
        # decompressed size, the body callback's count is the only guard
        compressed = self.config("cap-compressed", compression="on")
        for mode, cfg, limit in (("big_content_length", default, 64 << 20),
                                 ("big_chunked", small, 1 << 20),
                                 ("gzip_bomb", default, 64 << 20),
                                 ("gzip_bomb", compressed, 64 << 20)):
            self.srv.set_mode(mode)
            db = self.copy_good(mode)
            rc, _, err, secs = self.collect(cfg, db)
            p = [] if rc != 0 else ["exit 0"]
            for n in ("query=DCGM_FI_DEV_FB_USED", "larger than prometheus.max_response_bytes",
                      "(%d bytes, decompressed)" % limit):
                if n not in err:
                    p.append("stderr lacks %r" % n)
            p += self.unchanged(db)
            if p:
                p.append("stderr: %s" % harness.tail(err, 400))
            self.tap.check("%s%s: collect stops at the response cap (%d bytes) naming it" % (
                mode, " (compression on)" if cfg == compressed else "", limit), p)

    def refused_responses(self):
        """Answers that are not whole: refused, naming what is wrong."""
        url = self.srv.url() + "/api/v1/query_range"
        trailing = ["trailing data after the compressed body", "Content-Encoding: gzip"]
        for mode, needles in (("gzip_second_member", trailing), ("gzip_garbage", trailing),
                              ("partial_content", ["HTTP 206", url])):
            self.srv.set_mode(mode)
            db = self.copy_good(mode)
            rc, _, err, _ = self.collect(self.config(mode), db)
            p = [] if rc == 4 else ["exit %s (expected 4)" % rc]
            for n in needles + ["query=DCGM_FI_DEV_FB_USED"]:
                if n not in err:
                    p.append("stderr lacks %r" % n)
            if "Failed writing" in err:
                p.append("stderr blames the writing of the data")
            p += self.unchanged(db)
            if p:
                p.append("stderr: %s" % harness.tail(err, 400))
            self.tap.check("%s: collect refuses the answer naming %s, stored rows unchanged"
                           % (mode, " and ".join(repr(n) for n in needles)), p)

    def retry_after(self):
        # the default deadline (300 s) and one of 3 s
        default = self.config("deadline-default")
        short = self.config("deadline", request_deadline_seconds=3, retries=3)
        for mode, cfg, deadline in (("retry_after_300", default, 300),
                                    ("retry_after_date", default, 300),
                                    ("retry_after_huge", default, 300),
                                    ("retry_after_300", short, 3)):
            self.srv.set_mode(mode)
            db = self.copy_good("%s-%d" % (mode, deadline))
            rc, _, err, secs = self.collect(cfg, db, timeout=40)
            p = [] if rc == 4 else ["exit %s (expected 4)" % rc]
            if secs > 15:
                p.append("took %.0fs" % secs)
            for n in ("Retry-After", "prometheus.request_deadline_seconds = %ds" % deadline,
                      "HTTP 429"):
                if n not in err:
                    p.append("stderr lacks %r" % n)
            if mode == "retry_after_huge" and "retry after 99999999999999999999s" not in err:
                p.append("stderr does not show the Retry-After as sent")
            if "runtime error" in err:
                p.append("undefined behaviour (UBSan): %s" % harness.tail(
                    err[err.index("runtime error"):], 200))
            p += self.unchanged(db)
            if p:
                p.append("stderr: %s" % harness.tail(err, 400))
            self.tap.check("%s: a Retry-After beyond the request deadline (%d s) fails at once, "
                           "saying so" % (mode, deadline), p)
        self.srv.set_mode("retry_after_once")
        db = self.copy_good("retry-once")
        rc, _, err, secs = self.collect(self.config("retry-once"), db, timeout=60)
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        if secs < 1:
            p.append("Retry-After: 1 was not waited for (%.2fs)" % secs)
        p += self.unchanged(db)
        self.tap.check("Retry-After: 1 within the deadline is waited for, then the collect "
                       "succeeds", p)

    def scrubbed(self):
        token = "tok-" + secrets.token_hex(16)
        tfile = self.path("token")
        with open(tfile, "w") as f:
            f.write(token + "\n")
        self.srv.set_mode("echo_headers")
        cfg = self.config("echo", bearer_token_file=tfile)
        rc, out, err, _ = self.collect(cfg, self.path("echo.db"))
        p = [] if rc == 4 else ["exit %s (expected 4)" % rc]
        if token in err or token in out or token[4:] in err:
            p.append("the token reached the output")
        for n in ("HTTP 400", "[redacted]", "X-Scope-OrgID: " + TENANT):
            if n not in err:
                p.append("stderr lacks %r" % n)
        if p:
            p.append("stderr: %s" % harness.tail(err.replace(token, "<TOKEN>"), 400))
        self.tap.check("an error body echoing the bearer token is logged scrubbed "
                       "(X-Scope-OrgID kept)", p)

        password = "pw-" + secrets.token_hex(12)
        afile = self.path("basic")
        with open(afile, "w") as f:
            f.write("gpuledger:%s\n" % password)
        b64 = base64.b64encode(("gpuledger:" + password).encode()).decode()
        self.srv.set_mode("echo_headers_json")
        cfg = self.config("echo-basic", basic_auth_file=afile)
        rc, out, err, _ = self.collect(cfg, self.path("echo-basic.db"))
        p = [] if rc == 4 else ["exit %s (expected 4)" % rc]
        for secret, what in ((password, "the password"), (b64, "base64 user:password")):
            if secret in err or secret in out:
                p.append("%s reached the output" % what)
        for n in ("HTTP 400", "bad_data", "[redacted]"):
            if n not in err:
                p.append("stderr lacks %r" % n)
        if p:
            p.append("stderr: %s" % harness.tail(err.replace(password, "<PW>").replace(
                b64, "<B64>"), 400))
        self.tap.check("a JSON error echoing basic-auth credentials, access_token= and password= "
                       "is logged scrubbed", p)

    def dev_zero(self):
        self.srv.set_mode("good")
        limit = [] if is_asan(self.args.bin) else ["ulimit -v 1048576 &&"]
        for key in ("bearer_token_file", "basic_auth_file"):
            cfg = self.config("zero-" + key, **{key: "/dev/zero"})
            cmd = ["bash", "-c", " ".join(limit + ['exec "$0" "$@"'])] + self.engine.cmd(
                cfg, self.path("zero.db"), "collect", "--from", FROM, "--to", TO)
            t0 = time.time()
            rc, out, err = harness.run_cmd(cmd, timeout=60, cwd=self.work)
            self.engine.record(cmd, rc, time.time() - t0, err)
            p = [] if rc == 3 else ["exit %s (expected 3)" % rc]
            for n in (key, "/dev/zero", "larger than 65536 bytes"):
                if n not in err:
                    p.append("stderr lacks %r" % n)
            if time.time() - t0 > 10:
                p.append("took %.0fs" % (time.time() - t0))
            if p:
                p.append("stderr: %s" % harness.tail(err, 300))
            self.tap.check("%s = /dev/zero: a config error naming the 64 KiB limit" % key, p)

    def cleanup(self):
        if self.srv:
            self.srv.close()


def main():
    args = harness.arguments(__doc__).parse_args()
    tap = harness.Tap()
    return harness.run_driver(WireSuite, args, tap, "wire test run", "gpuledger-wire-")


if __name__ == "__main__":
    sys.exit(main())
