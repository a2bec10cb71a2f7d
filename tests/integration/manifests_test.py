#!/usr/bin/env python3
"""Offline checks of the deployment files in examples/.

Usage: python3 tests/integration/manifests_test.py [--bin build/gpuledger]
                                                   [--no-image-build] [--keep]

kubectl cannot validate without an API server, even with --dry-run=client, so this
parses every YAML document under examples/kubernetes/ with PyYAML and asserts
what matters: known apiVersion/kind, valid names and namespaces, a valid
hourly cron schedule, concurrencyPolicy Forbid and the Job limits, volumes
and volumeMounts that match, the PVC, ConfigMap and ServiceAccount that the
pods name exist, the "restricted" Pod Security Standard, the UID equal to the
Dockerfile's USER, the container command's --config file being the
ConfigMap's gpuledger.json, and every path in that config (queries_dir,
prices.file, bearer_token_file, ca_file, run.out_dir) landing in a volume the
pod mounts (read-write where the engine writes).

The ConfigMap's gpuledger.json, prices.csv and queries are then laid out in
a temporary folder exactly as the pod sees them (paths rewritten to that
folder) and checked by the real engine: `prices` (config and price table),
`check` against a loopback stub of the Prometheus HTTP API (query files,
bearer token sent on every request), and the CronJob's own command line
(`run`) against the same stub.

examples/Dockerfile is linted statically (stages, FROM bookworm, packages,
USER numeric and non-root, COPY --from=build of the binary and queries) and
its build stage is replayed on this Debian 12 host: the files it copies, and
only those, are enough for its meson/ninja commands, and every shared library
the binary needs belongs to a package the runtime stage installs. With
GL_RELEASE_BUILD (tests/run.sh's release build, named by tests/runner.py)
a compile whose command line and input files are identical to one of that
build's takes its object instead of running again (ninja_from_reference).

PyYAML comes from Debian's python3-yaml, installed for /usr/bin/python3; when
the python3 running this script cannot import yaml it re-executes itself
with /usr/bin/python3.

Prints one line per check, "ok - NAME" or "not ok - NAME: REASON" (or
"ok - NAME # SKIP REASON"), and otherwise only "# ..." comments; exits 1 when
any check failed.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (stdlib only: imports under either interpreter)

try:
    import yaml
except ImportError:
    if (os.path.exists("/usr/bin/python3") and not os.environ.get("GL_MANIFESTS_REEXEC")
            and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3")):
        os.environ["GL_MANIFESTS_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__)] + sys.argv[1:])
    print("not ok - import yaml: PyYAML is missing (Debian package python3-yaml)")
    sys.exit(1)

import glob
import json
import posixpath
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
K8S_DIR = os.path.join(REPO, "examples", "kubernetes")
ENGINE_TIMEOUT = 120

# ---------------------------------------------------------------- reporting

TAP = harness.Tap(limit=None)
comment = TAP.note


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def expect(cond, reason):
    if not cond:
        raise Fail(reason)


def test(name, fn, *args):
    """Run one check; print its TAP line. Returns fn's value or None."""
    try:
        value = fn(*args)
    except Skip as e:
        TAP.ok(f"{name} # SKIP {e}")
        return None
    except Fail as e:
        TAP.fail(name, e)
        return None
    except Exception as e:  # a bug in the manifests shape we did not foresee
        TAP.fail(name, f"{type(e).__name__}: {e}")
        return None
    TAP.ok(name)
    return value


# ---------------------------------------------------------------- YAML model

# kind -> (apiVersion, namespaced)
KNOWN_KINDS = {
    "Namespace": ("v1", False),
    "ServiceAccount": ("v1", True),
    "ConfigMap": ("v1", True),
    "Secret": ("v1", True),
    "PersistentVolumeClaim": ("v1", True),
    "Pod": ("v1", True),
    "Job": ("batch/v1", True),
    "CronJob": ("batch/v1", True),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", False),
    "Role": ("rbac.authorization.k8s.io/v1", True),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", True),
    "NetworkPolicy": ("networking.k8s.io/v1", True),
}
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
SA_FILES = {"token", "ca.crt", "namespace"}

# Queries the engine reads besides memory_source.query and compute.queries
# (engine/cli/main.c cmd_check: the fixed list).
FIXED_QUERIES = ["fb_free", "fb_reserved", "pod_labels", "namespace_labels", "alloc_requests",
                 "pod_phase", "node_labels"]
DEFAULT_COMPUTE = ["gr_engine_active", "gpu_util"]


class Docs:
    def __init__(self):
        self.docs = []      # (file, index, doc)

    def of_kind(self, kind):
        return [d for _, _, d in self.docs if d.get("kind") == kind]

    def find(self, kind, name, namespace=None):
        for d in self.of_kind(kind):
            md = d.get("metadata") or {}
            if md.get("name") == name and (namespace is None or md.get("namespace") == namespace):
                return d
        return None


def where(f, i, d):
    md = (d or {}).get("metadata") or {}
    return f"{os.path.relpath(f, REPO)}#{i} {d.get('kind')}/{md.get('name')}"


def load_yaml(docs):
    files = sorted(glob.glob(os.path.join(K8S_DIR, "*.yaml")) +
                   glob.glob(os.path.join(K8S_DIR, "*.yml")))
    expect(files, f"no YAML file in {K8S_DIR}")
    errors = []
    for f in files:
        try:
            with open(f, encoding="utf-8") as fh:
                for i, d in enumerate(yaml.safe_load_all(fh)):
                    if d is None:
                        continue
                    if not isinstance(d, dict):
                        errors.append(f"{f}#{i}: not a mapping")
                        continue
                    docs.docs.append((f, i, d))
        except yaml.YAMLError as e:
            errors.append(f"{os.path.relpath(f, REPO)}: {e}")
    expect(not errors, "; ".join(errors))
    comment(f"{len(docs.docs)} documents in {len(files)} files: " +
            ", ".join(sorted(f"{d['kind']}/{d['metadata']['name']}" for _, _, d in docs.docs)))


def check_objects(docs):
    errors = []
    seen = set()
    namespaces = {d["metadata"]["name"] for d in docs.of_kind("Namespace")}
    for f, i, d in docs.docs:
        w = where(f, i, d)
        kind = d.get("kind")
        if kind not in KNOWN_KINDS:
            errors.append(f"{w}: unknown kind {kind!r}")
            continue
        api, namespaced = KNOWN_KINDS[kind]
        if d.get("apiVersion") != api:
            errors.append(f"{w}: apiVersion {d.get('apiVersion')!r}, expected {api!r}")
        md = d.get("metadata")
        if not isinstance(md, dict) or not isinstance(md.get("name"), str):
            errors.append(f"{w}: metadata.name missing")
            continue
        name = md["name"]
        if not (DNS_SUBDOMAIN.match(name) and len(name) <= 253):
            errors.append(f"{w}: name {name!r} is not a DNS subdomain")
        if kind in ("Namespace",) and not DNS_LABEL.match(name):
            errors.append(f"{w}: namespace name {name!r} is not a DNS label")
        if kind == "CronJob" and len(name) > 52:
            errors.append(f"{w}: CronJob names are limited to 52 characters")
        ns = md.get("namespace")
        if namespaced:
            if not ns:
                errors.append(f"{w}: namespaced object without metadata.namespace")
            elif ns not in namespaces:
                errors.append(f"{w}: namespace {ns!r} is not defined by a Namespace document")
        elif ns:
            errors.append(f"{w}: cluster-scoped object with a namespace")
        key = (kind, ns if namespaced else None, name)
        if key in seen:
            errors.append(f"{w}: defined twice")
        seen.add(key)
        for k in ("labels", "annotations"):
            v = md.get(k) or {}
            if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
                errors.append(f"{w}: metadata.{k} values must be strings")
    expect(not errors, "; ".join(errors))


# ---------------------------------------------------------------- cron

CRON_FIELDS = [("minute", 0, 59, None), ("hour", 0, 23, None), ("day of month", 1, 31, None),
               ("month", 1, 12, ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                                 "oct", "nov", "dec"]),
               ("day of week", 0, 7, ["sun", "mon", "tue", "wed", "thu", "fri", "sat"])]


