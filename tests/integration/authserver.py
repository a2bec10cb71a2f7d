"""The cloud side of tests/integration/auth_test.py (stdlib only): one
HTTP server on 127.0.0.1 (a thread) that verifies what each managed
Prometheus verifies, proxies verified queries to a real Prometheus, and
issues expiring credentials like the providers' credential services.

Routes (the prefixes stand for the real hosts):
  AMP_PREFIX/api/v1/...     Amazon Managed Service for Prometheus: SigV4
                            verified here (sigv4_sign, AWS's algorithm)
  /sts                      STS AssumeRoleWithWebIdentity (XML answer)
  /pod-identity/v1/credentials   EKS Pod Identity agent
  /metadata/computeMetadata/v1/instance/service-accounts/default/token
                            GKE metadata server
  GMP_PREFIX/api/v1/...     Google Managed Service for Prometheus frontend
  /entra/TENANT/oauth2/v2.0/token   Microsoft Entra token endpoint
  AZURE_PREFIX/api/v1/...   Azure Monitor workspace query endpoint
  GRAFANA_PREFIX/api/v1/... Grafana Cloud Prometheus (basic auth)

Each request to a query route is logged as a dict: route, path, method,
cred (the access key id, token or user it carried), ok, why (the refusal),
and for SigV4 whether the session token and Content-Type were signed.
"""

import base64
import calendar
import hashlib
import hmac
import http.client
import json
import secrets
import threading
import time
import urllib.parse

import harness

AMP_PREFIX = "/workspaces/ws-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
GMP_PREFIX = "/v1/projects/gpuledger-test/location/global/prometheus"
AZURE_PREFIX = "/azure-monitor-workspace"
GRAFANA_PREFIX = "/api/prom"
ROLE_ARN = "arn:aws:iam::123456789012:role/gpuledger-amp-query"
AZURE_TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
AZURE_CLIENT = "0c3e6e42-5d2b-4d5e-9a1c-7f3b2a1d0e9f"
AZURE_SCOPE = "https://prometheus.monitor.azure.com/.default"
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
GRAFANA_USER = "1234567"
MAX_SKEW = 300  # seconds an X-Amz-Date may differ from now (AWS allows 15 min)


# ---------------------------------------------------------------- SigV4

def _quote(s):
    return urllib.parse.quote(s, safe="-_.~")


def canonical_uri(raw_path):
    """Each segment of the path as sent, URI-encoded again (every service but
    S3 signs the path encoded twice)."""
    return "/".join(_quote(seg) for seg in (raw_path or "/").split("/"))


def canonical_query(raw_query):
    pairs = []
    for part in raw_query.split("&") if raw_query else []:
        k, _, v = part.partition("=")
        pairs.append((_quote(urllib.parse.unquote(k)), _quote(urllib.parse.unquote(v))))
    return "&".join("%s=%s" % kv for kv in sorted(pairs))


def sigv4_sign(method, raw_path, raw_query, headers, signed, body, amz_date, region, service,
               secret):
    """AWS Signature Version 4 (the published algorithm: canonical request,
    string to sign, HMAC-SHA256 key derivation). headers: [(name, value)] as
    received; signed: the lower-case names to sign. Returns (canonical
    request, string to sign, signature hex)."""
    values = {}
    for k, v in headers:
        values.setdefault(k.lower(), []).append(" ".join(v.split()))
    canon_headers = "".join("%s:%s\n" % (n, ",".join(values.get(n, []))) for n in signed)
    creq = "\n".join([method, canonical_uri(raw_path), canonical_query(raw_query), canon_headers,
                      ";".join(signed), hashlib.sha256(body).hexdigest()])
    scope = "%s/%s/%s/aws4_request" % (amz_date[:8], region, service)
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])

    def h(key, msg):
        return hmac.new(key, msg.encode(), hashlib.sha256).digest()
    key = h(h(h(h(("AWS4" + secret).encode(), amz_date[:8]), region), service), "aws4_request")
    return creq, sts, hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()


