#!/usr/bin/env python3
"""`run` delivers the period trees to S3-compatible object storage
(outputs.s3), against a real S3 server on loopback.

Usage: python3 tests/integration/s3_test.py --bin build/gpuledger [--work DIR]
                                            [--keep] [--cache DIR]

The object store is s3rver (npm registry, installed once into --cache,
default .cache/s3-test in the repository). s3rver does not verify SigV4
signatures (its authentication middleware says "Signature version 4
calculation is unimplemented"), so every request goes through a loopback
verifier first that recomputes the signature independently with
authserver.sigv4_sign (AWS's published algorithm, itself checked against
AWS's SigV4 test-suite vectors here), S3's rules: the path URI-encoded
once, scope REGION/s3, host, x-amz-date and x-amz-content-sha256 signed,
x-amz-content-sha256 equal to the SHA-256 of the body actually received
(no UNSIGNED-PAYLOAD). Verified requests are forwarded to s3rver unchanged.

Data: tests/integration/scenarios/run-month.json in a real Prometheus.

1. run --now T1 uploads every file of every period folder with signed
   requests; the bucket (read back from s3rver) equals the local tree byte
   for byte and each object carries x-amz-meta-sha256.
2. run --now T1 again: nothing is sent (HEADs only).
3. Broken uploads: the store answering 500 (run --now T2, new data),
   the endpoint down (a closed port, run --now T3), a wrong secret (the
   verifier refuses the signature, run --now T4): each exits 5 naming
   outputs.s3 and the cause, and the next run with the store back uploads
   exactly what was missing or stale, after which the bucket equals the
   tree again. The same for a faulty store that answers 200 but keeps half
   of each object (run --now T4B): the run checks each PUT with a HEAD
   (size and x-amz-meta-sha256) and exits 5 saying what the store holds.
   An object cut short behind the engine's back (its x-amz-meta-sha256
   still the file's) is sent again by the next run: a HEAD must show the
   file's size as well as its hash for a file to be skipped.
4. Per-block key files (outputs.s3.auth access_key_id_file /
   secret_access_key_file): with wrong pod-wide AWS_* variables set, the
   upload is signed with the keys of the files (the verifier knows only
   those); the Secret rotated in the middle of a run (the files replaced
   as the kubelet does, the old key revoked at once) is used from the next
   request on; a missing or empty key file fails the run (exit 5) naming
   the key and the path, a half-configured block is a config error (exit
   3); no secret of the files in any output of these runs (--verbose).
"""

import hashlib
import http.client
import secrets
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gen"))
import authserver  # noqa: E402
import gencluster as gc  # noqa: E402
import harness  # noqa: E402
from harness import CHILD_ENV  # noqa: E402

S3RVER_PKG = "s3rver@3.7.1"
SCENARIO = os.path.join(HERE, "scenarios", "run-month.json")
BUCKET = "gpuledger-test"
PREFIX = "chargeback/prod"
REGION = "eu-central-1"
KEY, SECRET = "S3RVER", "S3RVER"   # s3rver's account (it looks the key id up)
T1 = "2026-12-01T06:00:00Z"
T2 = "2026-12-01T09:00:00Z"
T3 = "2026-12-01T12:00:00Z"
T4 = "2026-12-01T15:00:00Z"
T4B = "2026-12-01T16:30:00Z"
T5 = "2026-12-01T18:00:00Z"
T6 = "2026-12-01T21:00:00Z"
EMPTY_SHA = hashlib.sha256(b"").hexdigest()


class Unavailable(Exception):
    pass


def npm_env():
    return dict(os.environ, npm_config_update_notifier="false", npm_config_fund="false",
                npm_config_audit="false")


def s3rver_script(cache):
    script = os.path.join(cache, "node_modules", "s3rver", "bin", "s3rver.js")
    if os.path.exists(script):
        return script
    npm = shutil.which("npm")
    if not npm:
        raise Unavailable("npm is not installed (Debian package npm), needed for %s" % S3RVER_PKG)
    os.makedirs(cache, exist_ok=True)
    rc, out, err = harness.run_cmd([npm, "install", "--no-audit", "--no-fund", "--prefix", cache,
                                    S3RVER_PKG], 600, cwd=cache, env=npm_env())
    if rc != 0 or not os.path.exists(script):
        raise Unavailable("npm install %s failed (%s): %s" % (S3RVER_PKG, rc,
                                                              harness.tail(err, 300)))
    return script