def cron_field(text, lo, hi, names):
    def val(s):
        if names and s.lower() in names:
            return names.index(s.lower()) + (1 if lo == 1 else 0)
        if not s.isdigit():
            raise ValueError(f"{s!r} is not a number")
        return int(s)
    out = set()
    for part in text.split(","):
        step = 1
        if "/" in part:
            part, s = part.split("/", 1)
            if not s.isdigit() or int(s) == 0:
                raise ValueError(f"bad step {s!r}")
            step = int(s)
        if part in ("*", "?"):
            a, b = lo, hi
        elif "-" in part:
            x, y = part.split("-", 1)
            a, b = val(x), val(y)
        else:
            a = val(part)
            b = hi if step != 1 else a
        if not (lo <= a <= b <= hi):
            raise ValueError(f"{part!r} outside {lo}-{hi}")
        out.update(range(a, b + 1, step))
    return out


def check_schedule(cj):
    sched = cj["spec"].get("schedule")
    expect(isinstance(sched, str), "spec.schedule missing")
    expect("TZ" not in sched, "time zone goes in spec.timeZone, not in the schedule")
    fields = sched.split()
    expect(len(fields) == 5, f"schedule {sched!r} has {len(fields)} fields, expected 5")
    sets = []
    for text, (fname, lo, hi, names) in zip(fields, CRON_FIELDS):
        try:
            sets.append(cron_field(text, lo, hi, names))
        except ValueError as e:
            raise Fail(f"schedule {sched!r}: {fname}: {e}")
    expect(len(sets[0]) == 1 and fields[1:] == ["*"] * 4,
           f"schedule {sched!r} is not hourly (one minute, every hour)")
    tz = cj["spec"].get("timeZone")
    if tz is not None:
        import zoneinfo
        try:
            zoneinfo.ZoneInfo(tz)
        except Exception:
            raise Fail(f"spec.timeZone {tz!r} is not a known time zone")
    comment(f"schedule {sched!r}" + (f" ({tz})" if tz else ""))


def check_job_policy(cj):
    s = cj["spec"]
    expect(s.get("concurrencyPolicy") == "Forbid",
           f"concurrencyPolicy is {s.get('concurrencyPolicy')!r}, expected Forbid")
    sd = s.get("startingDeadlineSeconds")
    expect(isinstance(sd, int) and 10 <= sd < 3600,
           f"startingDeadlineSeconds {sd!r}: expected 10 <= n < 3600 (less than one period)")
    js = s["jobTemplate"]["spec"]
    bl = js.get("backoffLimit")
    expect(isinstance(bl, int) and 0 <= bl <= 6, f"backoffLimit {bl!r}: expected 0..6")
    ad = js.get("activeDeadlineSeconds")
    expect(isinstance(ad, int) and 0 < ad < 3600,
           f"activeDeadlineSeconds {ad!r}: a stuck run must end before the next hour's")
    pod = js["template"]["spec"]
    rp = pod.get("restartPolicy")
    expect(rp in ("OnFailure", "Never"), f"restartPolicy {rp!r}: expected OnFailure or Never")
    pfp = js.get("podFailurePolicy")
    if pfp:
        expect(rp == "Never", "podFailurePolicy requires restartPolicy Never")
        names = {c.get("name") for c in pod.get("containers", [])}
        for r in pfp.get("rules", []):
            expect(r.get("action") in ("FailJob", "Ignore", "Count", "FailIndex"),
                   f"podFailurePolicy action {r.get('action')!r}")
            oe = r.get("onExitCodes")
            if oe:
                v = oe.get("values")
                expect(oe.get("operator") in ("In", "NotIn"), "onExitCodes.operator")
                expect(isinstance(v, list) and v and v == sorted(set(v)),
                       "onExitCodes.values must be unique and ascending")
                expect(not (oe.get("operator") == "In" and 0 in v), "onExitCodes In cannot hold 0")
                expect(oe.get("containerName") in (None, *names),
                       f"onExitCodes.containerName {oe.get('containerName')!r} is no container")


# ---------------------------------------------------------------- pods

def pod_specs(docs):
    """(label, pod spec, namespace) of every pod template."""
    out = []
    for f, i, d in docs.docs:
        ns = d["metadata"].get("namespace")
        if d["kind"] == "CronJob":
            out.append((where(f, i, d), d["spec"]["jobTemplate"]["spec"]["template"]["spec"], ns))
        elif d["kind"] == "Job":
            out.append((where(f, i, d), d["spec"]["template"]["spec"], ns))
        elif d["kind"] == "Pod":
            out.append((where(f, i, d), d["spec"], ns))
    return out


def eff(pod, c, key):
    """Container securityContext value, falling back to the pod's."""
    csc = c.get("securityContext") or {}
    if key in csc:
        return csc[key]
    return (pod.get("securityContext") or {}).get(key)


def check_volumes(docs, label, pod, ns):
    errors = []
    vols = {}
    for v in pod.get("volumes") or []:
        n = v.get("name")
        if not (isinstance(n, str) and DNS_LABEL.match(n)):
            errors.append(f"volume name {n!r}")
        if n in vols:
            errors.append(f"volume {n!r} defined twice")
        vols[n] = v
    used = set()
    containers = (pod.get("initContainers") or []) + (pod.get("containers") or [])
    expect(containers, f"{label}: no containers")
    for c in containers:
        paths = set()
        for m in c.get("volumeMounts") or []:
            if m.get("name") not in vols:
                errors.append(f"container {c.get('name')}: mount {m.get('name')!r} has no volume")
            used.add(m.get("name"))
            p = m.get("mountPath", "")
            if not p.startswith("/"):
                errors.append(f"mountPath {p!r} is not absolute")
            if p in paths:
                errors.append(f"two mounts at {p}")
            paths.add(p)
    for n, v in vols.items():
        if n not in used:
            errors.append(f"volume {n!r} is never mounted")
        if "persistentVolumeClaim" in v:
            claim = v["persistentVolumeClaim"].get("claimName")
            pvc = docs.find("PersistentVolumeClaim", claim, ns)
            if not pvc:
                errors.append(f"volume {n!r}: PVC {claim!r} is not defined in namespace {ns}")
            else:
                spec = pvc.get("spec") or {}
                if not spec.get("accessModes"):
                    errors.append(f"PVC {claim}: no accessModes")
                if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
                    errors.append(f"PVC {claim}: no storage request")
        if "configMap" in v:
            cmn = v["configMap"].get("name")
            cm = docs.find("ConfigMap", cmn, ns)
            if not cm and not v["configMap"].get("optional"):
                errors.append(f"volume {n!r}: ConfigMap {cmn!r} is not defined in namespace {ns}")
            elif cm:
                keys = set((cm.get("data") or {})) | set(cm.get("binaryData") or {})
                for it in v["configMap"].get("items") or []:
                    if it.get("key") not in keys:
                        errors.append(f"volume {n!r}: key {it.get('key')!r} not in ConfigMap {cmn}")
    expect(not errors, f"{label}: " + "; ".join(errors))


def check_service_account(docs, label, pod, ns):
    san = pod.get("serviceAccountName")
    expect(san, f"{label}: no serviceAccountName (would run as 'default')")
    expect(docs.find("ServiceAccount", san, ns), f"{label}: ServiceAccount {san!r} is not defined in {ns}")


