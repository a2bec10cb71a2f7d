#!/usr/bin/env python3
"""gpuledger against managed Prometheus services, natively.

Usage: python3 tests/integration/auth_test.py --bin build/gpuledger [--work DIR] [--keep]

Everything runs on 127.0.0.1: a real Prometheus backfilled with the
generated scenario tests/integration/scenarios/shared.json, and one
loopback server (authserver.py) playing the cloud: it verifies what each
provider verifies and proxies verified queries to that Prometheus.

  * Amazon Managed Service for Prometheus: a SigV4 verifier that recomputes
    each request's signature from AWS's published algorithm (Python hmac and
    hashlib), checked first against the AWS SigV4 test suite's vectors; it
    wants queries as a signed POST form, the session token signed, the
    region, service "aps", a fresh X-Amz-Date, and refuses expired
    credentials. A fake STS (AssumeRoleWithWebIdentity, XML) and an EKS Pod
    Identity endpoint issue credentials that expire after a few seconds.
  * Google Managed Service for Prometheus: a GKE metadata server issuing
    access tokens that expire after a few seconds (Metadata-Flavor: Google
    required); the frontend refuses unknown and expired tokens.
  * Azure Monitor managed Prometheus: an Entra token endpoint (client
    credentials with a jwt-bearer client_assertion from the federated token
    file, or a client secret; scope https://prometheus.monitor.azure.com/.default)
    issuing expiring tokens.
  * Grafana Cloud: basic auth, instance id and an access-policy token file.

Checks: every mode collects the scenario and invoices exactly the
generator's figures; a collection of many chunks sees the temporary
credentials renewed inside it (the issuer counts several issues, the
verifier sees several credentials, never an expired one); wrong signature,
expired session token, revoked token, expired federated token, refused web
identity, wrong Grafana token and no AWS credentials at all fail with exit 4
(3 for the configuration) and a message naming the mode and what to fix; no
secret appears in the stdout or stderr of any run, nor in a database.

Per-block AWS key files (prometheus.auth access_key_id_file,
secret_access_key_file, session_token_file) sign instead of other valid
pod-wide AWS_* keys, a rotated Secret is used by the next run (the old key
revoked), a missing or empty key file is a config error naming the key and
the path; EKS Pod Identity from the block's container_credentials_uri and
container_authorization_token_file wins over the agent's variables (here
pointing at nothing) and renews inside one collection.
"""

import json
import os
import re
import secrets
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gen"))
import gencluster as gc  # noqa: E402
import harness  # noqa: E402
import backends_test as bt  # noqa: E402  (OpenMetrics writer, invoice comparison)
import authserver as aws_  # noqa: E402

SCENARIO = os.path.join(HERE, "scenarios", "shared.json")
ENGINE_TIMEOUT = 90
REGION = "eu-west-1"
LIFETIME = 3          # seconds of life of the temporary credentials and tokens
SLOW_CHUNK = 2        # chunk_hours of the long collections (24 chunks)
QUERY_DELAY = 0.03    # seconds the cloud waits on each query of a long collection


def tail(text, n=500):
    return harness.tail(text, n)