class Verifier:
    """The SigV4 check S3 does, then the request forwarded to s3rver.
    mode: "ok", "500" (PUTs answered 500 without forwarding), or "short" (a
    faulty store: PUTs forwarded with the second half of the body cut off,
    their headers, x-amz-meta-sha256 included, kept; s3rver answers 200)."""

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.mode = "ok"
        self.keys = {KEY: SECRET}   # the access keys the store knows
        self.after_ok = None        # called once after the next verified request
        self.log = []
        self.lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                owner.handle(self)

            def do_PUT(self):
                owner.handle(self)

            def do_GET(self):
                owner.handle(self)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def take(self):
        with self.lock:
            out, self.log = self.log, []
        return out

    def problems(self, h, body):
        """Why S3 would refuse h (None: it would not)."""
        a = authserver.parse_authorization(h.headers.get("Authorization"))
        if not a:
            return "no SigV4 Authorization header"
        key, day, region, service, signed_s, sig = a
        signed = signed_s.split(";")
        amz_date = h.headers.get("X-Amz-Date", "")
        if day != amz_date[:8] or region != REGION or service != "s3":
            return "scope %s/%s/%s" % (day, region, service)
        for need in ("host", "x-amz-date", "x-amz-content-sha256"):
            if need not in signed:
                return "%s not signed (SignedHeaders %s)" % (need, signed_s)
        if signed != sorted(signed):
            return "SignedHeaders not sorted"
        unsigned = [k for k in h.headers.keys()
                    if k.lower().startswith("x-amz-") and k.lower() not in signed]
        if unsigned:
            return "x-amz-* headers not signed: %s" % unsigned
        payload = h.headers.get("x-amz-content-sha256", "")
        if payload != hashlib.sha256(body).hexdigest():
            return "x-amz-content-sha256 %r is not the SHA-256 of the %d bytes received" % (
                payload[:20], len(body))
        with self.lock:
            secret = self.keys.get(key)
        if secret is None:
            return "unknown access key %r" % key
        path, _, query = h.path.partition("?")
        # S3 signs the path URI-encoded once: sigv4_sign encodes what it is
        # given, so it gets the decoded path
        _, _, want = authserver.sigv4_sign(h.command, urllib.parse.unquote(path), query,
                                           list(h.headers.items()), signed, body, amz_date,
                                           region, service, secret)
        if want != sig:
            return "signature mismatch"
        return None

    def handle(self, h):
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        why = self.problems(h, body)
        a = authserver.parse_authorization(h.headers.get("Authorization"))
        rec = {"method": h.command, "path": h.path, "ok": why is None, "why": why or "",
               "bytes": len(body), "key": a[0] if a else None}
        with self.lock:
            self.log.append(rec)
            hook = self.after_ok if why is None else None
            if hook:
                self.after_ok = None
        if hook:
            hook()
        if why:
            doc = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>"
                   "SignatureDoesNotMatch</Code><Message>The request signature we calculated "
                   "does not match the signature you provided. (%s)</Message></Error>" % why)
            return self.send(h, 403, doc.encode(), {"Content-Type": "application/xml"})
        if self.mode == "500" and h.command == "PUT":
            doc = b"<Error><Code>InternalError</Code><Message>We encountered an internal error." \
                  b" Please try again.</Message></Error>"
            return self.send(h, 500, doc, {"Content-Type": "application/xml"})
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream, timeout=30)
        try:
            hdrs = {k: v for k, v in h.headers.items() if k.lower() not in ("host", "expect")}
            if self.mode == "short" and h.command == "PUT":
                body = body[:len(body) // 2]
                hdrs = {k: v for k, v in hdrs.items() if k.lower() != "content-length"}
                hdrs["Content-Length"] = str(len(body))
            if rec["key"] != KEY:   # s3rver knows its own account only (it checks no V4)
                hdrs["Authorization"] = h.headers["Authorization"].replace(
                    "Credential=%s/" % rec["key"], "Credential=%s/" % KEY, 1)
            conn.request(h.command, h.path, body=body if h.command == "PUT" else None,
                         headers=hdrs)
            r = conn.getresponse()
            data = r.read()
            if h.command == "PUT" and r.status == 200:
                self.settle(h.path, hdrs, len(body))
            extra = {k: v for k, v in r.getheaders()
                     if k.lower() not in ("content-length", "transfer-encoding", "connection",
                                          "date", "server")}
            self.send(h, r.status, data, extra, head=h.command == "HEAD",
                      length=r.getheader("Content-Length"))
        finally:
            conn.close()

    def settle(self, path, hdrs, size):
        """Waits (2 s at most) until s3rver's HEAD shows the size it was sent.
        s3rver 3.7.1's filesystem store answers a PUT when the body has passed
        its hashing stream, before the file stream has flushed, so a HEAD right
        after it may see a short file; S3 reads after a write what was written.
        Without this, the engine's check after each PUT fails a file now and
        then under load, a fault of the test's store, not of the engine."""
        deadline = time.time() + 2.0
        while time.time() < deadline:
            conn = http.client.HTTPConnection("127.0.0.1", self.upstream, timeout=5)
            try:
                conn.request("HEAD", path, headers={k: v for k, v in hdrs.items()
                                                    if k.lower() != "content-length"})
                r = conn.getresponse()
                r.read()
                if r.status != 200 or r.getheader("Content-Length") == str(size):
                    return
            finally:
                conn.close()
            time.sleep(0.01)

    @staticmethod
    def send(h, status, body, headers, head=False, length=None):
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", length if head and length else str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)


def logfmt_parse(line):
    """{key: value} of a logfmt line (go-logfmt's grammar: key[=value],
    values bare or double-quoted with backslash escapes); raises ValueError."""
    out, i, n = {}, 0, len(line)
    while i < n:
        while i < n and line[i] == " ":
            i += 1
        if i >= n:
            break
        j = i
        while j < n and line[j] > " " and line[j] not in '="':
            j += 1
        if j == i:
            raise ValueError("no key at column %d" % i)
        key, i = line[i:j], j
        if i < n and line[i] == "=":
            i += 1
            if i < n and line[i] == '"':
                j, buf = i + 1, []
                while True:
                    if j >= n:
                        raise ValueError("unterminated quote for %s" % key)
                    c = line[j]
                    if c == "\\":
                        e = line[j + 1] if j + 1 < n else ""
                        if e == "u":
                            buf.append(chr(int(line[j + 2:j + 6], 16)))
                            j += 6
                            continue
                        buf.append({"n": "\n", "t": "\t", "r": "\r"}.get(e, e))
                        j += 2
                        continue
                    if c == '"':
                        break
                    if ord(c) < 0x20:
                        raise ValueError("control character in %s" % key)
                    buf.append(c)
                    j += 1
                value, i = "".join(buf), j + 1
                if i < n and line[i] != " ":
                    raise ValueError("garbage after the quoted value of %s" % key)
            else:
                j = i
                while j < n and line[j] != " ":
                    if line[j] in '="':
                        raise ValueError("unquoted %r in the value of %s" % (line[j], key))
                    j += 1
                value, i = line[i:j], j
        else:
            value = None
        if key in out:
            raise ValueError("duplicate key %s" % key)
        out[key] = value
    return out


def event_problems(err, fmt):
    """Every event line of stderr parsed as fmt; the last "gpuledger: "
    line is the error message, not an event."""
    p, events = [], []
    for ln in err.splitlines():
        if ln.startswith("gpuledger: "):
            continue
        try:
            ev = json.loads(ln) if fmt == "json" else logfmt_parse(ln)
        except ValueError as e:
            p.append("%s: %r" % (e, ln[:200]))
            continue
        for k in ("ts", "level", "msg"):
            if not isinstance(ev.get(k), str):
                p.append("no %s in %r" % (k, ln[:200]))
        events.append(ev)
    if not events:
        p.append("no event lines")
    return p, events


def tree_files(d):
    """{period/relative path: bytes} of every period folder under d."""
    out = {}
    for period in sorted(os.listdir(d)):
        if len(period) != 7 or not os.path.isdir(os.path.join(d, period)):
            continue
        for root, _, files in os.walk(os.path.join(d, period)):
            for f in files:
                p = os.path.join(root, f)
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, d)] = fh.read()
    return out