def check_security(docs, label, pod, ns, uid):
    errors = []
    psc = pod.get("securityContext") or {}
    for k in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(k):
            errors.append(f"{k} is set")
    allowed_vol = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                   "persistentVolumeClaim", "projected", "secret"}
    for v in pod.get("volumes") or []:
        kinds = set(v) - {"name"}
        if not kinds <= allowed_vol:
            errors.append(f"volume {v.get('name')}: type {sorted(kinds - allowed_vol)} not allowed")
    if psc.get("sysctls"):
        errors.append("sysctls set")
    for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
        cn = c.get("name")
        csc = c.get("securityContext") or {}
        if eff(pod, c, "runAsNonRoot") is not True:
            errors.append(f"{cn}: runAsNonRoot is not true")
        ru = eff(pod, c, "runAsUser")
        if not isinstance(ru, int) or ru == 0:
            errors.append(f"{cn}: runAsUser {ru!r} is not a non-root UID")
        elif uid is not None and ru != uid:
            errors.append(f"{cn}: runAsUser {ru} differs from the Dockerfile's USER {uid}")
        if csc.get("allowPrivilegeEscalation") is not False:
            errors.append(f"{cn}: allowPrivilegeEscalation is not false")
        if csc.get("readOnlyRootFilesystem") is not True:
            errors.append(f"{cn}: readOnlyRootFilesystem is not true")
        if csc.get("privileged"):
            errors.append(f"{cn}: privileged")
        caps = csc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            errors.append(f"{cn}: capabilities do not drop ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            errors.append(f"{cn}: adds capabilities {caps.get('add')}")
        sp = (eff(pod, c, "seccompProfile") or {}).get("type")
        if sp not in ("RuntimeDefault", "Localhost"):
            errors.append(f"{cn}: seccompProfile {sp!r} (restricted needs RuntimeDefault)")
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                errors.append(f"{cn}: hostPort")
        mounts = {m["mountPath"]: m for m in c.get("volumeMounts") or []}
        if "/tmp" not in mounts:
            errors.append(f"{cn}: no writable /tmp with a read-only root file system")
    # Pod level too: it also covers containers added later (sidecars, debug)
    if psc.get("runAsNonRoot") is not True:
        errors.append("pod securityContext.runAsNonRoot is not true")
    if uid is not None and psc.get("runAsUser") != uid:
        errors.append(f"pod securityContext.runAsUser {psc.get('runAsUser')!r} is not the "
                      f"Dockerfile's USER {uid}")
    fg = psc.get("fsGroup")
    if uid is not None and fg is None:
        errors.append("no fsGroup: the PVC may not be writable for the non-root user")
    expect(not errors, f"{label}: " + "; ".join(errors))


def parse_quantity(q):
    m = re.fullmatch(r"([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?", str(q))
    if not m:
        raise Fail(f"bad quantity {q!r}")
    mult = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
            "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[m.group(2)]
    return float(m.group(1)) * mult


def check_resources(label, pod):
    for c in pod.get("containers") or []:
        r = c.get("resources") or {}
        req, lim = r.get("requests") or {}, r.get("limits") or {}
        for k in ("cpu", "memory"):
            expect(k in req, f"{label}: {c.get('name')}: no requests.{k}")
        expect("memory" in lim, f"{label}: {c.get('name')}: no limits.memory")
        for k in ("cpu", "memory"):
            if k in lim:
                expect(parse_quantity(req[k]) <= parse_quantity(lim[k]),
                       f"{label}: {c.get('name')}: requests.{k} above limits.{k}")


def check_images(docs):
    images = set()
    for label, pod, _ in pod_specs(docs):
        for c in pod.get("containers") or []:
            img = c.get("image", "")
            expect(img, f"{label}: {c.get('name')} has no image")
            last = img.rsplit("/", 1)[-1]
            expect(":" in last or "@" in img, f"{label}: image {img!r} has no tag")
            expect(not img.endswith(":latest"), f"{label}: image {img!r} uses :latest")
            images.add(img)
    expect(len(images) == 1, f"pods use different images: {sorted(images)}")
    comment(f"image {images.pop()}")


# ---------------------------------------------------------------- paths seen by the pod

class PodFS:
    """What a container sees at a path: the volume (or the service account
    token mount) behind it."""

    def __init__(self, docs, pod, container, ns):
        self.docs, self.ns = docs, ns
        self.vols = {v["name"]: v for v in pod.get("volumes") or []}
        self.mounts = []    # (mountPath, kind, volume dict, readOnly, subPath)
        for m in container.get("volumeMounts") or []:
            v = self.vols.get(m.get("name"), {})
            kind = next((k for k in v if k != "name"), "?")
            self.mounts.append((m["mountPath"].rstrip("/") or "/", kind, v,
                                bool(m.get("readOnly")), m.get("subPath")))
        sa = docs.find("ServiceAccount", pod.get("serviceAccountName"), ns) or {}
        auto = pod.get("automountServiceAccountToken")
        if auto is None:
            auto = sa.get("automountServiceAccountToken", True)
        if auto and not any(p == SA_MOUNT for p, *_ in self.mounts):
            self.mounts.append((SA_MOUNT, "serviceAccountToken", {}, True, None))
        self.mounts.sort(key=lambda m: -len(m[0]))

    def locate(self, path):
        """(mountPath, kind, volume, readOnly, relative path) or None."""
        path = posixpath.normpath(path)
        for mp, kind, v, ro, sub in self.mounts:
            if path == mp or path.startswith(mp + "/"):
                return mp, kind, v, ro, path[len(mp):].lstrip("/")
        return None

    def configmap_files(self, v):
        """relative path -> ConfigMap key of a configMap volume."""
        cm = self.docs.find("ConfigMap", v["configMap"].get("name"), self.ns) or {}
        keys = list(cm.get("data") or {}) + list(cm.get("binaryData") or {})
        items = v["configMap"].get("items")
        if items:
            return {it["path"]: it["key"] for it in items}
        return {k: k for k in keys}

    def file_exists(self, path):
        """True/False when known, None when the volume's content is unknown."""
        loc = self.locate(path)
        if not loc:
            return False
        mp, kind, v, ro, rel = loc
        if kind == "configMap":
            return rel in self.configmap_files(v)
        if kind == "serviceAccountToken":
            return rel in SA_FILES
        return None

    def writable(self, path):
        loc = self.locate(path)
        return bool(loc) and not loc[3] and loc[1] in ("persistentVolumeClaim", "emptyDir")


def the_cronjob(docs):
    cjs = docs.of_kind("CronJob")
    expect(len(cjs) == 1, f"expected one CronJob, found {len(cjs)}")
    return cjs[0]


def cronjob_container(cj):
    pod = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    cs = pod.get("containers") or []
    expect(len(cs) == 1, f"expected one container in the CronJob, found {len(cs)}")
    return pod, cs[0]


def parse_command(c):
    argv = list(c.get("command") or []) + list(c.get("args") or [])
    expect(argv, "the container has no command")
    expect(posixpath.basename(argv[0]) == "gpuledger", f"command runs {argv[0]!r}, not gpuledger")
    opts, i = {}, 1
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] in ("--config", "--db"):
            expect(i + 1 < len(argv), f"{argv[i]} without a value")
            opts[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            opts[argv[i][2:]] = True
            i += 1
    expect(i < len(argv), "no subcommand")
    return argv, opts, argv[i], argv[i + 1:]


def check_command(docs, cj, verbose=False):
    pod, c = cronjob_container(cj)
    argv, opts, sub, rest = parse_command(c)
    expect(sub == "run", f"the CronJob runs {sub!r}, expected 'run'")
    expect("config" in opts and "db" in opts, "the command must give --config and --db")
    fs = PodFS(docs, pod, c, cj["metadata"]["namespace"])
    loc = fs.locate(opts["config"])
    expect(loc and loc[1] == "configMap",
           f"--config {opts['config']} is not inside a mounted ConfigMap")
    expect(fs.file_exists(opts["config"]),
           f"--config {opts['config']}: the ConfigMap has no key for {loc[4]!r}")
    expect(posixpath.basename(opts["config"]) == "gpuledger.json",
           f"--config {opts['config']}: expected the ConfigMap's gpuledger.json")
    expect(fs.writable(opts["db"]) and fs.locate(opts["db"])[1] == "persistentVolumeClaim",
           f"--db {opts['db']} is not on a writable PVC mount")
    if verbose:
        comment("command: " + " ".join(shlex.quote(a) for a in argv))
    return fs, opts


def configmap_of(docs, fs, path):
    mp, kind, v, ro, rel = fs.locate(path)
    cm = docs.find("ConfigMap", v["configMap"]["name"], fs.ns)
    return cm, fs.configmap_files(v)[rel]


def load_config_json(docs, cj):
    pod, c = cronjob_container(cj)
    fs, opts = check_command(docs, cj)
    cm, key = configmap_of(docs, fs, opts["config"])
    text = cm["data"][key]
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as e:
        raise Fail(f"ConfigMap {cm['metadata']['name']} key {key}: invalid JSON at line "
                   f"{e.lineno} column {e.colno}: {e.msg}")
    expect(isinstance(cfg, dict), "gpuledger.json is not an object")
    return cfg


def prom_blocks(cfg):
    out = []
    if isinstance(cfg.get("prometheus"), dict):
        out.append(("prometheus", cfg["prometheus"]))
    for i, cl in enumerate(cfg.get("clusters") or []):
        if isinstance(cl.get("prometheus"), dict):
            out.append((f"clusters[{i}].prometheus", cl["prometheus"]))
    return out


def needed_queries(cfg):
    ms = cfg.get("memory_source") or {}
    comp = (cfg.get("compute") or {}).get("queries", DEFAULT_COMPUTE)
    return [ms.get("query", "fb_used")] + FIXED_QUERIES + list(comp)


def check_config_paths(docs, cj):
    pod, c = cronjob_container(cj)
    fs, opts = check_command(docs, cj)
    cfg = load_config_json(docs, cj)
    base = posixpath.dirname(opts["config"])

    def resolve(p):
        return posixpath.normpath(p if p.startswith("/") else posixpath.join(base, p))
    errors = []
    qd = (cfg.get("collection") or {}).get("queries_dir")
    if qd is None:
        errors.append("collection.queries_dir is not set (the ConfigMap's queries would be unused)")
    else:
        qd = resolve(qd)
        loc = fs.locate(qd)
        if not loc or loc[1] != "configMap":
            errors.append(f"collection.queries_dir {qd} is not inside a mounted ConfigMap")
        else:
            for q in needed_queries(cfg):
                if not fs.file_exists(f"{qd}/{q}.promql"):
                    errors.append(f"query {q}.promql is not in {qd}")
    pf = (cfg.get("prices") or {}).get("file")
    if not pf:
        if not (cfg.get("prices") or {}).get("entries"):
            errors.append("neither prices.file nor prices.entries is set")
    elif not fs.file_exists(resolve(pf)):
        errors.append(f"prices.file {resolve(pf)} is not a file of a mounted ConfigMap")
    for where_, p in prom_blocks(cfg):
        for k in ("bearer_token_file", "ca_file", "basic_auth_file", "client_cert_file",
                  "client_key_file"):
            if k in p:
                path = resolve(p[k])
                ok = fs.file_exists(path)
                if ok is False:
                    errors.append(f"{where_}.{k} {path} is not a mounted file")
    run = cfg.get("run") or {}
    if "out_dir" not in run:
        errors.append("run.out_dir is not set")
    else:
        od = resolve(run["out_dir"])
        loc = fs.locate(od)
        if not (fs.writable(od) and loc[1] == "persistentVolumeClaim"):
            errors.append(f"run.out_dir {od} is not on the writable PVC mount")
    bt = (cfg.get("prometheus") or {}).get("bearer_token_file")
    if bt is not None and resolve(bt) != f"{SA_MOUNT}/token":
        comment(f"bearer_token_file is {bt}, not the service account token")
    expect(not errors, "; ".join(errors))


def check_configmap(docs):
    errors = []
    for cm in docs.of_kind("ConfigMap"):
        n = cm["metadata"]["name"]
        data = cm.get("data") or {}
        size = 0
        for k, v in data.items():
            if not CONFIGMAP_KEY.match(str(k)):
                errors.append(f"{n}: key {k!r} is not a valid ConfigMap key")
            if not isinstance(v, str):
                errors.append(f"{n}: value of {k!r} is a {type(v).__name__}, not a string")
                continue
            size += len(k) + len(v.encode())
        if size > 1 << 20:
            errors.append(f"{n}: {size} bytes, over the 1 MiB ConfigMap limit")
    expect(not errors, "; ".join(errors))


def check_queries_mirror(docs, cj):
    """The example ConfigMap ships the repository's queries unchanged."""
    pod, c = cronjob_container(cj)
    fs, opts = check_command(docs, cj)
    cm, _ = configmap_of(docs, fs, opts["config"])
    data = cm.get("data") or {}
    repo = {os.path.basename(f): open(f, encoding="utf-8").read()
            for f in glob.glob(os.path.join(REPO, "queries", "*.promql"))}
    errors = []
    for k, text in sorted(repo.items()):
        if k not in data:
            errors.append(f"{k} missing")
        elif data[k] != text:
            errors.append(f"{k} differs from queries/{k}")
    extra = sorted(k for k in data if k.endswith(".promql") and k not in repo)
    if extra:
        errors.append(f"not in queries/: {extra}")
    expect(not errors, "ConfigMap vs queries/: " + "; ".join(errors))


def check_rbac(docs):
    crs = docs.of_kind("ClusterRole") + docs.of_kind("Role")
    bindings = docs.of_kind("ClusterRoleBinding") + docs.of_kind("RoleBinding")
    if not crs and not bindings:
        comment("no RBAC objects")
        return
    errors = []
    for b in bindings:
        ref = b.get("roleRef") or {}
        if ref.get("apiGroup") != "rbac.authorization.k8s.io":
            errors.append(f"{b['metadata']['name']}: roleRef.apiGroup")
        ns = b["metadata"].get("namespace") if ref.get("kind") == "Role" else None
        if not docs.find(ref.get("kind"), ref.get("name"), ns):
            errors.append(f"{b['metadata']['name']}: roleRef {ref.get('kind')}/{ref.get('name')} "
                          "is not defined")
        for s in b.get("subjects") or []:
            if s.get("kind") == "ServiceAccount" and not docs.find("ServiceAccount", s.get("name"),
                                                                  s.get("namespace")):
                errors.append(f"{b['metadata']['name']}: subject ServiceAccount "
                              f"{s.get('namespace')}/{s.get('name')} is not defined")
    for r in crs:
        for rule in r.get("rules") or []:
            verbs = set(rule.get("verbs") or [])
            if "*" in verbs or verbs - {"get"}:
                errors.append(f"{r['metadata']['name']}: verbs {sorted(verbs)}: get is enough")
            if rule.get("resources") or rule.get("apiGroups"):
                errors.append(f"{r['metadata']['name']}: grants API resources; "
                              "only nonResourceURLs are needed")
            for u in rule.get("nonResourceURLs") or []:
                if not u.startswith("/api/v1/"):
                    errors.append(f"{r['metadata']['name']}: nonResourceURL {u!r} beyond /api/v1/")
    expect(not errors, "; ".join(errors))


def check_readme(docs):
    path = os.path.join(K8S_DIR, "README.md")
    expect(os.path.exists(path), "examples/kubernetes/README.md is missing")
    text = open(path, encoding="utf-8").read()
    errors = []
    for ref in sorted(set(re.findall(r"examples/[A-Za-z0-9_./-]+", text))):
        ref = ref.rstrip(".")
        if not os.path.exists(os.path.join(REPO, ref)):
            errors.append(f"names {ref}, which does not exist")
    cj = the_cronjob(docs)
    ns, name = cj["metadata"]["namespace"], cj["metadata"]["name"]
    for m in re.findall(r"cronjob/([a-z0-9-]+)", text):
        if m != name:
            errors.append(f"cronjob/{m} is not the CronJob ({name})")
    for line in text.splitlines():
        # kubectl lines about our objects use our namespace (port-forwards to
        # Prometheus name theirs)
        for m in re.findall(r"(?:-n|--namespace)[ =]([a-z0-9-]+)", line):
            if m != ns and "gpuledger" in re.sub(r"(?:-n|--namespace)[ =]" + m, "", line):
                errors.append(f"`{line.strip()[:60]}`: namespace {m} is not {ns}")
    pods = {p["metadata"]["name"] for p in docs.of_kind("Pod")}
    for m in re.findall(r"kubectl .*?\bexec ([a-z0-9-]+)", text) + \
            re.findall(r"pod/([a-z0-9-]+)", text):
        if m not in pods:
            errors.append(f"pod {m} is not defined")
    for n, m in re.findall(r"kubectl cp ([a-z0-9-]+)/([a-z0-9-]+):", text):
        if n != ns or m not in pods:
            errors.append(f"kubectl cp {n}/{m}: no such pod")
    for needed in (r"kubectl .*create job .*--from=cronjob/", r"\bexport --period",
                   r"docker build -f examples/Dockerfile", r"kubectl apply -f"):
        if not re.search(needed, text):
            errors.append(f"shows no command matching /{needed}/")
    expect(not errors, "README: " + "; ".join(errors))


# ---------------------------------------------------------------- the engine on the ConfigMap

class StubProm(harness.LoopbackServer):
    """Loopback stand-in for the Prometheus HTTP API: empty results, every
    request recorded (path, query, Authorization header)."""

    protocol = "HTTP/1.0"

    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        super().__init__(post=True)

    def handle(self, h, body):
        split = urllib.parse.urlsplit(h.path)
        params = urllib.parse.parse_qs(body.decode() if h.command == "POST" else split.query)
        path = split.path
        with self.lock:
            self.requests.append((path, params.get("query", [""])[0],
                                  h.headers.get("Authorization")))
        if path.endswith("/api/v1/query_range"):
            doc = {"status": "success", "data": {"resultType": "matrix", "result": []}}
        elif path.endswith("/api/v1/query"):
            doc = {"status": "success", "data": {"resultType": "vector", "result": []}}
        else:
            h.send_error(404)
            return
        self.reply(h, 200, json.dumps(doc).encode())


class PodSandbox:
    """The CronJob's view of its files, laid out under a temporary folder:
    each mount point maps to root/<mount path>; ConfigMap keys are written as
    files, the service account token mount gets a token and a CA file."""

    def __init__(self, docs, cj, root):
        self.root = root
        pod, c = cronjob_container(cj)
        self.fs = PodFS(docs, pod, c, cj["metadata"]["namespace"])
        self.token = "manifests-test-token-" + os.urandom(6).hex()
        for mp, kind, v, ro, sub in self.fs.mounts:
            d = self.host(mp)
            os.makedirs(d, exist_ok=True)
            if kind == "configMap":
                cm = docs.find("ConfigMap", v["configMap"]["name"], self.fs.ns)
                for rel, key in self.fs.configmap_files(v).items():
                    os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                    with open(os.path.join(d, rel), "w", encoding="utf-8") as fh:
                        fh.write(cm["data"][key])
            elif kind == "serviceAccountToken":
                with open(os.path.join(d, "token"), "w") as fh:
                    fh.write(self.token + "\n")
                with open(os.path.join(d, "ca.crt"), "w") as fh:
                    fh.write("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
                with open(os.path.join(d, "namespace"), "w") as fh:
                    fh.write(self.fs.ns)

    def host(self, pod_path):
        return os.path.join(self.root, posixpath.normpath(pod_path).lstrip("/"))

    def write_config(self, pod_config_path, cfg_edit):
        """Rewrites the config's paths into the sandbox (and applies cfg_edit);
        returns the host path of the rewritten config."""
        host_cfg = self.host(pod_config_path)
        cfg = json.load(open(host_cfg, encoding="utf-8"))
        base = posixpath.dirname(pod_config_path)

        def hp(p):
            return self.host(p if p.startswith("/") else posixpath.join(base, p))
        col = cfg.get("collection") or {}
        if "queries_dir" in col:
            col["queries_dir"] = hp(col["queries_dir"])
        if "file" in (cfg.get("prices") or {}):
            cfg["prices"]["file"] = hp(cfg["prices"]["file"])
        for _, p in prom_blocks(cfg):
            for k in list(p):
                if k.endswith("_file"):
                    p[k] = hp(p[k])
        if "out_dir" in (cfg.get("run") or {}):
            cfg["run"]["out_dir"] = hp(cfg["run"]["out_dir"])
        cfg_edit(cfg)
        out = host_cfg + ".sandbox.json"
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(cfg, fh, indent=2)
        return out


def engine_env(root):
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["TMPDIR"] = os.path.join(root, "tmp")
    os.makedirs(env["TMPDIR"], exist_ok=True)
    return env


def run_engine(argv, root):
    """(exit status, stdout, stderr) of the engine with the sandbox's environment."""
    rc, out, err = harness.run_cmd(argv, ENGINE_TIMEOUT, env=engine_env(root))
    if rc == -1 and err.startswith("timed out"):
        raise Fail(f"{' '.join(argv[-3:])}: no answer in {ENGINE_TIMEOUT} s")
    return rc, out, err


def tail(text, n=6):
    return " | ".join(text.strip().splitlines()[-n:])


def engine_prices(docs, cj, binary, work):
    expect(os.access(binary, os.X_OK), f"{binary} is not an executable (build first)")
    root = tempfile.mkdtemp(prefix="prices-", dir=work)
    sb = PodSandbox(docs, cj, root)
    pod, c = cronjob_container(cj)
    _, opts, _, _ = parse_command(c)
    cfg = sb.write_config(opts["config"], lambda cfg: None)
    rc, out, err = run_engine([binary, "--config", cfg, "--db", sb.host(opts["db"]), "prices"],
                              root)
    expect(rc == 0, f"gpuledger prices exited {rc}: {tail(err)}")
    rows = [line for line in out.splitlines() if line.startswith("| ") and ":" in line]
    comment(f"prices: {len(rows)} price rows accepted")


def swap_url(url):
    def edit(cfg):
        for _, p in prom_blocks(cfg):
            p["url"] = url
    return edit


def engine_check(docs, cj, binary, work):
    expect(os.access(binary, os.X_OK), f"{binary} is not an executable (build first)")
    root = tempfile.mkdtemp(prefix="check-", dir=work)
    sb = PodSandbox(docs, cj, root)
    pod, c = cronjob_container(cj)
    _, opts, _, _ = parse_command(c)
    stub = StubProm()
    try:
        cfg = sb.write_config(opts["config"], swap_url(stub.url()))
        at = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime())
        rc, _, err = run_engine([binary, "--config", cfg, "--db", sb.host(opts["db"]), "check",
                                 "--at", at], root)
    finally:
        stub.close()
    # the stub answers every query with no series: check accepts the config,
    # then exits 4 for the required queries without data
    expect(rc == 0 or (rc == 4 and "required queries without data" in err),
           f"gpuledger check exited {rc}: {tail(err)}")
    expect(stub.requests, "check sent no request to the stub Prometheus")
    cfgj = json.load(open(cfg))
    bt = (cfgj.get("prometheus") or {}).get("bearer_token_file")
    if bt:
        bad = [r for r in stub.requests if r[2] != f"Bearer {sb.token}"]
        expect(not bad, f"{len(bad)} of {len(stub.requests)} requests without the service "
                        "account token as bearer token")
    unsub = [q for _, q, _ in stub.requests if "${" in q]
    expect(not unsub, "query sent with an unsubstituted variable: " + repr(unsub[:1])[:160])
    sent = " ".join(q for _, q, _ in stub.requests)
    for metric in ("DCGM_FI_DEV_FB_USED", "kube_pod_container_resource_requests"):
        expect(metric in sent, f"no query for {metric} reached the stub")
    comment(f"check: {len(stub.requests)} requests, bearer token on each")


def engine_run(docs, cj, binary, work):
    """The CronJob's exact command line, paths mapped into the sandbox."""
    expect(os.access(binary, os.X_OK), f"{binary} is not an executable (build first)")
    root = tempfile.mkdtemp(prefix="run-", dir=work)
    sb = PodSandbox(docs, cj, root)
    pod, c = cronjob_container(cj)
    argv, opts, sub, rest = parse_command(c)
    rc, _, err = harness.run_cmd([binary, "run", "--help"], ENGINE_TIMEOUT)
    if rc != 0:
        raise Skip(f"this build has no `run` subcommand yet ({tail(err, 1)})")
    stub = StubProm()
    start = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(time.time() - 3 * 3600))

    def edit(cfg):
        swap_url(stub.url())(cfg)
        cfg.setdefault("run", {})["start"] = start
    try:
        cfg = sb.write_config(opts["config"], edit)
        mapped = []
        i = 0
        while i < len(argv):
            a = argv[i]
            if a == "--config":
                mapped += [a, cfg]
                i += 2
                continue
            if a == "--db":
                mapped += [a, sb.host(argv[i + 1])]
                i += 2
                continue
            mapped.append(binary if i == 0 else a)
            i += 1
        rc, _, err = run_engine(mapped, root)
    finally:
        stub.close()
    expect(rc == 0, f"gpuledger run exited {rc}: {tail(err)}")
    out_dir = json.load(open(cfg)).get("run", {}).get("out_dir")
    expect(out_dir and os.path.isdir(out_dir) and os.listdir(out_dir),
           f"run wrote nothing into run.out_dir ({out_dir})")
    expect(os.path.exists(sb.host(opts["db"])), "run created no database at --db")
    files = sorted(os.path.relpath(os.path.join(d, f), out_dir)
                   for d, _, fs in os.walk(out_dir) for f in fs)
    expect(any(re.search(r"focus-\d{4}-\d{2}\.csv$", f) for f in files),
           f"no FOCUS CSV in run.out_dir: {files[:10]}")
    comment(f"run: {len(stub.requests)} requests; run.out_dir holds {len(files)} files, e.g. "
            f"{files[:6]}")