# The AWS Signature Version 4 test suite (AWS General Reference, "Signature
# Version 4 test suite", aws-sig-v4-test-suite; the same files are carried in
# aws/aws-sdk-js-v3 packages/signature-v4/src/suite.fixture.ts). Credentials
# AKIDEXAMPLE / wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY, region us-east-1,
# service "service", 2015-08-30T12:36:00Z.
SUITE_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SUITE_DATE = "20150830T123600Z"
SUITE_TOKEN = ("AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwA"
               "eMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8p"
               "hUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKw"
               "T38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJab"
               "IQwj2ICCR/oLxBA==")
_HOST = [("Host", "example.amazonaws.com"), ("X-Amz-Date", SUITE_DATE)]
SUITE_VECTORS = [
    {"name": "get-vanilla", "method": "GET", "path": "/", "query": "", "headers": _HOST,
     "body": b"",
     "creq": "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
             "host;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "signature": "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
    {"name": "get-vanilla-query-order-key-case", "method": "GET", "path": "/",
     "query": "Param2=value2&Param1=value1", "headers": _HOST, "body": b"",
     "signature": "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
    {"name": "get-header-value-trim", "method": "GET", "path": "/", "query": "",
     "headers": _HOST + [("My-Header1", " value1"), ("My-Header2", '"a   b   c"')],
     "body": b"",
     "signature": "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
    {"name": "post-header-key-sort", "method": "POST", "path": "/", "query": "",
     "headers": _HOST + [("My-Header1", "value1")], "body": b"",
     "signature": "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"},
    {"name": "post-x-www-form-urlencoded", "method": "POST", "path": "/", "query": "",
     "headers": [("Content-Type", "application/x-www-form-urlencoded")] + _HOST,
     "body": b"Param1=value1",
     "signature": "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"},
    {"name": "post-sts-token/post-sts-header-before", "method": "POST", "path": "/",
     "query": "", "headers": _HOST + [("X-Amz-Security-Token", SUITE_TOKEN)], "body": b"",
     "sts_hash": "c237e1b440d4c63c32ca95b5b99481081cb7b13c7e40434868e71567c1a882f6",
     "signature": "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"},
]


def check_suite_vectors():
    """Problems of sigv4_sign against SUITE_VECTORS (empty: it signs as AWS does)."""
    p = []
    for v in SUITE_VECTORS:
        signed = sorted({k.lower() for k, _ in v["headers"]})
        creq, sts, sig = sigv4_sign(v["method"], v["path"], v["query"], v["headers"], signed,
                                    v["body"], SUITE_DATE, "us-east-1", "service", SUITE_SECRET)
        if sig != v["signature"]:
            p.append("%s: signature %s, the suite's %s" % (v["name"], sig[:16], v["signature"][:16]))
        if "creq" in v and creq != v["creq"]:
            p.append("%s: canonical request %r" % (v["name"], creq))
        if "sts_hash" in v and sts.split("\n")[-1] != v["sts_hash"]:
            p.append("%s: string to sign %r" % (v["name"], sts))
    return p


_AUTHZ = None


def parse_authorization(value):
    """(key id, date, region, service, signed headers, signature) or None."""
    import re
    global _AUTHZ
    if _AUTHZ is None:
        _AUTHZ = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/\s]+)/(\d{8})/([^/\s]+)/"
                            r"([^/\s]+)/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?"
                            r"Signature=([0-9a-f]{64})$")
    m = _AUTHZ.match(value or "")
    return m.groups() if m else None


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def fake_jwt(sub):
    """A token shaped like a Kubernetes service-account JWT (not signed by
    anything: the fake services compare it byte for byte)."""
    def b64(d):
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")
    return "%s.%s.%s" % (b64({"alg": "RS256", "kid": "gpuledger-test"}),
                         b64({"sub": sub, "aud": ["sts.amazonaws.com"],
                              "nonce": secrets.token_hex(16)}),
                         secrets.token_urlsafe(64))


# ---------------------------------------------------------------- the cloud