class Test(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = None
        self.cloud = None
        self.outputs = []

    def engine(self, label, cfg, db, *args, env=None):
        rc, out, err = self.eng.run(cfg, db, *args, env=env)
        self.outputs.append((label, out + "\n" + err))
        return rc, out, err

    def config(self, name, prom, chunk_hours=24):
        cfg = json.loads(json.dumps(self.base_config))
        cfg["prometheus"] = dict({"timeout_seconds": 20, "retries": 1}, **prom)
        cfg["collection"]["chunk_hours"] = chunk_hours
        path = self.path("cfg", name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
        return path

    def env(self, **kv):
        """The engine's environment: no cloud variable of the machine leaks
        in; kv adds the test's."""
        return dict(self.clean_env, **kv)

    def collect_invoice(self, label, cfg, env):
        """collect the window then invoice: (problems, collect seconds, stderr)."""
        db = self.path("db", label + ".db")
        t0 = time.time()
        rc, _, err = self.engine(label, cfg, db, "collect", "--from", self.wf, "--to", self.wt,
                                 env=env)
        secs = time.time() - t0
        if rc != 0:
            return ["collect exit %s: %s" % (rc, tail(err))], secs, err
        rc2, out, err2 = self.engine(label, cfg, db, "invoice", "--period", self.exp["period"],
                                     "--format", "json", env=env)
        if rc2 != 0:
            return ["invoice exit %s: %s" % (rc2, tail(err2))], secs, err
        try:
            doc = json.loads(out)
        except ValueError:
            return ["invoice output is not JSON: %s" % tail(out)], secs, err
        return bt.invoice_problems(doc, self.exp), secs, err

    def failing(self, label, cfg, env, code, want):
        """A collect that must fail with exit code and a stderr matching every
        regex of want."""
        rc, _, err = self.engine(label, cfg, self.path("db", label + ".db"), "collect",
                                 "--from", self.wf, "--to", self.wt, env=env)
        p = [] if rc == code else ["exit %s, expected %s" % (rc, code)]
        for w in want:
            if not re.search(w, err):
                p.append("stderr does not match /%s/" % w)
        if p:
            p.append("stderr: %s" % tail(err, 700))
        else:
            lines = [l for l in err.splitlines() if "gpuledger:" in l] or err.splitlines()
            self.tap.note("%s: %s" % (label, tail(lines[-1] if lines else "", 700)))
        return p

    # ------------------------------------------------------------ main
    def main(self):
        tap, a = self.tap, self.args
        for d in ("cfg", "db", "secrets"):
            os.makedirs(self.path(d), exist_ok=True)
        self.bin = os.path.abspath(a.bin)
        if not (os.path.isfile(self.bin) and os.access(self.bin, os.X_OK)):
            tap.fail("engine binary present", "%s is missing or not executable" % a.bin)
            return
        self.eng = harness.Engine(self.bin, self.work, timeout=ENGINE_TIMEOUT,
                                  options=["--verbose"])
        drop = re.compile(r"^(AWS_|AZURE_|GCE_|GOOGLE_|HOME$)")
        self.clean_env = {k: v for k, v in harness.CHILD_ENV.items() if not drop.match(k)}
        self.clean_env["HOME"] = self.path("home")   # no ~/.aws of the machine
        os.makedirs(self.clean_env["HOME"], exist_ok=True)

        # the verifier itself first: AWS's published vectors
        if not tap.check("SigV4 verifier reproduces the AWS SigV4 test suite (%d vectors: %s)"
                         % (len(aws_.SUITE_VECTORS),
                            ", ".join(v["name"] for v in aws_.SUITE_VECTORS)),
                         aws_.check_suite_vectors()):
            return
        if not all(shutil.which(t) for t in ("prometheus", "promtool")):
            tap.skip("managed Prometheus modes", "prometheus or promtool not on PATH "
                     "(Debian prometheus)")
            return
        t0 = time.time()
        try:
            self.cl = gc.load_scenario(SCENARIO)
            self.exp = self.cl.expected()
            p = gc.self_check(self.cl, self.exp)
        except Exception as e:
            tap.fail("generator: scenario shared.json", "%s: %s" % (type(e).__name__, e))
            return
        if not tap.check("generator: scenario shared.json and its expected figures (%.1fs)"
                         % (time.time() - t0), p):
            return
        with open(self.path("prices.csv"), "w", newline="") as f:
            f.write(self.cl.prices_csv())
        cfg = self.cl.run_config()
        cfg["prices"]["file"] = self.path("prices.csv")
        cfg.setdefault("collection", {})["queries_dir"] = os.path.join(REPO, "queries")
        self.base_config = cfg
        self.wf, self.wt = self.exp["window"]["from"], self.exp["window"]["to"]
        if not self.start_prometheus():
            return
        self.cloud = aws_.Cloud(self.prom.port, REGION, LIFETIME)
        self.secret_files()
        self.config_checks()
        self.aws_checks()
        self.gcp_checks()
        self.azure_checks()
        self.grafana_checks()
        self.secret_checks()

    def start_prometheus(self):
        om = self.path("data.om")
        bt.write_openmetrics(om, [self.cl], True)
        t0 = time.time()
        rc, out = harness.backfill(om, self.path("tsdb"), self.work)
        if not self.tap.check("promtool backfill (%.1fs)" % (time.time() - t0),
                              [] if rc == 0 else [tail(out)]):
            return False
        self.prom = harness.Prometheus(self.work, self.path("tsdb"))
        try:
            self.prom.start()
        except RuntimeError as e:
            self.tap.fail("prometheus ready", e)
            return False
        return True

    def write_secret(self, name, value):
        path = self.path("secrets", name)
        with open(path, "w") as f:
            f.write(value + "\n")
        return path

    def secret_files(self):
        c = self.cloud
        self.web_token_file = self.write_secret("eks-token", c.web_identity_token)
        self.pod_token_file = self.write_secret("eks-pod-identity-token", c.pod_identity_token)
        self.fed_token_file = self.write_secret("azure-identity-token", c.federated_token)
        self.client_secret_file = self.write_secret("azure-client-secret", c.client_secret)
        self.grafana_file = self.write_secret("grafana-token", c.grafana_token)
        self.wrong_grafana_file = self.write_secret("grafana-token-wrong",
                                                    "glc_" + secrets.token_urlsafe(30))
        self.cloud.extra_secrets.append(open(self.wrong_grafana_file).read().strip())

    # ------------------------------------------------------------ configuration
    def config_checks(self):
        """Each example config of a managed Prometheus loads; mistakes in
        prometheus.auth are config errors (exit 3) naming the key."""
        tap = self.tap
        p = []
        for name in ("amp", "gmp", "azure", "grafana-cloud"):
            f = os.path.join(REPO, "config", "gpuledger.%s.example.json" % name)
            rc, _, err = self.engine("example-" + name, f, self.path("db", "example.db"),
                                     "prices", env=self.env())
            if rc != 0:
                p.append("%s: exit %s: %s" % (os.path.basename(f), rc, tail(err, 300)))
        tap.check("config/gpuledger.{amp,gmp,azure,grafana-cloud}.example.json load (prices: "
                  "exit 0)", p)
        url = self.cloud.url()
        cases = [
            ("a gcp key in an aws_sigv4 block", {"auth": {"type": "aws_sigv4", "metadata_url": url}},
             r'prometheus\.auth: unknown key "metadata_url"'),
            ("an unknown type", {"auth": {"type": "kerberos"}},
             r'prometheus\.auth\.type: "kerberos" is not one of: none, aws_sigv4, gcp, azure, '
             r'basic'),
            ("auth beside bearer_token_file", {"bearer_token_file": self.grafana_file,
                                              "auth": {"type": "gcp"}},
             r"prometheus\.auth: excludes prometheus\.bearer_token_file"),
            ("both Azure credentials", {"auth": {"type": "azure", "federated_token_file": "a",
                                                 "client_secret_file": "b"}},
             r"federated_token_file \(workload identity\) and client_secret_file exclude"),
            ("basic without password_file", {"auth": {"type": "basic", "username": "1"}},
             r'prometheus\.auth: type basic needs "username" and "password_file"'),
            ("an ftp STS endpoint", {"auth": {"type": "aws_sigv4", "sts_endpoint": "ftp://x"}},
             r"prometheus\.auth\.sts_endpoint: expected an http:// or https:// URL"),
            ("a region with a space", {"auth": {"type": "aws_sigv4", "region": "us east-1"}},
             r'prometheus\.auth\.region: "us east-1" is not a plain name'),
            ("access_key_id_file without secret_access_key_file",
             {"auth": {"type": "aws_sigv4", "region": REGION, "access_key_id_file": "k"}},
             r"prometheus\.auth\.secret_access_key_file: missing: per-block keys need both"),
            ("credentials files without key files",
             {"auth": {"type": "aws_sigv4", "region": REGION, "credentials": "files"}},
             r'prometheus\.auth\.access_key_id_file: missing: credentials "files" needs'),
            ("key files with credentials web_identity",
             {"auth": {"type": "aws_sigv4", "region": REGION, "credentials": "web_identity",
                       "access_key_id_file": "k", "secret_access_key_file": "s"}},
             r'prometheus\.auth: access_key_id_file, .* are credentials "files", not '
             r'"web_identity"'),
            ("an ftp container_credentials_uri",
             {"auth": {"type": "aws_sigv4", "container_credentials_uri": "ftp://x"}},
             r"prometheus\.auth\.container_credentials_uri: expected an http:// or https:// "
             r"URL"),
            ("Pod Identity keys with credentials env",
             {"auth": {"type": "aws_sigv4", "region": REGION, "credentials": "env",
                       "container_authorization_token_file": "t"}},
             r'prometheus\.auth: container_credentials_uri and .* are credentials '
             r'"pod_identity", not "env"'),
        ]
        for title, prom, want in cases:
            cfg = self.config("bad-" + re.sub(r"\W+", "-", title), dict({"url": url}, **prom))
            rc, _, err = self.engine("bad-config", cfg, self.path("db", "bad.db"), "prices",
                                     env=self.env())
            q = [] if rc == 3 else ["exit %s, expected 3" % rc]
            if not re.search(want, err):
                q.append("stderr does not match /%s/: %s" % (want, tail(err, 300)))
            tap.check("prometheus.auth config error: %s (exit 3 naming the key)" % title, q)

    # ------------------------------------------------------------ AWS
    def amp(self, **auth):
        return {"url": self.cloud.url() + aws_.AMP_PREFIX,
                "auth": dict({"type": "aws_sigv4", "region": REGION}, **auth)}

    def aws_static_keys(self, session=None, expired=False):
        key = "AKIA" + secrets.token_hex(8).upper()
        secret = secrets.token_urlsafe(30)
        self.cloud.add_aws_key(key, secret, session, time.time() - 1 if expired else None)
        return key, secret

    def aws_checks(self):
        tap, c = self.tap, self.cloud
        # 1. environment keys
        key, secret = self.aws_static_keys()
        env = self.env(AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
        cfg = self.config("amp-env", self.amp())
        c.take()
        p, secs, _ = self.collect_invoice("amp-env", cfg, env)
        log = c.take()
        p += c.amp_problems(log, want_keys={key})
        tap.check("AMP, keys from the environment: %d queries as SigV4-signed POST forms "
                  "(service aps, region %s) pass the verifier, invoices equal the generator's "
                  "figures (%.1fs)" % (len(c.amp_ok(log)), REGION, secs), p)
        # check: instant queries signed too
        rc, out, err = self.engine("amp-check", cfg, self.path("db", "amp-env.db"), "check",
                                   "--at", gc.fmt_time(gc.parse_time(self.wt) - 60), env=env)
        log = c.take()
        q = c.amp_problems(log, want_keys={key})
        if not [r for r in log if r["path"].endswith("/api/v1/query")]:
            q.append("no instant query reached the verifier")
        if rc not in (0, 5):
            q.append("check exit %s: %s" % (rc, tail(err, 300)))
        tap.check("AMP: check's instant queries are signed POST forms too (exit %s)" % rc, q)

        # 2. shared credentials file, a profile with a session token
        key2, secret2 = "ASIA" + secrets.token_hex(8).upper(), secrets.token_urlsafe(30)
        session2 = secrets.token_urlsafe(90)
        c.add_aws_key(key2, secret2, session2, None)
        cred = self.path("secrets", "aws-credentials")
        with open(cred, "w") as f:
            f.write("[default]\naws_access_key_id = AKIAWRONGPROFILE0000\n"
                    "aws_secret_access_key = nope\n\n"
                    "# the platform team's profile\n[gpuledger]\n"
                    "aws_access_key_id = %s\naws_secret_access_key = %s\n"
                    "aws_session_token = %s\n" % (key2, secret2, session2))
        cfg = self.config("amp-profile", self.amp(credentials="profile", profile="gpuledger",
                                                  credentials_file=cred))
        p, secs, _ = self.collect_invoice("amp-profile", cfg, self.env())
        log = c.take()
        p += c.amp_problems(log, want_keys={key2})
        if log and not all(r.get("session_signed") for r in c.amp_ok(log)):
            p.append("X-Amz-Security-Token not signed on every request")
        tap.check("AMP, profile gpuledger of a shared credentials file (session token sent "
                  "as a signed X-Amz-Security-Token): invoices equal the generator's figures "
                  "(%.1fs)" % secs, p)

        # 3. IRSA: web identity -> STS, credentials renewed inside one collection
        env = self.env(AWS_ROLE_ARN=aws_.ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE=self.web_token_file)
        cfg = self.config("amp-irsa", self.amp(sts_endpoint=c.url() + "/sts"), SLOW_CHUNK)
        c.sts_fail = 1   # the first STS call answers 503: tried again
        self.long_collection("AMP, IRSA web identity (AWS_ROLE_ARN + "
                             "AWS_WEB_IDENTITY_TOKEN_FILE -> STS AssumeRoleWithWebIdentity)",
                             "amp-irsa", cfg, env, "sts", c.amp_ok,
                             lambda log: c.amp_problems(log),
                             r"credential service failed, retrying service=\"STS")

        # 4. EKS Pod Identity
        env = self.env(AWS_CONTAINER_CREDENTIALS_FULL_URI=c.url() + "/pod-identity/v1/credentials",
                       AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=self.pod_token_file)
        cfg = self.config("amp-pod", self.amp(), SLOW_CHUNK)
        self.long_collection("AMP, EKS Pod Identity (AWS_CONTAINER_CREDENTIALS_FULL_URI + "
                             "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE)", "amp-pod", cfg, env,
                             "pod", c.amp_ok, lambda log: c.amp_problems(log))

        self.aws_file_checks()

        # failures
        key3, _ = self.aws_static_keys()
        cfg = self.config("amp-bad-signature", self.amp())
        tap.check("AMP, a wrong secret access key: exit 4 naming aws_sigv4, the refused "
                  "signature and what to check",
                  self.failing("amp-bad-signature", cfg,
                               self.env(AWS_ACCESS_KEY_ID=key3,
                                        AWS_SECRET_ACCESS_KEY=secrets.token_urlsafe(30)), 4,
                               [r"HTTP 403", r"aws_sigv4", r"signature was refused",
                                r"secret access key", REGION]))
        session4 = secrets.token_urlsafe(90)
        key4, secret4 = self.aws_static_keys(session=session4, expired=True)
        tap.check("AMP, an expired session token from the environment: exit 4 naming aws_sigv4 "
                  "and that AWS_SESSION_TOKEN must be renewed",
                  self.failing("amp-expired", cfg,
                               self.env(AWS_ACCESS_KEY_ID=key4, AWS_SECRET_ACCESS_KEY=secret4,
                                        AWS_SESSION_TOKEN=session4), 4,
                               [r"HTTP 403", r"aws_sigv4", r"expired", r"AWS_SESSION_TOKEN"]))
        wrong = self.write_secret("eks-token-stale", aws_.fake_jwt("stale"))
        c.extra_secrets.append(open(wrong).read().strip())
        cfg = self.config("amp-sts-refused", self.amp(sts_endpoint=c.url() + "/sts"))
        tap.check("AMP, STS refuses the web identity token: exit 4 naming IRSA, "
                  "InvalidIdentityToken and the role's trust policy",
                  self.failing("amp-sts-refused", cfg,
                               self.env(AWS_ROLE_ARN=aws_.ROLE_ARN,
                                        AWS_WEB_IDENTITY_TOKEN_FILE=wrong), 4,
                               [r"aws_sigv4 \(IRSA web identity", r"InvalidIdentityToken",
                                r"trust policy"]))
        cfg = self.config("amp-none", self.amp())
        tap.check("AMP without any AWS credentials: exit 3 naming the variables to set",
                  self.failing("amp-none", cfg, self.env(), 3,
                               [r"aws_sigv4", r"AWS_ACCESS_KEY_ID", r"AWS_WEB_IDENTITY_TOKEN_FILE",
                                r"AWS_CONTAINER_CREDENTIALS_FULL_URI"]))
        c.take()

    def aws_file_checks(self):
        """Per-block key files and Pod Identity config keys."""
        tap, c = self.tap, self.cloud
        kdir = self.path("secrets", "amp-keys")
        os.makedirs(kdir, exist_ok=True)
        files = {n: os.path.join(kdir, n) for n in ("access-key-id", "secret-access-key",
                                                     "session-token")}

        def put(key, secret, session):
            # as the kubelet updates a Secret volume: whole files put in place
            for n, val in (("access-key-id", key), ("secret-access-key", secret),
                           ("session-token", session)):
                with open(files[n] + ".tmp", "w") as f:
                    f.write(val + "\n")
                os.replace(files[n] + ".tmp", files[n])

        def keys(**over):
            return self.amp(**dict({"access_key_id_file": files["access-key-id"],
                                    "secret_access_key_file": files["secret-access-key"],
                                    "session_token_file": files["session-token"]}, **over))
        session5 = secrets.token_urlsafe(90)
        key5, secret5 = self.aws_static_keys(session=session5)
        put(key5, secret5, session5)
        env_key, env_secret = self.aws_static_keys()   # valid, but not this block's
        env = self.env(AWS_ACCESS_KEY_ID=env_key, AWS_SECRET_ACCESS_KEY=env_secret)
        cfg = self.config("amp-files", keys())
        c.take()
        p, secs, _ = self.collect_invoice("amp-files", cfg, env)
        log = c.take()
        p += c.amp_problems(log, want_keys={key5})
        if log and not all(r.get("session_signed") for r in c.amp_ok(log)):
            p.append("X-Amz-Security-Token (session_token_file) not signed on every request")
        tap.check("AMP, per-block key files (access_key_id_file, secret_access_key_file, "
                  "session_token_file) sign instead of the pod-wide AWS_ACCESS_KEY_ID: %d "
                  "queries verified, invoices equal the generator's figures (%.1fs)"
                  % (len(c.amp_ok(log)), secs), p)
        # the Secret rotated, the old key revoked: the next run signs with the new one
        session6 = secrets.token_urlsafe(90)
        key6, secret6 = self.aws_static_keys(session=session6)
        put(key6, secret6, session6)
        c.drop_aws_key(key5)
        p, secs, _ = self.collect_invoice("amp-files-rotated", cfg, env)
        log = c.take()
        p += c.amp_problems(log, want_keys={key6})
        tap.check("AMP, the key files rotated and the old key revoked: the next collection "
                  "signs with the new keys (%d queries verified)" % len(c.amp_ok(log)), p)
        # missing / empty key files: config errors naming the key and the path
        empty = self.write_secret("amp-empty-session", "")
        for title, over, want in [
                ("a missing secret_access_key_file",
                 {"secret_access_key_file": os.path.join(kdir, "gone")},
                 [r"prometheus\.auth\.secret_access_key_file: " + re.escape(
                     os.path.join(kdir, "gone")) + r": cannot open"]),
                ("an empty session_token_file", {"session_token_file": empty},
                 [re.escape(empty) + r": prometheus\.auth\.session_token_file is empty"])]:
            cfg = self.config("amp-files-bad", keys(**over))
            tap.check("AMP, %s: exit 3 naming the key and the path" % title,
                      self.failing("amp-files-bad", cfg, env, 3, want))
        c.take()

        # EKS Pod Identity from the block's keys; the agent's variables point nowhere
        dead = "http://127.0.0.1:%d/v1/credentials" % harness.free_port()
        env = self.env(AWS_CONTAINER_CREDENTIALS_FULL_URI=dead,
                       AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=os.path.join(kdir, "gone"))
        pod = {"credentials": "pod_identity",
               "container_credentials_uri": c.url() + "/pod-identity/v1/credentials",
               "container_authorization_token_file": self.pod_token_file}
        cfg = self.config("amp-pod-keys", self.amp(**pod), SLOW_CHUNK)
        self.long_collection("AMP, EKS Pod Identity from prometheus.auth."
                             "container_credentials_uri and container_authorization_token_file "
                             "(the agent's variables point nowhere)", "amp-pod-keys", cfg, env,
                             "pod", c.amp_ok, lambda log: c.amp_problems(log))
        cfg = self.config("amp-pod-keys-bad", self.amp(**dict(
            pod, container_authorization_token_file=os.path.join(kdir, "no-token"))))
        tap.check("AMP, EKS Pod Identity with a missing container_authorization_token_file: "
                  "exit 3 naming the key and the path",
                  self.failing("amp-pod-keys-bad", cfg, env, 3, [
                      r"prometheus\.auth\.container_authorization_token_file \(EKS Pod "
                      r"Identity token\): " + re.escape(os.path.join(kdir, "no-token"))]))
        c.take()

    def long_collection(self, title, label, cfg, env, issuer, ok_of, problems_of,
                        stderr_re=None):
        """One collection of many chunks through the cloud, its queries slowed a
        little: the issuer must issue several times inside it, the verifier
        see several credentials and no expired or refused one."""
        c = self.cloud
        c.take()
        c.delay = QUERY_DELAY
        n0 = c.issued(issuer)
        try:
            p, secs, err = self.collect_invoice(label, cfg, env)
        finally:
            c.delay = 0
        log = c.take()
        issued = c.issued(issuer) - n0
        creds = sorted({r["cred"] for r in ok_of(log)})
        p += problems_of(log)
        if stderr_re and not re.search(stderr_re, err):
            p.append("stderr does not match /%s/" % stderr_re)
        if issued < 2 or len(creds) < 2:
            p.append("%d credentials issued and %d used during one collection of %.1fs: "
                     "expected a renewal inside it (lifetime %ds)"
                     % (issued, len(creds), secs, LIFETIME))
        if stderr_re:
            title += " (STS answering 503 once: tried again)"
        self.tap.check("%s: one collection of %d chunks (%.1fs, %d queries) renews the "
                       "%ds credentials %d times inside it, every query verified, invoices "
                       "equal the generator's figures" % (title, 48 // SLOW_CHUNK, secs,
                                                         len(ok_of(log)), LIFETIME,
                                                         max(issued - 1, 0)), p)

    # ------------------------------------------------------------ GCP
    def gcp_checks(self):
        tap, c = self.tap, self.cloud
        gmp = {"url": c.url() + aws_.GMP_PREFIX,
               "auth": {"type": "gcp", "metadata_url": c.url() + "/metadata"}}
        cfg = self.config("gmp", gmp, SLOW_CHUNK)
        self.long_collection("GMP, GKE metadata server (Workload Identity)", "gmp", cfg,
                             self.env(), "gcp", lambda log: c.bearer_ok(log, "gmp"),
                             lambda log: c.bearer_problems(log, "gmp"))
        # GCE_METADATA_HOST, as the Google libraries read it; a revoked token
        c.revoke_gcp = True
        cfg = self.config("gmp-revoked", {"url": gmp["url"], "auth": {"type": "gcp"}})
        host = c.url()[len("http://"):] + "/metadata"
        tap.check("GMP, the frontend refuses the metadata server's token (GCE_METADATA_HOST): "
                  "exit 4 naming gcp and Workload Identity",
                  self.failing("gmp-revoked", cfg, self.env(GCE_METADATA_HOST=host), 4,
                               [r"HTTP 401", r"prometheus.auth gcp", r"Workload Identity"]))
        c.revoke_gcp = False
        c.take()

    # ------------------------------------------------------------ Azure
    def azure_checks(self):
        tap, c = self.tap, self.cloud
        url = c.url() + aws_.AZURE_PREFIX
        env = self.env(AZURE_CLIENT_ID=aws_.AZURE_CLIENT, AZURE_TENANT_ID=aws_.AZURE_TENANT,
                       AZURE_FEDERATED_TOKEN_FILE=self.fed_token_file,
                       AZURE_AUTHORITY_HOST=c.url() + "/entra/")
        cfg = self.config("azure-wi", {"url": url, "auth": {"type": "azure"}}, SLOW_CHUNK)
        self.long_collection("Azure, AKS workload identity (AZURE_FEDERATED_TOKEN_FILE -> "
                             "client_assertion)", "azure-wi", cfg, env, "azure-fed",
                             lambda log: c.bearer_ok(log, "azure"),
                             lambda log: c.bearer_problems(log, "azure"))
        cfg = self.config("azure-secret", {"url": url, "auth": {
            "type": "azure", "tenant_id": aws_.AZURE_TENANT, "client_id": aws_.AZURE_CLIENT,
            "client_secret_file": self.client_secret_file,
            "authority": c.url() + "/entra"}})
        c.take()
        p, secs, _ = self.collect_invoice("azure-secret", cfg, self.env())
        log = c.take()
        p += c.bearer_problems(log, "azure")
        if not c.bearer_ok(log, "azure"):
            p.append("no verified query")
        tap.check("Azure, a client secret file: invoices equal the generator's figures (%.1fs)"
                  % secs, p)
        stale = self.write_secret("azure-identity-token-old", aws_.fake_jwt("expired"))
        c.extra_secrets.append(open(stale).read().strip())
        tap.check("Azure, an expired federated token (AADSTS700024): exit 4 naming azure "
                  "workload identity and that the token file must be the projected one",
                  self.failing("azure-expired", self.config("azure-expired", {
                      "url": url, "auth": {"type": "azure"}}),
                               dict(env, AZURE_FEDERATED_TOKEN_FILE=stale), 4,
                               [r"prometheus.auth azure \(workload identity", r"AADSTS700024",
                                r"federated token has expired"]))
        c.take()

    # ------------------------------------------------------------ Grafana Cloud
    def grafana_checks(self):
        tap, c = self.tap, self.cloud
        url = c.url() + aws_.GRAFANA_PREFIX

        def prom(f):
            return {"url": url, "auth": {"type": "basic", "username": aws_.GRAFANA_USER,
                                         "password_file": f}}
        cfg = self.config("grafana", prom(self.grafana_file))
        c.take()
        p, secs, _ = self.collect_invoice("grafana", cfg, self.env())
        log = c.take()
        p += c.bearer_problems(log, "grafana")
        if not c.bearer_ok(log, "grafana"):
            p.append("no verified query")
        tap.check("Grafana Cloud, basic auth with instance id %s and an access-policy token "
                  "file: %d queries verified, invoices equal the generator's figures (%.1fs)"
                  % (aws_.GRAFANA_USER, len(c.bearer_ok(log, "grafana")), secs), p)
        cfg = self.config("grafana-wrong", prom(self.wrong_grafana_file))
        tap.check("Grafana Cloud, a wrong token: exit 4 naming basic auth and the token file",
                  self.failing("grafana-wrong", cfg, self.env(), 4,
                               [r"HTTP 401", r"prometheus.auth basic", r"password_file",
                                r"metrics:read"]))
        c.take()

    # ------------------------------------------------------------ secrets
    def secret_checks(self):
        found = []
        sec = self.cloud.all_secrets()
        for label, text in self.outputs:
            for s in sec:
                if s in text:
                    found.append("%s: %s... appears in stdout/stderr" % (label, s[:6]))
        self.tap.check("no secret (%d: secret keys, session tokens, web identity and federated "
                       "tokens, access tokens, client secret, Grafana tokens) in the stdout or "
                       "stderr of the %d engine runs (--verbose)" % (len(sec), len(self.outputs)),
                       sorted(set(found)))
        found = []
        for f in sorted(os.listdir(self.path("db"))):
            with open(self.path("db", f), "rb") as fh:
                data = fh.read()
            for s in sec:
                if s.encode() in data:
                    found.append("%s holds %s..." % (f, s[:6]))
        self.tap.check("no secret stored in any database", sorted(set(found)))

    def cleanup(self):
        if self.cloud:
            self.cloud.close()
        if self.prom:
            self.prom.stop()


def main():
    ap = harness.arguments(__doc__)
    return harness.run_driver(Test, ap.parse_args(), harness.Tap(), "auth test",
                              "gpuledger-auth-")


if __name__ == "__main__":
    sys.exit(main())