# ---------------------------------------------------------------- Dockerfile

def parse_dockerfile(path):
    """[{base, name, instrs: [(INSTR, text, lineno)]}]"""
    lines = open(path, encoding="utf-8").read().split("\n")
    stages, cur, buf, start = [], None, "", 0
    for n, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if buf and line.lstrip().startswith("#"):
            continue        # comment lines inside a continuation
        if not buf:
            start = n
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        instr, _, rest = buf.strip().partition(" ")
        instr = instr.upper()
        rest = rest.strip()
        buf = ""
        if instr == "FROM":
            parts = rest.split()
            flags = [p for p in parts if p.startswith("--")]
            parts = [p for p in parts if not p.startswith("--")]
            name = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else None
            cur = {"base": parts[0], "name": name, "instrs": [], "line": start, "flags": flags}
            stages.append(cur)
        elif cur is None:
            if instr != "ARG":
                raise Fail(f"line {start}: {instr} before the first FROM")
        else:
            cur["instrs"].append((instr, rest, start))
    expect(not buf, "the file ends inside a line continuation")
    return stages


def copy_args(rest):
    """COPY flags and sources/destination (shell or JSON form)."""
    flags = {}
    words = shlex.split(rest) if not rest.lstrip().startswith("[") else None
    if words is None:
        words = json.loads(rest)
    while words and words[0].startswith("--"):
        k, _, v = words.pop(0)[2:].partition("=")
        flags[k] = v
    expect(len(words) >= 2, f"COPY {rest!r}: needs a source and a destination")
    return flags, words[:-1], words[-1]