class S3Test(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.s3rver = None
        self.verifier = None
        self.prom = None
        self.engine = harness.Engine(args.bin, args.work)

    def cleanup(self):
        if self.verifier:
            self.verifier.close()
        if self.s3rver:
            self.s3rver.stop()
        if self.prom:
            self.prom.stop()

    def object(self, key):
        """(status, body, x-amz-meta-sha256) of a GET straight from s3rver."""
        conn = http.client.HTTPConnection("127.0.0.1", self.s3port, timeout=30)
        try:
            conn.request("GET", "/%s/%s" % (BUCKET, urllib.parse.quote(key)))
            r = conn.getresponse()
            return r.status, r.read(), r.getheader("x-amz-meta-sha256")
        finally:
            conn.close()

    def bucket_problems(self):
        p = []
        local = tree_files(self.out)
        if not local:
            return ["no period folder in %s" % self.out]
        for rel, data in sorted(local.items()):
            status, body, meta = self.object("%s/%s" % (PREFIX, rel))
            if status != 200:
                p.append("%s: GET %s" % (rel, status))
            elif body != data:
                p.append("%s: the object differs from the local file (%d vs %d bytes)" % (
                    rel, len(body), len(data)))
            elif meta != hashlib.sha256(data).hexdigest():
                p.append("%s: x-amz-meta-sha256 %r" % (rel, meta))
        return p

    def write_config(self, endpoint, auth=None):
        cfg = json.loads(json.dumps(self.cfg_doc))
        cfg["outputs"] = {"s3": {"endpoint": endpoint, "bucket": BUCKET, "prefix": PREFIX,
                                 "region": REGION, "retries": 0,
                                 "auth": auth or {"type": "aws_sigv4", "credentials": "env"}}}
        with open(self.cfg, "w") as f:
            json.dump(cfg, f, indent=2)

    def run(self, now, secret=SECRET, log_format="text", engine=None, *args):
        env = dict(CHILD_ENV, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=secret,
                   GPULEDGER_LOG_FORMAT=log_format)
        for k in ("AWS_SESSION_TOKEN", "AWS_REGION", "AWS_PROFILE"):
            env.pop(k, None)
        return (engine or self.engine).run(self.cfg, self.db, *(args or (
            "run", "--out", self.out, "--now", now)), env=env)

    def setup(self):
        tap = self.tap
        with open(SCENARIO, encoding="utf-8") as f:
            scn = json.load(f)
        gen = gc.Cluster(scn, os.path.dirname(SCENARIO))
        om = self.path("data.om")
        with open(om, "w", encoding="utf-8", newline="\n") as f:
            gen.write_openmetrics(f)
        with open(self.path("prices.csv"), "w", encoding="utf-8", newline="") as f:
            f.write(gen.prices_csv())
        tsdb = self.path("tsdb")
        rc, out = harness.backfill(om, tsdb, self.work, ["--max-block-duration=768h"])
        if not tap.check("promtool backfill", [] if rc == 0 else [harness.tail(out)]):
            return False
        self.prom = harness.Prometheus(self.work, tsdb, lookback="299s")
        self.prom.start(attempts=4)
        cfg = gen.run_config({"run": {"repull_hours": 2, "start": "2026-11-20T00:00:00Z"}})
        cfg["prometheus"]["url"] = self.prom.url()
        cfg["prices"]["file"] = self.path("prices.csv")
        cfg.setdefault("collection", {})["queries_dir"] = os.path.join(REPO, "queries")
        self.cfg_doc = cfg
        self.cfg = self.path("gpuledger.json")
        self.db = self.path("gpuledger.db")
        self.out = self.path("out")
        # the object store
        try:
            script = s3rver_script(self.args.cache)
        except Unavailable as e:
            tap.skip("s3rver", str(e))
            return False
        self.s3port = harness.free_port()
        self.s3rver = harness.Server("s3rver", self.work)
        data = self.path("s3data")
        os.makedirs(data, exist_ok=True)
        self.s3rver.port = self.s3port
        self.s3rver.spawn(["node", script, "-d", data, "-a", "127.0.0.1", "-p", str(self.s3port),
                           "--silent", "--configure-bucket", BUCKET])
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.s3port, timeout=2)
                conn.request("GET", "/%s" % BUCKET)
                if conn.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        else:
            tap.fail("s3rver ready", "no answer on port %d" % self.s3port)
            return False
        self.verifier = Verifier(self.s3port)
        self.write_config(self.verifier.url())
        tap.note("s3rver on 127.0.0.1:%d behind the SigV4 verifier %s" % (self.s3port,
                                                                          self.verifier.url()))
        return True

    def main(self):
        tap = self.tap
        tap.check("the verifier's SigV4 matches AWS's test-suite vectors",
                  authserver.check_suite_vectors())
        if not self.setup():
            return
        v = self.verifier
        # 1. a period uploaded with signed requests
        rc, _, err = self.run(T1)
        log = v.take()
        puts = [r for r in log if r["method"] == "PUT"]
        local = tree_files(self.out)
        p = sorted({"refused %s: %s" % (r["method"], r["why"]) for r in log if not r["ok"]})
        p += [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        if len(puts) != len(local):
            p.append("%d PUTs for %d local files" % (len(puts), len(local)))
        p += self.bucket_problems()
        tap.check("run uploads every file of the period trees (%d files, %d signed requests, "
                  "verified)" % (len(local), len(log)), p)
        # 2. unchanged: nothing sent
        rc, _, err = self.run(T1)
        log = v.take()
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        p += ["%s %s" % (r["method"], r["path"]) for r in log if r["method"] != "HEAD"]
        p += ["refused %s: %s" % (r["path"], r["why"]) for r in log if not r["ok"]]
        if "sent=0" not in err:
            p.append("the log does not say sent=0: %s" % harness.tail(err, 300))
        tap.check("a second run uploads nothing unchanged (%d HEADs)" % len(log), p)
        # the log formats, on a run whose events quote server text
        for fmt in ("logfmt", "json"):
            rc, _, err = self.run(T1, secret="not-the-secret", log_format=fmt)
            v.take()
            p, events = event_problems(err, fmt)
            fails = [e for e in events if e.get("msg") == "upload failed"]
            if rc != 5 or not fails or "HTTP 403" not in (fails[0].get("error") or ""):
                p.append("exit %s; no upload failed event with error=...HTTP 403: %s" % (
                    rc, harness.tail(err, 300)))
            tap.check("--log-format %s: every event line parses (%d events, values with "
                      "spaces, quotes and = escaped)" % (fmt, len(events)), p)
        # 3. broken uploads, each retried by the next run
        cases = [("the store answers 500", T2, "500", None, None, "HTTP 500"),
                 ("the endpoint is down", T3, "ok", "http://127.0.0.1:%d" % harness.free_port(),
                  None, "outputs.s3"),
                 ("a wrong secret (signature refused)", T4, "ok", None, "not-the-secret",
                  "HTTP 403"),
                 ("a store that keeps half of each object", T4B, "short", None, None,
                  "the store answered 200 but holds")]
        for name, now, mode, endpoint, secret, want in cases:
            v.mode = mode
            if endpoint:
                self.write_config(endpoint)
            before = tree_files(self.out)
            rc, _, err = self.run(now, secret=secret or SECRET)
            v.take()
            p = []
            if rc != 5:
                p.append("exit %s, not 5" % rc)
            if want not in err or "outputs.s3" not in err:
                p.append("stderr does not name outputs.s3 and %r: %s" % (want,
                                                                         harness.tail(err, 400)))
            after = tree_files(self.out)
            changed = sorted(k for k in after if before.get(k) != after[k])
            if not changed:
                p.append("the run changed no local file (nothing to upload: the case tests "
                         "nothing)")
            stale = [k for k in changed
                     if self.object("%s/%s" % (PREFIX, k))[1] == after[k]]
            if stale:
                p.append("uploaded despite the failure: %s" % stale[:3])
            tap.check("%s: run exits 5 and names the cause (%d files to deliver)" % (
                name, len(changed)), p)
            v.mode = "ok"
            self.write_config(v.url())
            rc, _, err = self.run(now)
            log = v.take()
            sent = sorted(urllib.parse.unquote(r["path"]).split("/", 2)[2][len(PREFIX) + 1:]
                          for r in log if r["method"] == "PUT" and r["ok"])
            p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
            p += self.bucket_problems()
            now_local = tree_files(self.out)
            missing = [k for k in changed if k in now_local and k not in sent and
                       before.get(k) != now_local[k]]
            if missing:
                p.append("not re-sent: %s" % missing[:3])
            tap.check("%s: the next run uploads what was missing (%d PUTs)" % (name, len(sent)),
                      p)
        self.short_object(T4B)
        self.key_file_checks()

    def short_object(self, now):
        """An object cut short in the store, its x-amz-meta-sha256 still the
        file's: the next run sends it again."""
        local = tree_files(self.out)
        rel = max(local, key=lambda k: len(local[k]))
        data = local[rel]
        conn = http.client.HTTPConnection("127.0.0.1", self.s3port, timeout=30)
        try:
            # straight to s3rver, as a store that lost the end of the body
            conn.request("PUT", "/%s/%s/%s" % (BUCKET, PREFIX, urllib.parse.quote(rel)),
                         body=data[:len(data) // 2],
                         headers={"x-amz-meta-sha256": hashlib.sha256(data).hexdigest()})
            status = conn.getresponse().status
        finally:
            conn.close()
        got = self.object("%s/%s" % (PREFIX, rel))
        if status != 200 or len(got[1]) != len(data) // 2:
            self.tap.fail("an object cut short in the store is sent again",
                          "set-up: the short object was not stored (PUT %s, %d bytes back)"
                          % (status, len(got[1])))
            return
        self.tap.note("%s cut to %d of %d bytes in the store" % (rel, len(data) // 2, len(data)))
        rc, _, err = self.run(now)
        log = self.verifier.take()
        sent = [urllib.parse.unquote(r["path"]) for r in log if r["method"] == "PUT" and r["ok"]]
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        if sent != ["/%s/%s/%s" % (BUCKET, PREFIX, rel)]:
            p.append("PUTs %s, expected the short object's only" % sent[:3])
        p += self.bucket_problems()
        self.tap.check("an object cut short in the store (its x-amz-meta-sha256 still the "
                       "file's) is sent again by the next run", p)

    # ------------------------------------------------------------ key files
    def key_file_checks(self):
        tap, v = self.tap, self.verifier
        eng = harness.Engine(self.args.bin, self.work, options=["--verbose"])
        kdir = self.path("keys")
        os.makedirs(kdir, exist_ok=True)
        id_file, secret_file = os.path.join(kdir, "access-key-id"), os.path.join(
            kdir, "secret-access-key")
        seen, outputs = [], []

        def new_key():
            k, s = "AKIA" + secrets.token_hex(8).upper(), secrets.token_urlsafe(30)
            seen.append(s)
            return k, s

        def write_keys(k, s):
            # as the kubelet updates a Secret volume: whole files put in place
            for f, val in ((id_file, k), (secret_file, s)):
                with open(f + ".tmp", "w") as fh:
                    fh.write(val + "\n")
                os.replace(f + ".tmp", f)

        def run(now, *args):
            rc, out, err = self.run(now, "pod-wide-" + secrets.token_hex(8), "text", eng, *args)
            outputs.append(out + err)
            return rc, out, err

        auth = {"type": "aws_sigv4", "access_key_id_file": id_file,
                "secret_access_key_file": secret_file}
        k1, s1 = new_key()
        with v.lock:
            v.keys = {k1: s1}   # the pod-wide S3RVER pair is not accepted any more
        write_keys(k1, s1)
        self.write_config(v.url(), auth)
        v.take()
        rc, _, err = run(T5)
        log = v.take()
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        p += sorted({"refused %s: %s" % (r["method"], r["why"]) for r in log if not r["ok"]})
        p += sorted({"signed with %s, not the key file's" % r["key"] for r in log
                     if r["key"] != k1})
        puts = [r for r in log if r["method"] == "PUT"]
        if not puts:
            p.append("no PUT (nothing new to deliver: the case tests nothing)")
        p += self.bucket_problems()
        tap.check("outputs.s3.auth access_key_id_file/secret_access_key_file: %d requests "
                  "(%d PUTs) signed with the files' keys despite pod-wide AWS_* variables, "
                  "verified; the bucket equals the tree" % (len(log), len(puts)), p)

        # the Secret rotated during a run: the old key revoked at once
        k2, s2 = new_key()

        def rotate():
            write_keys(k2, s2)
            v.keys = {k2: s2}   # before the answer: the next request must use k2
        v.after_ok = rotate
        rc, _, err = run(T5)
        log = v.take()
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        if len(log) < 3:
            p.append("only %d requests: no request after the rotation" % len(log))
        else:
            if log[0]["key"] != k1:
                p.append("the first request was signed with %s, not the first key" % log[0]["key"])
            p += sorted({"after the rotation: signed with %s (%s)" % (
                "the revoked key" if r["key"] == k1 else r["key"], r["why"])
                for r in log[1:] if r["key"] != k2 or not r["ok"]})
        if "aws key files changed" not in err:
            p.append("the log does not say the key files changed")
        tap.check("the key files rotated in the middle of a run (old key revoked): the next "
                  "request on is signed with the new keys (%d requests, exit %s)" % (len(log), rc),
                  p)

        # a missing or empty key file
        k3, s3 = new_key()
        cases = [("a missing secret_access_key_file", dict(auth, secret_access_key_file=os.path.join(
                     kdir, "no-such-file")), "outputs.s3.auth.secret_access_key_file",
                  "no-such-file"),
                 ("an empty access_key_id_file", dict(auth, access_key_id_file=os.path.join(
                     kdir, "empty")), "outputs.s3.auth.access_key_id_file", "empty")]
        with open(os.path.join(kdir, "empty"), "w") as fh:
            fh.write("\n")
        for name, a, key, path in cases:
            self.write_config(v.url(), a)
            rc, _, err = run(T6)
            log = v.take()
            p = [] if rc == 5 else ["exit %s, not 5" % rc]
            last = [l for l in err.splitlines() if l.startswith("gpuledger: ")]
            msg = last[-1] if last else err
            if key not in msg or os.path.join(kdir, path) not in msg:
                p.append("the error does not name %s and %s: %s" % (key, path,
                                                                    harness.tail(err, 400)))
            if log:
                p.append("%d requests sent" % len(log))
            tap.check("%s: run exits 5 naming the key and the path (%s)" % (
                name, harness.tail(msg, 200)), p)
        write_keys(k3, s3)
        v.keys = {k3: s3}
        self.write_config(v.url(), auth)
        rc, _, err = run(T6)
        log = v.take()
        p = [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]
        p += sorted({"%s %s: key %s ok=%s" % (r["method"], r["path"], r["key"], r["ok"])
                     for r in log if r["key"] != k3 or not r["ok"]})
        if not [r for r in log if r["method"] == "PUT"]:
            p.append("no PUT: what the failed runs left was not delivered")
        p += self.bucket_problems()
        tap.check("the next run, with the keys of a newly rotated Secret, delivers what was "
                  "missing (%d requests)" % len(log), p)

        # a half-configured block: config error
        for name, a, want in [
                ("access_key_id_file without secret_access_key_file",
                 {"type": "aws_sigv4", "access_key_id_file": id_file},
                 "outputs.s3.auth.secret_access_key_file: missing"),
                ("key files with credentials env", dict(auth, credentials="env"),
                 'outputs.s3.auth: access_key_id_file, secret_access_key_file and '
                 'session_token_file are credentials "files", not "env"')]:
            self.write_config(v.url(), a)
            rc, _, err = run(T6, "prices")
            p = [] if rc == 3 else ["exit %s, not 3" % rc]
            if want not in err:
                p.append("stderr does not say %r: %s" % (want, harness.tail(err, 300)))
            tap.check("%s: a config error (exit 3) naming the key" % name, p)
        self.write_config(v.url(), auth)
        leaks = sorted({"%s..." % s[:6] for s in seen for o in outputs if s in o})
        tap.check("no secret of the key files in the stdout or stderr of the %d --verbose "
                  "runs" % len(outputs), leaks)


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--cache", default=os.path.join(REPO, ".cache", "s3-test"),
                    help="where s3rver is installed (default: %(default)s)")
    args = ap.parse_args()
    tap = harness.Tap()
    return harness.run_driver(lambda a, t: S3Test(a, t), args, tap, "s3 driver", "gl-s3-")


if __name__ == "__main__":
    sys.exit(main())
