#!/usr/bin/env python3
"""gpuledger access to Prometheus as deployed.

Usage: python3 tests/integration/access_test.py --bin build/gpuledger [--work DIR] [--keep]

Everything runs on 127.0.0.1:
  * a test CA, a server certificate (subjectAltName IP:127.0.0.1) and a
    client certificate signed by the CA, made with openssl;
  * a real Prometheus serving the generated clusters eu-1 and us-1
    (tests/integration/scenarios/cluster-eu.json, cluster-us.json, every
    series labelled with its cluster) with --web.config.file:
    TLS, client_auth_type RequireAndVerifyClientCert and basic_auth_users
    (bcrypt hash from `htpasswd -nbBC 10 "" PASSWORD`, Debian apache2-utils);
  * a recorder: a small HTTP server in a thread that records every request's
    headers, answers 401 unless the bearer token is the one it expects, and
    forwards the rest to the TLS Prometheus (client certificate, basic auth);
  * tinyproxy (Debian) in the foreground as an HTTP proxy.

Checks: ca_file + client certificate + basic_auth_file collect and invoice
exactly the generator's figures; no ca_file -> exit 4, a TLS error naming the
URL; no client certificate -> exit 4 naming the URL; wrong password -> exit 4
naming HTTP 401; bearer_token_file sends "Authorization: Bearer <token>" on
every request, and the token is re-read on the next run after a kubelet-style
rotation (..data symlink swap); a stale token -> exit 4 naming HTTP 401;
headers.X-Scope-OrgID arrives on every request (collect and check);
http_proxy from the environment (no no_proxy) sends every request through
tinyproxy (libcurl 7.88 does not bypass the proxy for 127.0.0.1 by itself),
https_proxy tunnels TLS with CONNECT, no_proxy=127.0.0.1 bypasses it, a dead
proxy makes collect fail; two clusters with their own credentials (eu-1:
TLS + client certificate + basic auth straight to Prometheus; us-1: bearer
token and its own tenant through the recorder) each send only their own;
credentials in the URL or an Authorization header
in headers are config errors (exit 3) that do not echo the secret. No
password, token or base64 user:password ever appears in the engine's stdout or
stderr (all runs use --verbose), nor in its database.

Output: "ok - NAME" / "not ok - NAME: REASON" lines and "# ..." comments;
exit 1 when a check failed. A missing tool fails its checks under CI=true
and is skipped otherwise.
"""

import base64
import copy
import http.client
import json
import os
import re
import secrets
import shutil
import socket
import ssl
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
import gencluster as gc  # noqa: E402
import harness  # noqa: E402
import backends_test as bt  # noqa: E402  (data writers, invoice comparison)

ENGINE_TIMEOUT = 40
USER = "gpuledger"
TENANT = "tenant-fleet"
TENANT_US = "tenant-us-1"


def tail(text, n=500):
    return harness.tail(text, n)


# ---------------------------------------------------------------- PKI