def apt_packages(run_text):
    pkgs = []
    for seg in re.split(r"&&|;", run_text):
        w = seg.split()
        if len(w) >= 2 and w[0] in ("apt-get", "apt") and "install" in w:
            pkgs += [x for x in w[w.index("install") + 1:] if not x.startswith("-")]
    return pkgs


def stage_runs(stage):
    return [rest for instr, rest, _ in stage["instrs"] if instr == "RUN"]


def lint_dockerfile(path):
    expect(os.path.exists(path), f"{os.path.relpath(path, REPO)} is missing")
    stages = parse_dockerfile(path)
    expect(len(stages) >= 2, f"{len(stages)} stage(s): expected a multi-stage build")
    names = [s["name"] for s in stages]
    expect("build" in names, f"no stage named 'build' (stages: {names})")
    build, final = stages[names.index("build")], stages[-1]
    expect(build is not final, "the build stage is the last stage")
    errors = []
    if not re.fullmatch(r"debian:bookworm(@sha256:[0-9a-f]{64})?", build["base"]):
        errors.append(f"build stage FROM {build['base']}: expected debian:bookworm")
    if not re.fullmatch(r"debian:bookworm-slim(@sha256:[0-9a-f]{64})?", final["base"]):
        errors.append(f"runtime stage FROM {final['base']}: expected debian:bookworm-slim")
    for st in stages:
        for run in stage_runs(st):
            if apt_packages(run):
                if "--no-install-recommends" not in run:
                    errors.append(f"stage {st['name'] or 'final'}: apt-get install without "
                                  "--no-install-recommends")
                if "rm -rf /var/lib/apt/lists" not in run:
                    errors.append(f"stage {st['name'] or 'final'}: apt lists not removed "
                                  "in the same RUN")
                if "apt-get update" not in run:
                    errors.append(f"stage {st['name'] or 'final'}: install without apt-get "
                                  "update in the same RUN")
    bpk = {p for r in stage_runs(build) for p in apt_packages(r)}
    for need in ("meson", "ninja-build", "pkg-config"):
        if need not in bpk:
            errors.append(f"build stage does not install {need}")
    if not ({"gcc", "build-essential", "clang"} & bpk):
        errors.append("build stage installs no C compiler")
    build_run = " ".join(stage_runs(build))
    for cmdline in ("meson setup build -Dqueries_dir=/usr/share/gpuledger/queries "
                    "--buildtype=release", "ninja -C build gpuledger"):
        if cmdline not in re.sub(r"\s+", " ", build_run):
            errors.append(f"build stage does not run `{cmdline}`")
    rpk = [p for r in stage_runs(final) for p in apt_packages(r)]
    for need in ("libsqlite3-0", "libcurl4", "libcjson1", "libcsv3", "libpcre2-8-0",
                 "ca-certificates"):
        if need not in rpk:
            errors.append(f"runtime stage does not install {need}")
    heavy = [p for p in rpk if p.endswith("-dev") or p in ("gcc", "meson", "ninja-build",
                                                             "build-essential", "pkg-config")]
    if heavy:
        errors.append(f"runtime stage installs build tools {heavy}")
    # user
    users = [rest for instr, rest, _ in final["instrs"] if instr == "USER"]
    uid = None
    if not users:
        errors.append("runtime stage has no USER")
    else:
        m = re.fullmatch(r"(\d+)(?::(\d+))?", users[-1].strip())
        if not m:
            errors.append(f"USER {users[-1]!r} is not numeric (Kubernetes runAsNonRoot can only "
                          "verify a numeric UID)")
        elif int(m.group(1)) == 0:
            errors.append("USER is root")
        else:
            uid = int(m.group(1))
            gid = int(m.group(2)) if m.group(2) else None
            runs = " ".join(stage_runs(final))
            if not re.search(rf"useradd\b[^&;]*--uid {uid}\b", runs):
                errors.append(f"no `useradd --uid {uid}` creating the USER's account")
            if gid is not None and not re.search(rf"groupadd\b[^&;]*--gid {gid}\b", runs):
                errors.append(f"no `groupadd --gid {gid}` for the USER's group")
    wd = [rest for instr, rest, _ in final["instrs"] if instr == "WORKDIR"]
    if not wd or wd[-1].strip() != "/var/lib/gpuledger":
        errors.append(f"runtime WORKDIR {wd[-1] if wd else None!r}, expected /var/lib/gpuledger")
    # COPY --from=build
    copies = [copy_args(rest) for instr, rest, _ in final["instrs"] if instr == "COPY"]
    froms = [(f, s, d) for f, s, d in copies if f.get("from") == "build"]
    if not any(d == "/usr/local/bin/gpuledger" or d == "/usr/local/bin/" for _, _, d in froms):
        errors.append("no COPY --from=build of the binary into /usr/local/bin")
    if not any(d.rstrip("/") == "/usr/share/gpuledger/queries" for _, _, d in froms):
        errors.append("no COPY --from=build of the queries into /usr/share/gpuledger/queries")
    other = [(f, s, d) for f, s, d in copies if f.get("from") != "build"]
    if other:
        errors.append(f"runtime stage copies from outside the build stage: {other}")
    for instr, rest, _ in final["instrs"]:
        if instr in ("ENTRYPOINT", "CMD") and rest.startswith("["):
            try:
                json.loads(rest)
            except json.JSONDecodeError:
                errors.append(f"{instr} {rest!r} is not valid JSON (exec form)")
    expect(not errors, "; ".join(errors))
    comment(f"stages: {[(s['name'] or 'final', s['base']) for s in stages]}; USER uid {uid}")
    return {"stages": stages, "build": build, "final": final, "uid": uid,
            "runtime_packages": rpk, "build_packages": sorted(bpk)}