class Cloud(harness.LoopbackServer):
    protocol = "HTTP/1.1"

    def __init__(self, prom_port, region, lifetime=6):
        self.prom_port = prom_port
        self.region = region
        self.lifetime = lifetime
        self.lock = threading.Lock()
        self.log = []
        self.delay = 0
        self.revoke_gcp = False
        self.sts_fail = 0           # STS calls still to answer 503
        self.aws_keys = {}          # key id -> (secret, session or None, expiry or None)
        self.tokens = {"gmp": {}, "azure": {}}   # token -> expiry
        self.counts = {}
        self.web_identity_token = fake_jwt("system:serviceaccount:gpu-platform:gpuledger")
        self.pod_identity_token = fake_jwt("eks-pod-identity")
        self.federated_token = fake_jwt("system:serviceaccount:gpu-platform:gpuledger")
        self.client_secret = "Q8~" + secrets.token_urlsafe(30)
        self.grafana_token = "glc_" + base64.b64encode(json.dumps(
            {"o": "1", "n": "gpuledger-read", "k": secrets.token_hex(20)}).encode()).decode()
        self.extra_secrets = []
        super().__init__(post=True)

    # ---- bookkeeping
    def take(self):
        with self.lock:
            out, self.log = self.log, []
        return out

    def issued(self, what):
        with self.lock:
            return self.counts.get(what, 0)

    def _count(self, what):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def add_aws_key(self, key, secret, session, expiry):
        with self.lock:
            self.aws_keys[key] = (secret, session, expiry)

    def drop_aws_key(self, key):
        """Revokes key (its secret stays among all_secrets for the leak checks)."""
        with self.lock:
            secret, session, _ = self.aws_keys.pop(key)
            self.extra_secrets += [secret] + ([session] if session else [])

    def all_secrets(self):
        with self.lock:
            out = [self.web_identity_token, self.pod_identity_token, self.federated_token,
                   self.client_secret, self.grafana_token] + list(self.extra_secrets)
            for secret, session, _ in self.aws_keys.values():
                out.append(secret)
                if session:
                    out.append(session)
            for toks in self.tokens.values():
                out += list(toks)
        return out

    def _record(self, **kv):
        with self.lock:
            self.log.append(kv)

    # ---- checks over a log
    def amp_ok(self, log):
        return [r for r in log if r["route"] == "amp" and r["ok"]]

    def amp_problems(self, log, want_keys=None):
        amp = [r for r in log if r["route"] == "amp"]
        if not amp:
            return ["the SigV4 verifier saw no request"]
        p = []
        for r in amp:
            if not r["ok"]:
                p.append("refused %s %s: %s" % (r["method"], r["path"], r["why"]))
            elif r["method"] != "POST" or not r["form"]:
                p.append("%s %s: not a POST form body" % (r["method"], r["path"]))
            elif not r["ctype_signed"]:
                p.append("%s: Content-Type not among the signed headers" % r["path"])
            if want_keys is not None and r["cred"] not in want_keys:
                p.append("signed with access key %s, not the configured one" % r["cred"])
        return sorted(set(p))

    def bearer_ok(self, log, route):
        return [r for r in log if r["route"] == route and r["ok"]]

    def bearer_problems(self, log, route):
        rs = [r for r in log if r["route"] == route]
        if not rs:
            return ["the %s frontend saw no request" % route]
        return sorted({"refused %s: %s" % (r["path"], r["why"]) for r in rs if not r["ok"]})

    # ---- HTTP
    def handle(self, h, body):
        path, _, query = h.path.partition("?")
        try:
            if path.startswith(AMP_PREFIX + "/"):
                self.amp(h, path, query, body)
            elif path == "/sts" or path == "/sts/":
                self.sts(h, body)
            elif path == "/pod-identity/v1/credentials":
                self.pod_identity(h)
            elif path == "/metadata/computeMetadata/v1/instance/service-accounts/default/token":
                self.metadata(h)
            elif path.startswith(GMP_PREFIX + "/"):
                self.bearer(h, "gmp", path, query, body)
            elif path.startswith("/entra/"):
                self.entra(h, path, body)
            elif path.startswith(AZURE_PREFIX + "/"):
                self.bearer(h, "azure", path, query, body)
            elif path.startswith(GRAFANA_PREFIX + "/"):
                self.basic(h, path, query, body)
            else:
                self.reply(h, 404, b"no such route\n", "text/plain")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def forward(self, h, prefix, path, query, body):
        """The query to the real Prometheus, its answer to the client."""
        if self.delay:
            time.sleep(self.delay)
        target = path[len(prefix):] + ("?" + query if query else "")
        conn = http.client.HTTPConnection("127.0.0.1", self.prom_port, timeout=60)
        try:
            hdrs = {"Accept-Encoding": "identity"}
            if h.command == "POST":
                hdrs["Content-Type"] = h.headers.get("Content-Type", "")
            conn.request(h.command, target, body=body if h.command == "POST" else None,
                         headers=hdrs)
            r = conn.getresponse()
            status, data = r.status, r.read()
            ctype = r.getheader("Content-Type", "application/json")
        except Exception as e:
            status, data, ctype = 502, ("upstream: %s" % e).encode(), "text/plain"
        finally:
            conn.close()
        self.reply(h, status, data, ctype)

    def amp(self, h, path, query, body):
        """What AMP (API Gateway's SigV4 check) verifies."""
        ctype = h.headers.get("Content-Type", "")
        rec = {"route": "amp", "path": path[len(AMP_PREFIX):], "method": h.command,
               "form": ctype.split(";")[0].strip() == "application/x-www-form-urlencoded",
               "cred": None, "ok": False, "why": "", "session_signed": False,
               "ctype_signed": False}

        def refuse(why, msg):
            rec["why"] = why
            self._record(**rec)
            self.reply(h, 403, json.dumps({"message": msg}).encode())

        a = parse_authorization(h.headers.get("Authorization"))
        if not a:
            return refuse("no SigV4 Authorization header", "Missing Authentication Token")
        key, day, region, service, signed_s, sig = a
        rec["cred"] = key
        signed = signed_s.split(";")
        amz_date = h.headers.get("X-Amz-Date", "")
        try:
            t = calendar.timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
        except ValueError:
            return refuse("X-Amz-Date %r" % amz_date, "Missing or invalid X-Amz-Date")
        if abs(time.time() - t) > MAX_SKEW:
            return refuse("X-Amz-Date %s is off" % amz_date, "Signature expired")
        if day != amz_date[:8] or region != self.region or service != "aps":
            return refuse("scope %s/%s/%s" % (day, region, service),
                          "Credential should be scoped to a valid region and service aps")
        if signed != sorted(signed) or "host" not in signed or "x-amz-date" not in signed:
            return refuse("SignedHeaders %s" % signed_s,
                          "Signed headers must include host and x-amz-date, sorted")
        if [k for k in h.headers.keys() if k.lower().startswith("x-amz-")
                and k.lower() not in signed]:
            return refuse("an x-amz-* header not signed", "x-amz-* headers must be signed")
        with self.lock:
            entry = self.aws_keys.get(key)
        token = h.headers.get("X-Amz-Security-Token")
        if not entry or (entry[1] or None) != token:
            return refuse("unknown access key or session token",
                          "The security token included in the request is invalid.")
        secret, session, expiry = entry
        rec["session_signed"] = bool(session) and "x-amz-security-token" in signed
        rec["ctype_signed"] = "content-type" in signed
        _, _, want = sigv4_sign(h.command, path, query, list(h.headers.items()), signed, body,
                                amz_date, region, service, secret)
        if not hmac.compare_digest(want, sig):
            return refuse("signature mismatch",
                          "The request signature we calculated does not match the signature "
                          "you provided. Check your AWS Secret Access Key and signing method. "
                          "Consult the service documentation for details.")
        if expiry is not None and time.time() >= expiry:
            return refuse("expired credentials (%.1fs ago)" % (time.time() - expiry),
                          "The security token included in the request is expired")
        rec["ok"] = True
        self._record(**rec)
        self.forward(h, AMP_PREFIX, path, query, body)

    def _new_aws(self, what):
        key = "ASIA" + secrets.token_hex(8).upper()
        secret = secrets.token_urlsafe(30)
        session = "IQoJb3JpZ2luX2Vj" + secrets.token_urlsafe(200)
        expiry = int(time.time()) + self.lifetime
        self.add_aws_key(key, secret, session, expiry)
        self._count(what)
        return key, secret, session, expiry

    def sts(self, h, body):
        f = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode(), keep_blank_values=True)
             .items()}

        def error(status, code, msg):
            doc = ('<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error>'
                   '<Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error>'
                   '<RequestId>%s</RequestId></ErrorResponse>' % (code, msg, secrets.token_hex(8)))
            self.reply(h, status, doc.encode(), "text/xml")
        with self.lock:
            fail, self.sts_fail = self.sts_fail > 0, max(self.sts_fail - 1, 0)
        if fail:
            return error(503, "ServiceUnavailable", "Service is unable to handle request.")
        if h.command != "POST" or f.get("Action") != "AssumeRoleWithWebIdentity" or \
                f.get("Version") != "2011-06-15" or not f.get("RoleSessionName"):
            return error(400, "InvalidAction", "Could not find operation for this request")
        if f.get("RoleArn") != ROLE_ARN:
            return error(403, "AccessDenied", "Not authorized to perform "
                         "sts:AssumeRoleWithWebIdentity")
        if f.get("WebIdentityToken") != self.web_identity_token:
            return error(400, "InvalidIdentityToken", "Couldn't retrieve verification key from "
                         "your identity provider, please reference AssumeRoleWithWebIdentity "
                         "documentation for requirements")
        key, secret, session, expiry = self._new_aws("sts")
        doc = ('<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/'
               '2011-06-15/">\n  <AssumeRoleWithWebIdentityResult>\n'
               '    <SubjectFromWebIdentityToken>system:serviceaccount:gpu-platform:gpuledger'
               '</SubjectFromWebIdentityToken>\n    <AssumedRoleUser>\n      <Arn>arn:aws:sts::'
               '123456789012:assumed-role/gpuledger-amp-query/%s</Arn>\n'
               '      <AssumedRoleId>AROA0000:%s</AssumedRoleId>\n    </AssumedRoleUser>\n'
               '    <Credentials>\n      <SessionToken>%s</SessionToken>\n'
               '      <SecretAccessKey>%s</SecretAccessKey>\n'
               '      <Expiration>%s</Expiration>\n      <AccessKeyId>%s</AccessKeyId>\n'
               '    </Credentials>\n    <Audience>sts.amazonaws.com</Audience>\n'
               '  </AssumeRoleWithWebIdentityResult>\n  <ResponseMetadata>\n'
               '    <RequestId>%s</RequestId>\n  </ResponseMetadata>\n'
               '</AssumeRoleWithWebIdentityResponse>\n'
               % (f["RoleSessionName"], f["RoleSessionName"], session, secret, iso(expiry), key,
                  secrets.token_hex(8)))
        self.reply(h, 200, doc.encode(), "text/xml")

    def pod_identity(self, h):
        if h.headers.get("Authorization") != self.pod_identity_token:
            return self.reply(h, 401, json.dumps({"code": "AccessDeniedException", "message":
                                                  "invalid token"}).encode())
        key, secret, session, expiry = self._new_aws("pod")
        self.reply(h, 200, json.dumps({"AccessKeyId": key, "SecretAccessKey": secret,
                                       "Token": session, "AccountId": "123456789012",
                                       "Expiration": iso(expiry)}).encode())

    def metadata(self, h):
        if h.headers.get("Metadata-Flavor") != "Google":
            return self.reply(h, 403, b"Missing required header \"Metadata-Flavor\": \"Google\"",
                              "text/plain")
        tok = "ya29.c." + secrets.token_urlsafe(120)
        with self.lock:
            self.tokens["gmp"][tok] = time.time() + (0 if self.revoke_gcp else self.lifetime)
        self._count("gcp")
        self.reply(h, 200, json.dumps({"access_token": tok, "expires_in":
                                       3599 if self.revoke_gcp else self.lifetime,
                                       "token_type": "Bearer"}).encode())

    def entra(self, h, path, body):
        f = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode(), keep_blank_values=True)
             .items()}

        def error(code, n, desc):
            self.reply(h, 400 if code != "invalid_client" else 401, json.dumps(
                {"error": code, "error_description": "AADSTS%d: %s Trace ID: %s" % (
                    n, desc, secrets.token_hex(8)), "error_codes": [n]}).encode())
        if h.command != "POST" or path != "/entra/%s/oauth2/v2.0/token" % AZURE_TENANT:
            return error("invalid_request", 90002, "Tenant not found.")
        if f.get("grant_type") != "client_credentials" or f.get("client_id") != AZURE_CLIENT:
            return error("unauthorized_client", 700016, "Application not found in the directory.")
        if f.get("scope") != AZURE_SCOPE:
            return error("invalid_scope", 70011, "The provided value for scope is not valid.")
        if "client_secret" in f:
            if f["client_secret"] != self.client_secret:
                return error("invalid_client", 7000215, "Invalid client secret provided.")
            what = "azure-secret"
        elif f.get("client_assertion_type") == JWT_BEARER:
            if f.get("client_assertion") != self.federated_token:
                return error("invalid_client", 700024, "Client assertion is not within its "
                             "valid time range.")
            what = "azure-fed"
        else:
            return error("invalid_request", 7000218, "The request body must contain "
                         "client_assertion or client_secret.")
        tok = fake_jwt("azure-access")
        with self.lock:
            self.tokens["azure"][tok] = time.time() + self.lifetime
        self._count(what)
        self.reply(h, 200, json.dumps({"token_type": "Bearer", "expires_in": self.lifetime,
                                       "ext_expires_in": self.lifetime,
                                       "access_token": tok}).encode())

    def bearer(self, h, route, path, query, body):
        prefix = GMP_PREFIX if route == "gmp" else AZURE_PREFIX
        auth = h.headers.get("Authorization", "")
        tok = auth[7:] if auth.startswith("Bearer ") else None
        with self.lock:
            exp = self.tokens[route].get(tok)
        rec = {"route": route, "path": path[len(prefix):], "method": h.command,
               "cred": tok, "ok": False, "why": ""}
        if exp is None or time.time() >= exp:
            rec["why"] = "unknown token" if exp is None else "expired %.1fs ago" % (
                time.time() - exp)
            self._record(**rec)
            # echoes the credential, as some frontends do: the engine must redact it
            msg = ("Request had invalid authentication credentials (%s). Expected OAuth 2 "
                   "access token." % auth)
            return self.reply(h, 401, json.dumps({"error": {"code": 401, "message": msg,
                                                            "status": "UNAUTHENTICATED"}})
                              .encode())
        rec["ok"] = True
        self._record(**rec)
        self.forward(h, prefix, path, query, body)

    def basic(self, h, path, query, body):
        auth = h.headers.get("Authorization", "")
        user = pw = None
        if auth.startswith("Basic "):
            try:
                user, _, pw = base64.b64decode(auth[6:]).decode().partition(":")
            except Exception:
                pass
        rec = {"route": "grafana", "path": path[len(GRAFANA_PREFIX):], "method": h.command,
               "cred": user, "ok": False, "why": ""}
        if user != GRAFANA_USER or pw != self.grafana_token:
            rec["why"] = "wrong user or token"
            self._record(**rec)
            return self.reply(h, 401, json.dumps({"status": "error", "error":
                                                  "authentication error: invalid token %s" % pw
                                                  }).encode())
        rec["ok"] = True
        self._record(**rec)
        self.forward(h, GRAFANA_PREFIX, path, query, body)