def make_pki(d):
    """CA, server cert (SAN IP:127.0.0.1), client cert; returns paths or raises."""
    def run(*args):
        p = subprocess.run(["openssl"] + list(args), cwd=d, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise RuntimeError("openssl %s: %s" % (args[0],
                                                   tail(p.stdout.decode(errors="replace"))))
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=gpuledger test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    with open(os.path.join(d, "client.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=clientAuth\n")
    for name, subj in (("server", "/CN=127.0.0.1"), ("client", "/CN=gpuledger")):
        run("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", subj)
        run("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext")
    return {k: os.path.join(d, k) for k in ("ca.crt", "server.crt", "server.key",
                                             "client.crt", "client.key")}


def bcrypt_hash(password):
    p = subprocess.run(["htpasswd", "-nbBC", "10", "", password], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("htpasswd: %s" % p.stderr.decode(errors="replace"))
    return p.stdout.decode().strip().lstrip(":")


# ---------------------------------------------------------------- recorder

class Recorder(harness.LoopbackServer):
    """HTTP on 127.0.0.1 in a thread: records (path, headers) of each request;
    answers 401 unless Authorization is "Bearer <expect>" (when expect is
    set); forwards the rest to the TLS Prometheus with the client certificate
    and basic auth (the engine's own Authorization is not forwarded)."""

    def __init__(self, upstream_port, ctx, basic):
        self.upstream = upstream_port
        self.ctx = ctx
        self.basic = basic
        self.expect = None
        self.log = []
        self.lock = threading.Lock()
        super().__init__()

    def take(self):
        with self.lock:
            out, self.log = self.log, []
        return out

    def handle(self, h, body):
        hdrs = [(k.lower(), v) for k, v in h.headers.items()]
        with self.lock:
            self.log.append((h.path, hdrs))
            expect = self.expect
        auth = [v for k, v in hdrs if k == "authorization"]
        if expect is not None and auth != ["Bearer " + expect]:
            doc = {"status": "error", "errorType": "unauthorized",
                   "error": "recorder: missing or wrong bearer token"}
            self.reply(h, 401, json.dumps(doc).encode())
            return
        conn = http.client.HTTPSConnection("127.0.0.1", self.upstream, context=self.ctx,
                                           timeout=60)
        try:
            conn.request("GET", h.path, headers={"Authorization": self.basic,
                                                 "Accept-Encoding": "identity"})
            r = conn.getresponse()
            status, data = r.status, r.read()
            ctype = r.getheader("Content-Type", "application/json")
        except Exception as e:
            status, data, ctype = 502, ("recorder upstream: %s" % e).encode(), "text/plain"
        finally:
            conn.close()
        self.reply(h, status, data, ctype)


# ---------------------------------------------------------------- tinyproxy

class Tinyproxy(harness.Server):
    """tinyproxy in the foreground; its LogFile is WORK/tinyproxy.log, its
    output WORK/tinyproxy.out."""

    def __init__(self, work):
        super().__init__("tinyproxy", work)
        self.out = os.path.join(work, "tinyproxy.out")

    def start(self):
        last = ""
        for _ in range(3):
            self.port = harness.free_port()
            conf = os.path.join(self.work, "tinyproxy.conf")
            with open(conf, "w") as f:
                # no ConnectPort line: CONNECT to any port (the TLS Prometheus)
                f.write("Port %d\nListen 127.0.0.1\nAllow 127.0.0.1\nTimeout 60\n"
                        "MaxClients 50\nLogFile \"%s\"\nLogLevel Info\n" % (self.port, self.log))
            with open(self.out, "ab") as outf:
                self.proc = subprocess.Popen(["tinyproxy", "-d", "-c", conf], cwd=self.work,
                                             stdin=subprocess.DEVNULL, stdout=outf, stderr=outf,
                                             env=harness.CHILD_ENV)
            deadline = time.time() + 10
            while time.time() < deadline and self.proc.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return None
                except OSError:
                    time.sleep(0.05)
            last = "tinyproxy did not listen (exit %s): %s %s" % (
                self.proc.poll(), tail(self.read_log(), 300),
                tail(open(self.out, errors="replace").read(), 300))
            self.stop()
        return last

    def read_log(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""


# ---------------------------------------------------------------- the test

class Test(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = None
        self.recorder = None
        self.proxy = None
        self.outputs = []      # (label, stdout + stderr) of every engine run
        self.secrets = {}

    def engine(self, label, cfg, db, *args, env=None):
        rc, out, err = self.eng.run(cfg, db, *args, env=env)
        self.outputs.append((label, out + "\n" + err))
        return rc, out, err

    def config(self, name, prom, mutate=None):
        cfg = copy.deepcopy(self.base_config)
        cfg["prometheus"] = dict({"timeout_seconds": 20, "retries": 0}, **prom)
        if mutate:
            mutate(cfg)
        path = self.path("cfg", name)
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
        return path

    def collect_invoice(self, label, cfg, db, env=None):
        """collect the window then invoice; returns (problems, rc, stderr)."""
        rc, _, err = self.engine(label, cfg, db, "collect", "--from", self.wf, "--to", self.wt,
                                 env=env)
        if rc != 0:
            return ["collect exit %s: %s" % (rc, tail(err))], rc, err
        rc2, out, err2 = self.engine(label, cfg, db, "invoice", "--period", self.exp["period"],
                                     "--format", "json", env=env)
        if rc2 != 0:
            return ["invoice exit %s: %s" % (rc2, tail(err2))], rc, err
        try:
            doc = json.loads(out)
        except ValueError:
            return ["invoice output is not JSON: %s" % tail(out)], rc, err
        return bt.invoice_problems(doc, self.exp), rc, err

    def main(self):
        tap, a = self.tap, self.args
        for d in ("cfg", "db", "pki", "secrets"):
            os.makedirs(self.path(d), exist_ok=True)
        self.bin = os.path.abspath(a.bin)
        if not (os.path.isfile(self.bin) and os.access(self.bin, os.X_OK)):
            tap.fail("engine binary present", "%s is missing or not executable" % a.bin)
            return
        self.eng = harness.Engine(self.bin, self.work, timeout=ENGINE_TIMEOUT,
                                  options=["--verbose"])
        missing = [t for t in ("openssl", "htpasswd", "prometheus", "promtool")
                   if not shutil.which(t)]
        if missing:
            tap.skip("TLS, client certificate, basic auth, bearer token, tenant header tests",
                     "%s not on PATH (Debian openssl, apache2-utils, prometheus)"
                     % ", ".join(missing))
            return
        t0 = time.time()
        try:
            self.cls = [gc.load_scenario(x) for x in bt.SCENARIOS]
            exps = [cl.expected() for cl in self.cls]
        except Exception as e:
            tap.fail("generator: clusters eu-1 and us-1", "%s: %s" % (type(e).__name__, e))
            return
        p = []
        for cl, e in zip(self.cls, exps):
            p += ["%s: %s" % (cl.name, x) for x in gc.self_check(cl, e)]
        if not tap.check("generator: clusters eu-1 and us-1 and their expected figures (%.1fs)"
                         % (time.time() - t0), p):
            return
        self.cl = self.cls[0]
        self.exp = bt.merge_expected(exps)
        with open(self.path("prices.csv"), "w", newline="") as f:
            f.write(self.cl.prices_csv())
        # one Prometheus holds both clusters (cluster label on every series);
        # the single-cluster config names each series' cluster by that label
        cfg = self.cl.run_config()
        cfg["cluster"] = {"name": "default", "label": self.cl.cluster_label}
        cfg["prices"]["file"] = self.path("prices.csv")
        qdir = os.path.join(REPO, "queries")
        if os.path.isdir(qdir):
            cfg.setdefault("collection", {})["queries_dir"] = qdir
        self.base_config = cfg
        self.wf, self.wt = self.exp["window"]["from"], self.exp["window"]["to"]

        # ---- secrets
        # a colon, an at sign and a percent sign: user:password splits at the
        # first colon, nothing is URL-decoded
        self.password = "pw:%@" + secrets.token_urlsafe(18)
        self.wrong_password = "wrong-" + secrets.token_urlsafe(18)
        self.tokens = ["tok1-" + secrets.token_urlsafe(24), "tok2-" + secrets.token_urlsafe(24),
                       "tok3-" + secrets.token_urlsafe(24)]
        self.url_password = "urlpw-" + secrets.token_urlsafe(12)
        self.header_secret = "hdr-" + secrets.token_urlsafe(18)
        for s in [self.password, self.wrong_password, self.url_password,
                  self.header_secret] + self.tokens:
            self.secrets[s] = s
        for pw in (self.password, self.wrong_password):
            b64 = base64.b64encode(("%s:%s" % (USER, pw)).encode()).decode()
            self.secrets[b64] = "base64 of %s:<%s>" % (USER, pw[:3])
        self.basic_file = self.path("secrets", "basic-auth")
        with open(self.basic_file, "w") as f:
            f.write("%s:%s\n" % (USER, self.password))
        self.wrong_file = self.path("secrets", "basic-auth-wrong")
        with open(self.wrong_file, "w") as f:
            f.write("%s:%s\n" % (USER, self.wrong_password))

        # ---- PKI, web config, TLS Prometheus
        t0 = time.time()
        try:
            self.pki = make_pki(self.path("pki"))
            hashed = bcrypt_hash(self.password)
        except Exception as e:
            tap.fail("openssl test CA, server and client certificates; htpasswd bcrypt hash", e)
            return
        tap.setup("openssl test CA, server (SAN IP:127.0.0.1) and client certificates; bcrypt "
               "hash (%.1fs)" % (time.time() - t0))
        web = self.path("web.yml")
        with open(web, "w") as f:
            f.write("tls_server_config:\n  cert_file: %s\n  key_file: %s\n"
                    "  client_ca_file: %s\n  client_auth_type: RequireAndVerifyClientCert\n"
                    "basic_auth_users:\n  %s: '%s'\n" % (
                        self.pki["server.crt"], self.pki["server.key"], self.pki["ca.crt"],
                        USER, hashed))
        if not self.start_prometheus(web):
            return
        self.tls_checks()
        self.recorder_checks()
        self.proxy_checks()
        self.config_secret_checks()
        self.secret_checks()

    def client_ctx(self):
        ctx = ssl.create_default_context(cafile=self.pki["ca.crt"])
        ctx.load_cert_chain(self.pki["client.crt"], self.pki["client.key"])
        return ctx

    def start_prometheus(self, web):
        tap = self.tap
        om = self.path("eu.om")
        bt.write_openmetrics(om, self.cls, True)
        tsdb = self.path("tsdb")
        t0 = time.time()
        rc, out = harness.backfill(om, tsdb, self.work)
        if not tap.check("promtool backfill (%.1fs)" % (time.time() - t0),
                         [] if rc == 0 else [tail(out)]):
            return False
        ctx = self.client_ctx()
        basic = "Basic " + base64.b64encode(("%s:%s" % (USER, self.password)).encode()).decode()
        self.basic_header = basic
        t0 = time.time()

        def status(path):      # /-/ready over TLS, with the client certificate and basic auth
            conn = http.client.HTTPSConnection("127.0.0.1", srv.port, context=ctx, timeout=2)
            try:
                conn.request("GET", path, headers={"Authorization": basic})
                return conn.getresponse().status
            finally:
                conn.close()
        srv = self.prom = harness.Server("prometheus-tls", self.work, probe=status)
        errors = harness.start_all([(srv, lambda port: harness.prometheus_argv(
            self.work, tsdb, port) + ["--web.config.file=" + web], "/-/ready")])
        if errors:
            tap.fail("prometheus with --web.config.file (TLS, client certificates, basic auth) "
                     "ready", errors[srv.name])
            return False
        self.url = "https://127.0.0.1:%d" % self.prom.port
        # the endpoint really demands what it should
        p = []
        plain = ssl.create_default_context(cafile=self.pki["ca.crt"])
        for what, c, hdr in (("no client certificate", plain, {"Authorization": basic}),
                             ("no basic auth", ctx, {})):
            try:
                conn = http.client.HTTPSConnection("127.0.0.1", self.prom.port, context=c,
                                                   timeout=5)
                conn.request("GET", "/api/v1/query?query=up", headers=hdr)
                st = conn.getresponse().status
                conn.close()
                if what == "no basic auth" and st != 401:
                    p.append("%s: HTTP %s, expected 401" % (what, st))
                elif what != "no basic auth":
                    p.append("%s: HTTP %s, expected a TLS failure" % (what, st))
            except (OSError, ssl.SSLError):
                if what == "no basic auth":
                    p.append("%s: connection failed" % what)
        tap.check("prometheus serves %s over TLS (%.1fs) and refuses a client without a "
                  "certificate, or without basic auth (401)" % (self.url, time.time() - t0), p)
        return True

    # ---- TLS, client certificate, basic auth
    def tls_checks(self):
        tap, url = self.tap, self.url
        full = {"url": url, "ca_file": self.pki["ca.crt"],
                "client_cert_file": self.pki["client.crt"],
                "client_key_file": self.pki["client.key"], "basic_auth_file": self.basic_file}
        cfg = self.config("tls-full.json", full)
        p, _, _ = self.collect_invoice("tls", cfg, self.path("db", "tls.db"))
        tap.check("ca_file + client certificate + basic_auth_file: collect over TLS, invoices "
                  "equal the generator's figures", p)
        self.tls_db = self.path("db", "tls.db")

        def failing(name, title, prom, want_re, retries=0):
            pr = {k: v for k, v in dict(full, retries=retries, **prom).items() if v is not None}
            cfg = self.config(name, pr)
            rc, _, err = self.engine(name, cfg, self.path("db", name + ".db"), "collect",
                                     "--from", self.wf, "--to", self.wt)
            q = []
            if rc != 4:
                q.append("exit %s, expected 4" % rc)
            if url not in err:
                q.append("stderr does not name %s" % url)
            if want_re and not re.search(want_re, err):
                q.append("stderr does not match /%s/" % want_re)
            if q:
                q.append("stderr: %s" % tail(err, 400))
            else:
                line = [l for l in err.splitlines() if url in l]
                tap.note("%s: %s" % (name, tail(line[-1] if line else err, 300)))
            tap.check(title, q)

        failing("tls-no-ca", "without ca_file (system CA bundle): exit 4, a TLS certificate "
                "error naming the URL", {"ca_file": None},
                r"(?i)(ssl|tls|certificate)")
        # Under TLS 1.3 the server refuses the missing certificate after the
        # handshake; libcurl 7.88 (and the curl CLI) then report "getpeername()
        # failed with errno 107" (CURLE_SEND_ERROR), which names neither TLS
        # nor the certificate: only the exit code and the URL are checked.
        failing("tls-no-client-cert", "without the client certificate: exit 4 naming the URL "
                "(the server requires and verifies one)",
                {"client_cert_file": None, "client_key_file": None}, None)
        failing("tls-wrong-password", "wrong password in basic_auth_file: exit 4 naming "
                "HTTP 401 and the URL", {"basic_auth_file": self.wrong_file}, r"HTTP 401\b")
        failing("tls-no-password", "no basic_auth_file: exit 4 naming HTTP 401",
                {"basic_auth_file": None}, r"HTTP 401\b")

    # ---- bearer token (rotation), tenant header
    def write_token_dir(self, d, token, gen, newline=False):
        """kubelet-style projected token: d/token -> ..data/token, ..data ->
        ..<gen>; a rotation swaps ..data atomically. The kubelet writes no
        trailing newline; a hand-made secret often has one."""
        ts = os.path.join(d, "..%s" % gen)
        os.makedirs(ts)
        with open(os.path.join(ts, "token"), "w") as f:
            f.write(token + ("\n" if newline else ""))
        tmp = os.path.join(d, "..data_tmp")
        os.symlink("..%s" % gen, tmp)
        os.replace(tmp, os.path.join(d, "..data"))
        if not os.path.lexists(os.path.join(d, "token")):
            os.symlink("..data/token", os.path.join(d, "token"))

    def header_problems(self, log, token):
        p = []
        if not log:
            return ["the recorder saw no request"]
        paths = sorted({path.split("?")[0] for path, _ in log})
        for path, hdrs in log:
            auth = [v for k, v in hdrs if k == "authorization"]
            org = [v for k, v in hdrs if k == "x-scope-orgid"]
            short = path.split("?")[0]
            if auth != ["Bearer " + token]:
                shown = ["Bearer <token %d>" % (self.tokens.index(v[7:]) + 1)
                         if v.startswith("Bearer ") and v[7:] in self.tokens else "<other>"
                         for v in auth]
                p.append("%s: Authorization %s, expected Bearer <token %d>"
                         % (short, shown, self.tokens.index(token) + 1))
            if org != [TENANT]:
                p.append("%s: X-Scope-OrgID %r, expected [%r]" % (short, org, TENANT))
        return sorted(set(p)), paths

    def recorder_checks(self):
        tap = self.tap
        self.recorder = Recorder(self.prom.port, self.client_ctx(), self.basic_header)
        tokdir = self.path("secrets", "serviceaccount")
        os.makedirs(tokdir)
        self.write_token_dir(tokdir, self.tokens[0], "2026_11_29_01")
        tokfile = os.path.join(tokdir, "token")
        prom = {"url": self.recorder.url(), "bearer_token_file": tokfile,
                "headers": {"X-Scope-OrgID": TENANT}}
        cfg = self.config("bearer.json", prom)
        self.bearer_cfg = cfg
        db = self.path("db", "bearer.db")
        # run 1: token 1
        self.recorder.expect = self.tokens[0]
        self.recorder.take()
        p, _, _ = self.collect_invoice("bearer-1", cfg, db)
        log = self.recorder.take()
        q, paths = self.header_problems(log, self.tokens[0])
        tap.check("bearer_token_file: collect through the recorder, invoices equal the "
                  "generator's figures", p)
        tap.check("bearer_token_file: every request (%d: %s) carries Authorization: Bearer "
                  "<token> and X-Scope-OrgID: %s" % (len(log), ", ".join(paths), TENANT), q)
        # check (instant queries) sends them too
        rc, out, err = self.engine("check", cfg, db, "check", "--at",
                                   gc.fmt_time(gc.parse_time(self.wt) - 60))
        log = self.recorder.take()
        q, paths = self.header_problems(log, self.tokens[0])
        if rc not in (0, 5) and not log:
            q.append("check exit %s: %s" % (rc, tail(err, 300)))
        tap.check("check: its requests (%d: %s) carry the bearer token and the tenant header "
                  "(exit %s)" % (len(log), ", ".join(paths), rc), q)
        # rotation: the file now holds token 2, the server accepts only token 2
        self.write_token_dir(tokdir, self.tokens[1], "2026_11_29_02", newline=True)
        self.recorder.expect = self.tokens[1]
        p, _, _ = self.collect_invoice("bearer-2", cfg, db)
        log = self.recorder.take()
        q, _ = self.header_problems(log, self.tokens[1])
        tap.check("bearer token rotated (..data symlink swapped between runs): the next run "
                  "re-reads the file and sends the new token (trailing newline dropped) on every "
                  "request (%d), invoices unchanged" % len(log), p + q)
        # a stale token: the server wants token 3
        self.recorder.expect = self.tokens[2]
        rc, _, err = self.engine("bearer-stale", cfg, db, "collect", "--from", self.wf,
                                 "--to", self.wt)
        self.recorder.take()
        q = []
        if rc != 4:
            q.append("exit %s, expected 4" % rc)
        if "HTTP 401" not in err or self.recorder.url() not in err:
            q.append("stderr does not name HTTP 401 and %s: %s" % (self.recorder.url(),
                                                                  tail(err, 300)))
        tap.check("a token the server refuses: exit 4 naming HTTP 401 and the URL", q)
        self.recorder.expect = self.tokens[1]
        # the token file is gone (a broken mount): a config error naming the file
        cfg_missing = self.config("bearer-missing.json", dict(
            prom, bearer_token_file=self.path("secrets", "no-such-token")))
        rc, _, err = self.engine("bearer-missing", cfg_missing, db, "collect", "--from",
                                 self.wf, "--to", self.wt)
        q = [] if rc == 3 else ["exit %s, expected 3" % rc]
        if "no-such-token" not in err:
            q.append("stderr does not name the file: %s" % tail(err, 300))
        tap.check("bearer_token_file missing: exit 3 naming the file", q)
        self.per_cluster_checks(tokfile)

    def per_cluster_checks(self, tokfile):
        """clusters[] with their own prometheus settings: eu-1 straight to the
        TLS Prometheus (client certificate, basic auth), us-1 through the
        recorder (bearer token, its own tenant); each sends only its own."""
        tap = self.tap
        lab = self.cl.cluster_label
        names = [cl.cluster_name for cl in self.cls]

        def mutate(c):
            c.pop("prometheus", None)
            c["cluster"] = {"label": lab}
            c["clusters"] = [
                {"name": names[0], "selector": '%s="%s"' % (lab, names[0]),
                 "prometheus": {"url": self.url, "ca_file": self.pki["ca.crt"],
                                "client_cert_file": self.pki["client.crt"],
                                "client_key_file": self.pki["client.key"],
                                "basic_auth_file": self.basic_file, "retries": 0}},
                {"name": names[1], "selector": '%s="%s"' % (lab, names[1]),
                 "prometheus": {"url": self.recorder.url(), "bearer_token_file": tokfile,
                                "headers": {"X-Scope-OrgID": TENANT_US}, "retries": 0}}]
        cfg = self.config("per-cluster.json", {"url": self.url}, mutate)
        self.recorder.take()
        p, _, _ = self.collect_invoice("per-cluster", cfg, self.path("db", "per-cluster.db"))
        log = self.recorder.take()
        q = []
        if not log:
            q.append("the recorder (us-1's endpoint) saw no request")
        for path, hdrs in log:
            auth = [v for k, v in hdrs if k == "authorization"]
            org = [v for k, v in hdrs if k == "x-scope-orgid"]
            query = urllib.parse.unquote_plus(path)
            if auth != ["Bearer " + self.recorder.expect]:
                q.append("a request with Authorization %s" % (
                    ["Basic <eu-1's>" if v == self.basic_header else "<other>" for v in auth]))
            if org != [TENANT_US]:
                q.append("X-Scope-OrgID %r, expected [%r]" % (org, TENANT_US))
            if '%s="%s"' % (lab, names[0]) in query or '%s="%s"' % (lab, names[1]) not in query:
                q.append("a query without us-1's selector: %s" % query.split("?")[-1][:120])
        tap.check("clusters with their own credentials: %s over TLS + client certificate + "
                  "basic auth, %s with a bearer token and tenant %s via the recorder; invoices "
                  "of both equal the generator's figures" % (names[0], names[1], TENANT_US), p)
        tap.check("clusters with their own credentials: %s's endpoint gets only its own token, "
                  "tenant and selector (%d requests), never %s's basic auth"
                  % (names[1], len(log), names[0]), sorted(set(q)))

    # ---- proxy from the environment
    def proxy_checks(self):
        tap = self.tap
        if not shutil.which("tinyproxy"):
            tap.skip("http_proxy / https_proxy / no_proxy through tinyproxy",
                     "tinyproxy not on PATH (Debian tinyproxy)")
            return
        self.proxy = Tinyproxy(self.work)
        why = self.proxy.start()
        if why:
            tap.fail("tinyproxy on 127.0.0.1", why)
            return
        purl = "http://127.0.0.1:%d" % self.proxy.port
        rec = self.recorder.url()
        tap.setup("tinyproxy listening on %s (foreground, log %s)" % (purl, self.proxy.log))

        def requests_since(mark):
            text = self.proxy.read_log()[mark:]
            return re.findall(r"Request \(file descriptor \d+\): (\S+) (\S+)", text)

        # 1. http_proxy, no no_proxy at all: plain HTTP through the proxy
        mark = len(self.proxy.read_log())
        self.recorder.take()
        p, _, _ = self.collect_invoice("proxy-http", self.bearer_cfg,
                                       self.path("db", "proxy-http.db"),
                                       env={"http_proxy": purl})
        reqs = requests_since(mark)
        log = self.recorder.take()
        via = [r for r in reqs if r[0] == "GET" and r[1].startswith(rec + "/api/v1/")]
        if not via:
            p.append("tinyproxy's log shows no GET %s/api/v1/... (%d requests logged: %s); "
                     "the recorder saw %d" % (rec, len(reqs), reqs[:2], len(log)))
        elif len(via) < len(log):
            p.append("only %d of the %d requests the recorder saw went through tinyproxy"
                     % (len(via), len(log)))
        q, _ = self.header_problems(log, self.tokens[1])
        tap.check("http_proxy=%s (no no_proxy): every request to %s goes through tinyproxy "
                  "(%d logged), headers intact, invoices as expected (libcurl does not bypass "
                  "the proxy for 127.0.0.1 by itself)" % (purl, rec, len(via)), p + q)

        # 2. https_proxy: TLS to Prometheus tunnelled with CONNECT
        full = {"url": self.url, "ca_file": self.pki["ca.crt"],
                "client_cert_file": self.pki["client.crt"],
                "client_key_file": self.pki["client.key"], "basic_auth_file": self.basic_file}
        cfg = self.config("tls-proxy.json", full)
        mark = len(self.proxy.read_log())
        p, _, _ = self.collect_invoice("proxy-https", cfg, self.path("db", "proxy-https.db"),
                                       env={"https_proxy": purl, "no_proxy": ""})
        reqs = requests_since(mark)
        target = "127.0.0.1:%d" % self.prom.port
        if not [r for r in reqs if r[0] == "CONNECT" and r[1] == target]:
            p.append("tinyproxy's log shows no CONNECT %s (logged: %s)" % (target, reqs[:3]))
        tap.check("https_proxy=%s, no_proxy=\"\": TLS with client certificate and basic auth "
                  "tunnelled through CONNECT %s, invoices as expected" % (purl, target), p)

        # 3. no_proxy=127.0.0.1 bypasses it
        mark = len(self.proxy.read_log())
        rc, _, err = self.engine("proxy-bypass", self.bearer_cfg,
                                 self.path("db", "proxy-bypass.db"), "collect", "--from",
                                 self.wf, "--to", self.wt,
                                 env={"http_proxy": purl, "no_proxy": "127.0.0.1"})
        reqs = requests_since(mark)
        p = [] if rc == 0 else ["exit %s: %s" % (rc, tail(err, 300))]
        if reqs:
            p.append("tinyproxy still logged %d requests" % len(reqs))
        tap.check("http_proxy with no_proxy=127.0.0.1: requests bypass tinyproxy", p)

        # 4. a dead proxy: the environment is honoured, so collect fails
        dead = "http://127.0.0.1:%d" % harness.free_port()
        rc, _, err = self.engine("proxy-dead", self.bearer_cfg, self.path("db", "proxy-dead.db"),
                                 "collect", "--from", self.wf, "--to", self.wt,
                                 env={"http_proxy": dead, "no_proxy": ""})
        p = [] if rc == 4 else ["exit %s, expected 4: %s" % (rc, tail(err, 300))]
        if rec not in err:
            p.append("stderr does not name %s: %s" % (rec, tail(err, 300)))
        tap.check("http_proxy pointing at a closed port: collect exits 4 naming the URL "
                  "(the proxy setting is used, not silently skipped)", p)
        self.proxy_log_text = self.proxy.read_log()

    # ---- secrets in config mistakes
    def config_secret_checks(self):
        tap = self.tap
        host = "127.0.0.1:%d" % self.prom.port
        cfg = self.config("url-credentials.json", {
            "url": "https://%s:%s@%s" % (USER, self.url_password, host)})
        rc, _, err = self.engine("url-credentials", cfg, self.path("db", "cfg.db"), "collect",
                                 "--from", self.wf, "--to", self.wt)
        p = [] if rc == 3 else ["exit %s, expected 3" % rc]
        if "prometheus.url" not in err:
            p.append("stderr does not name prometheus.url: %s" % tail(err, 300))
        tap.check("credentials in prometheus.url: config error (exit 3) naming the key", p)
        cfg = self.config("authorization-header.json", {
            "url": self.url, "headers": {"Authorization": "Bearer " + self.header_secret}})
        rc, _, err = self.engine("authorization-header", cfg, self.path("db", "cfg.db"),
                                 "collect", "--from", self.wf, "--to", self.wt)
        p = [] if rc == 3 else ["exit %s, expected 3" % rc]
        if "headers" not in err:
            p.append("stderr does not name prometheus.headers: %s" % tail(err, 300))
        tap.check("an Authorization header in prometheus.headers: config error (exit 3)", p)

    # ---- secrets never printed
    def secret_checks(self):
        p = []
        texts = list(self.outputs)
        if getattr(self, "proxy_log_text", None):
            texts.append(("tinyproxy log", self.proxy_log_text))
        for label, text in texts:
            for s, name in self.secrets.items():
                if s in text:
                    p.append("%s: %s appears in stdout/stderr" % (label, name[:12] + "..."))
        self.tap.check("no password, bearer token or base64 user:password in the stdout/stderr "
                       "of any of the %d engine runs (all --verbose), nor in the URLs tinyproxy "
                       "logged" % len(self.outputs),
                       sorted(set(p)))
        p = []
        for f in sorted(os.listdir(self.path("db"))):
            try:
                with open(self.path("db", f), "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            for s, name in self.secrets.items():
                if s.encode() in data:
                    p.append("%s holds %s" % (f, name[:12] + "..."))
        self.tap.check("no secret stored in any of the databases", sorted(set(p)))

    def cleanup(self):
        if self.proxy:
            self.proxy.stop()
        if self.recorder:
            self.recorder.close()
        if self.prom:
            self.prom.stop()


def main():
    ap = harness.arguments(__doc__)
    return harness.run_driver(Test, ap.parse_args(), harness.Tap(), "access test",
                              "gpuledger-access-")


if __name__ == "__main__":
    sys.exit(main())