def apt_known(pkgs):
    if not shutil.which("apt-cache"):
        raise Skip("no apt-cache on this host")
    r = subprocess.run(["apt-cache", "show", "--no-all-versions"] + sorted(set(pkgs)),
                       capture_output=True, text=True)
    known = set(re.findall(r"^Package: (\S+)$", r.stdout, re.M))
    missing = sorted(set(pkgs) - known)
    expect(not missing, f"unknown to apt on this Debian host: {missing}")
    comment(f"{len(set(pkgs))} packages known to apt")


# path -> the package dpkg names as its owner, or None; filled by
# dpkg_prefetch.
DPKG_OWNERS = {}


def dpkg_candidates(path):
    """The names dpkg may know a file by, in the order they are tried: as
    given and with or without /usr (merged /usr), each also resolved."""
    cands = [path, path[4:] if path.startswith("/usr/") else "/usr" + path]
    return [p for c in cands for p in (c, os.path.realpath(c))]


def dpkg_prefetch(paths):
    """One `dpkg-query -S` for every candidate name of every path: dpkg
    reads its whole file database on each call (about 0.3 s of CPU), and
    this suite asks about 30 files."""
    want = sorted({p for x in paths for p in dpkg_candidates(x)} - set(DPKG_OWNERS))
    if not want:
        return
    # exit 1 when some name has no owner; the others are still listed
    r = subprocess.run(["dpkg-query", "-S"] + want, capture_output=True, text=True)
    for p in want:
        DPKG_OWNERS[p] = None
    for line in r.stdout.splitlines():
        if ": " not in line or line.startswith("diversion by "):
            continue
        owner, p = line.rsplit(": ", 1)
        if p in DPKG_OWNERS and DPKG_OWNERS[p] is None:
            DPKG_OWNERS[p] = owner.split(":")[0].strip()


def dpkg_owner(path):
    dpkg_prefetch([path])
    for p in dpkg_candidates(path):
        if DPKG_OWNERS.get(p):
            return DPKG_OWNERS[p]
    return None


def build_deps_packaged(meson_build, build_pkgs):
    """Every dependency() and find_library() of meson.build comes from a
    package the build stage installs (dpkg on this Debian host)."""
    if not shutil.which("dpkg-query"):
        raise Skip("no dpkg on this host")
    text = open(meson_build, encoding="utf-8").read()
    errors, found = [], []
    for name in re.findall(r"dependency\('([^']+)'", text):
        r = subprocess.run(["pkg-config", "--variable=pcfiledir", name], capture_output=True,
                           text=True)
        if r.returncode != 0:
            # optional dependency without a .pc here (csv: checked by its header below)
            comment(f"dependency('{name}'): no pkg-config file on this host")
            continue
        owner = dpkg_owner(os.path.join(r.stdout.strip(), name + ".pc"))
        found.append((name, owner))
        if owner not in build_pkgs:
            errors.append(f"dependency {name} comes from {owner}, not installed by the build stage")
    for lib, hdrs in re.findall(r"find_library\('([^']+)'(?:,\s*has_headers:\s*\[([^\]]*)\])?",
                                text):
        if lib == "m":
            continue
        for h in re.findall(r"'([^']+)'", hdrs):
            owner = dpkg_owner(os.path.join("/usr/include", h))
            found.append((h, owner))
            if owner not in build_pkgs:
                errors.append(f"header {h} comes from {owner}, not installed by the build stage")
    expect(not errors, "; ".join(errors))
    comment("build deps: " + ", ".join(f"{n} <- {o}" for n, o in found))


def simulate_build(info, work):
    """Replays the build stage on this host: its COPY instructions (and only
    them) fill a fresh root, then its meson/ninja/strip commands run there;
    the runtime stage's COPY --from=build sources must then exist."""
    if not shutil.which("meson") or not shutil.which("ninja"):
        raise Skip("meson/ninja are not installed on this host")
    rootfs = tempfile.mkdtemp(prefix="image-build-", dir=work)
    wd = "/"
    for instr, rest, line in info["build"]["instrs"]:
        if instr == "WORKDIR":
            wd = posixpath.join(wd, rest.strip())
            os.makedirs(os.path.join(rootfs, wd.lstrip("/")), exist_ok=True)
        elif instr == "COPY":
            flags, srcs, dest = copy_args(rest)
            expect("from" not in flags, f"line {line}: COPY --from in the build stage")
            dabs = dest if dest.startswith("/") else posixpath.join(wd, dest)
            into_dir = dest.endswith("/") or len(srcs) > 1
            for s in srcs:
                hs = os.path.join(REPO, s)
                expect(os.path.exists(hs), f"line {line}: COPY source {s} is not in the repository")
                target = os.path.join(rootfs, dabs.lstrip("/"))
                if os.path.isdir(hs):
                    shutil.copytree(hs, target, dirs_exist_ok=True,
                                    ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    if into_dir:
                        target = os.path.join(target, os.path.basename(s))
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    shutil.copy2(hs, target)
        elif instr == "RUN":
            for seg in re.split(r"&&", rest):
                seg = seg.strip()
                w = seg.split()
                if not w:
                    continue
                if w[0] in ("meson", "ninja", "strip") or w[0].startswith("build/"):
                    cwd = os.path.join(rootfs, wd.lstrip("/"))
                    t0 = time.time()
                    ref = release_build()
                    if w[0] == "ninja" and len(w) >= 4 and w[1] == "-C" and ref:
                        how = ninja_from_reference(cwd, w[2], w[3:], ref, engine_env(rootfs))
                        comment(f"replayed `{seg}` in {time.time() - t0:.1f} s ({how})")
                        continue
                    r = subprocess.run(seg, shell=True, cwd=cwd, capture_output=True, text=True,
                                       timeout=900, env=engine_env(rootfs))
                    expect(r.returncode == 0, f"`{seg}` failed ({r.returncode}): "
                                              f"{tail(r.stdout + r.stderr, 8)}")
                    comment(f"replayed `{seg}` in {time.time() - t0:.1f} s")
    errors = []
    binary = None
    for instr, rest, line in info["final"]["instrs"]:
        if instr != "COPY":
            continue
        flags, srcs, dest = copy_args(rest)
        if flags.get("from") != "build":
            continue
        for s in srcs:
            hp = os.path.join(rootfs, s.lstrip("/"))
            if not os.path.exists(hp):
                errors.append(f"line {line}: COPY --from=build {s}: not produced by the build stage")
            elif dest.startswith("/usr/local/bin"):
                binary = hp
            elif dest.rstrip("/") == "/usr/share/gpuledger/queries":
                n = len(glob.glob(os.path.join(hp, "*.promql")))
                if n == 0:
                    errors.append(f"line {line}: {s} holds no .promql file")
    expect(not errors, "; ".join(errors))
    expect(binary and os.access(binary, os.X_OK), "no executable copied into /usr/local/bin")
    return binary


def release_build():
    """The release build folder tests/runner.py names in GL_RELEASE_BUILD
    (tests/run.sh builds it once for this suite and the image suite), or
    None: the replay then compiles everything itself."""
    ref = os.environ.get("GL_RELEASE_BUILD")
    if ref and os.path.isfile(os.path.join(ref, "build.ninja")):
        return os.path.abspath(ref)
    return None


def ninja_lines(args, cwd):
    r = subprocess.run(["ninja"] + args, cwd=cwd, capture_output=True, text=True, timeout=300)
    expect(r.returncode == 0, f"`ninja {' '.join(args)}` failed ({r.returncode}): "
                              f"{tail(r.stdout + r.stderr, 8)}")
    return r.stdout.splitlines()


def reusable_object(cmd, fresh, ref):
    """The object file of the release build that compile command `cmd` of
    the fresh build folder would write, when that is certain without
    running it: the release build ran the same command line (both folders
    sit directly under their source tree, so every relative path in it
    means the same), ninja holds the object up to date and lists the files
    the compiler read (its deps log), and each of those files is
    byte-identical in the fresh root. A header the build stage did not copy
    is missing there, so that compile runs and fails as it would in
    Docker. Returns the object's path relative to the build folder, or
    None."""
    w = shlex.split(cmd)
    if "-c" not in w or "-o" not in w:
        return None
    obj = w[w.index("-o") + 1]
    lines = ninja_lines(["-C", ref, "-t", "deps", obj], REPO)
    if not lines or not lines[0].startswith(obj + ":") or not lines[0].endswith("(VALID)"):
        return None
    for dep in (l.strip() for l in lines[1:] if l.strip()):
        a = os.path.join(fresh, dep)
        b = os.path.join(ref, dep)
        if not os.path.isfile(a) or not os.path.isfile(b):
            return None
        with open(a, "rb") as fa, open(b, "rb") as fb:
            if fa.read() != fb.read():
                return None
    return obj


def same_as_repository(root, build):
    """Files of the fresh root (its build folder aside) that are not
    byte-identical to the repository's file at the same path."""
    odd = []
    for d, dirs, files in os.walk(root):
        if d == root and build in dirs:
            dirs.remove(build)
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), root)
            mine, theirs = os.path.join(root, rel), os.path.join(REPO, rel)
            if not os.path.isfile(theirs):
                odd.append(rel)
                continue
            with open(mine, "rb") as a, open(theirs, "rb") as b:
                if a.read() != b.read():
                    odd.append(rel)
    return odd


def ninja_from_reference(cwd, build, targets, ref, env):
    """`ninja -C BUILD TARGET` of the build stage, replayed without
    compiling again what the release build already compiled from identical
    inputs: every command ninja would run in this fresh build folder
    (`ninja -t commands`, in order: generated headers, compiles, archive,
    link) runs here, except a compile whose object reusable_object() takes
    from the release build. Compiling a byte-identical input with the same
    compiler and command line gives the same object, so what the replay
    proves is unchanged: the copied files are enough to configure, every
    file each compile reads is in the fresh root, and the archive and the
    link succeed there. Returns a note on what ran."""
    fresh = os.path.join(cwd, build)
    cmds = ninja_lines(["-C", fresh, "-t", "commands"] + targets, cwd)
    # A header lookup in the fresh root finds what it finds in the
    # repository only when each file there is the repository's file at the
    # same place (a COPY to another name could shadow a header): else
    # nothing is reused.
    moved = same_as_repository(cwd, build)
    if moved:
        ref = None
    # the release build's own compile lines, and those ninja would redo there
    ref_cmds = set(ninja_lines(["-C", ref, "-t", "commands"] + targets, REPO)) if ref else set()
    stale = set(ninja_lines(["-C", ref, "-n", "-v"] + targets, REPO)) if ref else set()
    reused = ran = 0
    for cmd in cmds:
        obj = None
        if ref and cmd in ref_cmds and not any(l.endswith(cmd) for l in stale):
            obj = reusable_object(cmd, fresh, ref)
        if obj:
            os.makedirs(os.path.dirname(os.path.join(fresh, obj)), exist_ok=True)
            shutil.copy2(os.path.join(ref, obj), os.path.join(fresh, obj))
            reused += 1
            continue
        r = subprocess.run(cmd, shell=True, cwd=fresh, capture_output=True, text=True,
                           timeout=900, env=env)
        expect(r.returncode == 0, f"`{cmd[:200]}` failed ({r.returncode}): "
                                  f"{tail(r.stdout + r.stderr, 8)}")
        ran += 1
    expect(cmds, f"ninja lists no command for {' '.join(targets)}")
    if moved:
        return (f"all {ran} commands run: {len(moved)} file(s) differ from the repository's at "
                f"the same path, e.g. {moved[:3]}")
    return (f"{ran} of ninja's {len(cmds)} commands run, {reused} objects taken from the "
            f"release build {ref} (same command line, byte-identical inputs)")


def runtime_libs_packaged(info, binary):
    """Each shared library the image's binary needs belongs to a package the
    runtime stage installs (or to libc6, in every Debian image)."""
    if not shutil.which("dpkg-query") or not shutil.which("ldd"):
        raise Skip("no dpkg/ldd on this host")
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    expect(r.returncode == 0, f"ldd {binary}: {r.stderr.strip()}")
    errors, seen = [], []
    base = {"libc6"}
    dpkg_prefetch(m.group(2) for m in (re.match(r"\s*(\S+) => (/\S+)", line)
                                        for line in r.stdout.splitlines()) if m)
    for line in r.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if not m:
            continue
        owner = dpkg_owner(m.group(2))
        seen.append(f"{m.group(1)} <- {owner}")
        if owner is None:
            errors.append(f"{m.group(1)} ({m.group(2)}) belongs to no Debian package")
        elif owner not in info["runtime_packages"] and owner not in base:
            # indirect dependencies come in through the listed packages
            direct = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True)
            if f"[{m.group(1)}]" in direct.stdout:
                errors.append(f"{m.group(1)} comes from {owner}, which the runtime stage "
                              "does not install")
    expect(not errors, "; ".join(errors))
    comment("runtime libraries: " + ", ".join(s for s in seen
                                              if any(k in s for k in ("sqlite", "curl.so", "cjson",
                                                                      "pcre2", "csv"))))


# ---------------------------------------------------------------- main

class Manifests(harness.Suite):
    """Every check above, in order."""

    def main(self):
        a = self.args
        binary = os.path.abspath(a.bin)
        work = self.work
        comment(f"python {sys.executable}, PyYAML {yaml.__version__}, work {work}")
        # Dockerfile first: its UID is checked against the pods.
        info = test("dockerfile: stages, bases, packages, USER, COPY --from=build",
                    lint_dockerfile, a.dockerfile)
        uid = info["uid"] if info else None
        if info:
            test("dockerfile: apt knows every package", apt_known,
                 info["runtime_packages"] + info["build_packages"])
            test("dockerfile: build stage installs the package of every meson dependency",
                 build_deps_packaged, os.path.join(REPO, "meson.build"), info["build_packages"])
            if a.no_image_build:
                TAP.ok("dockerfile: build stage replayed on this host # SKIP --no-image-build")
            else:
                img_bin = test("dockerfile: build stage replayed from only the files it copies",
                               simulate_build, info, work)
                if img_bin:
                    test("dockerfile: runtime stage installs every shared library the binary needs",
                         runtime_libs_packaged, info, img_bin)

        docs = Docs()
        if test("yaml: every document under examples/kubernetes parses", load_yaml, docs) is None \
                and not docs.docs:
            return
        test("yaml: apiVersion/kind known, names valid, namespaces defined, no duplicates",
             check_objects, docs)
        test("configmap: keys valid, values strings, under 1 MiB", check_configmap, docs)
        cj = test("cronjob: exactly one", the_cronjob, docs)
        if cj:
            test("cronjob: schedule is a valid 5-field cron expression, hourly",
                 check_schedule, cj)
            test("cronjob: concurrencyPolicy Forbid, startingDeadlineSeconds, backoffLimit, "
                 "restartPolicy, activeDeadlineSeconds", check_job_policy, cj)
        for label, pod, ns in pod_specs(docs):
            test(f"pod {label}: volumes and volumeMounts match, PVC and ConfigMap exist",
                 check_volumes, docs, label, pod, ns)
            test(f"pod {label}: serviceAccountName exists", check_service_account,
                 docs, label, pod, ns)
            test(f"pod {label}: securityContext non-root (UID = Dockerfile USER), read-only root, "
                 "no privilege escalation, capabilities dropped (restricted)",
                 check_security, docs, label, pod, ns, uid)
            test(f"pod {label}: resources", check_resources, label, pod)
        test("pods: one tagged image", check_images, docs)
        test("rbac: bindings reference defined roles and service accounts, read-only rules",
             check_rbac, docs)
        if cj:
            cmd_ok = test("cronjob: command is `gpuledger --config <ConfigMap mount>/gpuledger.json "
                          "--db <PVC> run`", check_command, docs, cj, True)
            cfg_ok = cmd_ok and test("configmap: gpuledger.json parses as JSON",
                                     load_config_json, docs, cj)
        if cj and not cfg_ok:
            comment("the config checks and the engine runs need the command and gpuledger.json; "
                    "not run")
        elif cj:
            test("configmap: queries_dir, prices.file, bearer_token_file, ca_file, run.out_dir "
                 "point into mounted paths", check_config_paths, docs, cj)
            test("configmap: queries identical to queries/*.promql", check_queries_mirror, docs, cj)
            test("engine: `gpuledger prices` accepts the ConfigMap's config and price table",
                 engine_prices, docs, cj, binary, work)
            test("engine: `gpuledger check` with the ConfigMap's config and queries against a "
                 "stub Prometheus", engine_check, docs, cj, binary, work)
            test("engine: the CronJob's command line (`run`) against a stub Prometheus",
                 engine_run, docs, cj, binary, work)
        if docs.docs:
            test("readme: names existing files, the CronJob and its namespace", check_readme, docs)

    def cleanup(self):
        if TAP.failed:
            comment(f"{TAP.failed} check(s) failed")


def main():
    ap = harness.arguments(__doc__, bin_default=os.path.join(REPO, "build", "gpuledger"))
    ap.add_argument("--dockerfile", default=os.path.join(REPO, "examples", "Dockerfile"))
    ap.add_argument("--no-image-build", action="store_true",
                    help="skip replaying the Dockerfile's build stage (about 10 s)")
    return harness.run_driver(Manifests, ap.parse_args(), TAP, "manifests test",
                              "gl-manifests-")


if __name__ == "__main__":
    sys.exit(main())
