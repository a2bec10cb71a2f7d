#!/usr/bin/env python3
"""image_test.py - the OCI image of packaging/build-image.sh, built without a
daemon and run with its own binary.

Usage: python3 tests/integration/image_test.py --bin build/gpuledger
           [--work DIR] [--keep]

Runs packaging/release.sh and checks its five files (source tarball, image
archive, chart package, CycloneDX SBOM, SHA256SUMS). The image (root file
system from Debian packages by mmdebstrap, the release binary, buildah
commit to an OCI archive) is then started and runs its
binary inside it with `buildah run --isolation chroot`: --version, `check`
and a `run` of the example cluster (examples/cluster/scenario.json, real
Prometheus on loopback). The invoices it writes must equal, byte for byte,
those of the same run of --bin outside the image, and their totals the
generator's model. Also checked: the OCI labels, the numeric user, the size
(under 60 MB uncompressed), the Debian packages dpkg-query lists in it.

The root file system and the release build are kept in the test cache
(GL_TEST_CACHE/image-*) under a digest of their inputs: the first run
downloads the packages and compiles (about 4 minutes), later ones reuse
them. When tests/runner.py names a release build folder in
GL_RELEASE_BUILD (tests/run.sh's build-release), the binary is built there
(packaging/build-image.sh --build) instead of compiled again; a folder of
other build options is refused, which is checked too. Needs root, buildah and mmdebstrap (tests/deps.sh); without them the
checks are skipped, which is a failure under CI=true.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import harness  # noqa: E402

PACKAGING = os.path.join(REPO, "packaging")
SCENARIO = os.path.join(REPO, "examples", "cluster", "scenario.json")
UID = "10001"
SIZE_LIMIT = 60 * 1000 * 1000
# Where the image's run sees the test's files (bind-mounted).
INSIDE = "/data"


def meson_version():
    with open(os.path.join(REPO, "meson.build"), encoding="utf-8") as f:
        return re.search(r"version:\s*'([^']+)'", f.read()).group(1)


def runtime_packages():
    with open(os.path.join(PACKAGING, "runtime-packages.txt"), encoding="utf-8") as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def cached_dir(kind, key, make, work):
    """A folder of the test cache (KIND/KEY) made by make(path) on a miss;
    copied with cp -a (owners, modes and links kept: a root file system).
    Without GL_TEST_CACHE, a folder of the work directory."""
    root = os.environ.get("GL_TEST_CACHE")
    if not root:
        path = os.path.join(work, kind)
        make(path)
        return path, False
    final = os.path.join(root, kind, key)
    if os.path.isdir(final):
        return final, True
    os.makedirs(os.path.dirname(final), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=key + ".", dir=os.path.dirname(final))
    make(os.path.join(tmp, "x"))
    os.rename(os.path.join(tmp, "x"), final)
    shutil.rmtree(tmp, ignore_errors=True)
    return final, False


def find_helm():
    """HELM, helm on PATH, or the helm suite's (fetched into its cache when
    missing)."""
    for h in (os.environ.get("HELM"), shutil.which("helm"),
              os.path.join(REPO, ".cache", "helm-test", "bin", "helm")):
        if h and os.access(h, os.X_OK):
            return h
    import helm_test
    return helm_test.install_helm(os.path.join(REPO, ".cache", "helm-test"))


class Buildah:
    """buildah on its own vfs storage in the work directory."""

    def __init__(self, work):
        self.base = ["buildah", "--storage-driver", "vfs", "--root", os.path.join(work, "bs"),
                     "--runroot", os.path.join(work, "br")]

    def __call__(self, *args, timeout=300):
        return harness.run_cmd(self.base + list(args), timeout)


class ImageSuite(harness.Suite):
    def main(self):
        tap = self.tap
        missing = [t for t in ("buildah", "mmdebstrap") if not shutil.which(t)]
        if missing or os.geteuid() != 0:
            tap.skip("image: build and run", "needs root and %s" % (
                ", ".join(missing) or "root"))
            return
        self.b = Buildah(self.work)
        self.ctr = None
        archive = self.build()
        if not archive:
            return
        rc, out, err = self.b("from", "--quiet", "oci-archive:" + archive)
        if not tap.check("image: buildah from the OCI archive",
                         [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(err))]):
            return
        self.ctr = out.strip().splitlines()[-1]
        self.metadata()
        self.contents()
        self.version()
        self.runs()

    def build(self):
        tap = self.tap
        key = harness.file_key([os.path.join(PACKAGING, f) for f in
                                ("rootfs.sh", "dpkg-status.sh", "runtime-packages.txt")])

        def make_rootfs(path):
            rc, out, err = harness.run_cmd([os.path.join(PACKAGING, "rootfs.sh"), path], 900)
            if rc != 0:
                raise RuntimeError("rootfs.sh exit %s: %s" % (rc, harness.tail(out + err)))
        rootfs, hit = cached_dir("image-rootfs", key, make_rootfs, self.work)
        tap.setup("root file system %s%s" % (rootfs, " (from the test cache)" if hit else ""))
        # The release build folder is reused (ninja rebuilds what changed):
        # tests/run.sh's build-release when the runner names it, else one in
        # the test cache.
        cache = os.environ.get("GL_TEST_CACHE")
        build_work = os.path.join(cache, "image-build") if cache else self.path("image-build")
        shared = os.environ.get("GL_RELEASE_BUILD")
        helm = find_helm()
        tap.setup("helm %s" % helm)
        env = dict(harness.CHILD_ENV, ALLOW_DIRTY="1", HELM=helm)
        self.refuses_other_build(env)
        self.dist = self.path("dist")
        rc, out, err = harness.run_cmd([os.path.join(PACKAGING, "release.sh"), "--work",
                                        build_work, "--out", self.dist, "--rootfs", rootfs] +
                                       (["--build", shared] if shared else []),
                                       900, env=env)
        if shared:
            tap.setup("release binary built in %s" % shared)
        for line in out.strip().splitlines():
            if line.startswith("#"):
                tap.note(line[1:].strip())
        if not tap.check("release: packaging/release.sh", [] if rc == 0 else
                         ["exit %s: %s" % (rc, harness.tail(out + err))]):
            return None
        self.artifacts()
        return os.path.join(self.dist, "gpuledger-%s-image.oci.tar" % meson_version())

    def refuses_other_build(self, env):
        """--build with a folder of other options (the test build of --bin:
        not --buildtype=release, the repository's query folder) would put
        another binary in the image: refused before anything is built."""
        other = os.path.dirname(os.path.abspath(self.args.bin))
        rc, out, err = harness.run_cmd([os.path.join(PACKAGING, "build-image.sh"), "--work",
                                        self.path("refused"), "--out", self.path("refused"),
                                        "--build", other], 120, env=env)
        self.tap.check("release: build-image.sh --build refuses a build folder without the "
                       "image's buildtype and queries_dir (%s)" % os.path.basename(other),
                       [] if rc == 2 and "not 'release /usr/share/gpuledger/queries'" in err
                       else ["exit %s: %s" % (rc, harness.tail(out + err))])

    def artifacts(self):
        """The five files, their checksums, the chart's and the SBOM's
        contents."""
        v = meson_version()
        names = ["gpuledger-%s.tar.gz" % v, "gpuledger-%s-image.oci.tar" % v,
                 "gpuledger-%s.tgz" % v, "gpuledger-%s-sbom.cdx.json" % v, "SHA256SUMS"]
        p = ["%s missing" % n for n in names if not os.path.isfile(os.path.join(self.dist, n))]
        rc, out, err = harness.run_cmd(["sha256sum", "--strict", "-c", "SHA256SUMS"], 120,
                                       cwd=self.dist)
        if rc != 0:
            p.append("sha256sum -c: %s" % harness.tail(out + err))
        elif sorted(l[:-len(": OK")] for l in out.splitlines() if l.endswith(": OK")) != \
                sorted(names[:4]):
            p.append("SHA256SUMS covers %s" % out.split())
        with tarfile.open(os.path.join(self.dist, names[2])) as tf:
            chart = tf.extractfile("gpuledger/Chart.yaml").read().decode()
        for key in ("version", "appVersion"):
            if not re.search(r'^%s: "?%s"?$' % (key, re.escape(v)), chart, re.M):
                p.append("packaged Chart.yaml %s is not %s" % (key, v))
        with tarfile.open(os.path.join(self.dist, names[0])) as tf:
            if "gpuledger-%s/meson.build" % v not in tf.getnames():
                p.append("the source tarball has no gpuledger-%s/meson.build" % v)
        with open(os.path.join(self.dist, names[3]), encoding="utf-8") as f:
            self.sbom = json.load(f)
        listed = {c["name"] for c in self.sbom.get("components", [])}
        if self.sbom.get("bomFormat") != "CycloneDX":
            p.append("SBOM bomFormat %r" % self.sbom.get("bomFormat"))
        p += ["SBOM lacks %s" % x for x in runtime_packages() if x not in listed]
        self.tap.check("release: source tarball, image archive, chart .tgz (version %s), "
                       "CycloneDX SBOM, SHA256SUMS that verify" % v, p)

    def metadata(self):
        rc, out, err = self.b("inspect", "--type", "container", self.ctr)
        doc = json.loads(out) if rc == 0 else {}
        cfg = doc.get("OCIv1", {}).get("config", {})
        labels = cfg.get("Labels") or {}
        rc2, commit, _ = harness.run_cmd(["git", "-C", REPO, "rev-parse", "--short=12", "HEAD"])
        want = {"org.opencontainers.image.version": meson_version(),
                "org.opencontainers.image.revision": commit.strip(),
                "org.opencontainers.image.licenses": "Apache-2.0"}
        p = [] if rc == 0 else ["inspect exit %s: %s" % (rc, harness.tail(err))]
        p += ["label %s=%r, not %r" % (k, labels.get(k), v) for k, v in want.items()
              if labels.get(k) != v]
        if not (labels.get("org.opencontainers.image.source") or "").startswith("https://"):
            p.append("label org.opencontainers.image.source %r is no https URL"
                     % labels.get("org.opencontainers.image.source"))
        if cfg.get("User") != "%s:%s" % (UID, UID):
            p.append("user %r, not %s:%s (numeric, non-root)" % (cfg.get("User"), UID, UID))
        if cfg.get("Entrypoint") != ["/usr/local/bin/gpuledger"]:
            p.append("entrypoint %r" % cfg.get("Entrypoint"))
        self.tap.check("image: OCI labels (version, revision, source, licenses), user %s:%s, "
                       "entrypoint" % (UID, UID), p)

    def contents(self):
        tap = self.tap
        rc, mnt, err = self.b("mount", self.ctr)
        if not tap.check("image: buildah mount", [] if rc == 0 else [harness.tail(err)]):
            return
        mnt = mnt.strip()
        try:
            size = int(subprocess.check_output(["du", "-sb", mnt]).split()[0])
            tap.note("image size: %d bytes uncompressed (%.1f MB)" % (size, size / 1e6))
            tap.check("image: under 60 MB uncompressed",
                      [] if size < SIZE_LIMIT else ["%d bytes" % size])
            rc, out, err = harness.run_cmd(["dpkg-query", "--admindir",
                                            os.path.join(mnt, "var/lib/dpkg"), "-W",
                                            "-f", "${Package}\n"])
            listed = set(out.split())
            p = [] if rc == 0 else ["dpkg-query exit %s: %s" % (rc, harness.tail(err))]
            p += ["%s not listed" % x for x in runtime_packages() if x not in listed]
            p += ["%s is in the image" % x for x in ("dpkg", "apt", "bash", "dash")
                  if x in listed]
            for rel in ("usr/local/bin/gpuledger", "etc/ssl/certs/ca-certificates.crt",
                        "usr/share/zoneinfo/Europe/Berlin",
                        "usr/share/gpuledger/examples/gpuledger.example.json"):
                if not os.path.isfile(os.path.join(mnt, rel)) or \
                        os.path.getsize(os.path.join(mnt, rel)) == 0:
                    p.append("/%s missing or empty" % rel)
            if sorted(os.listdir(os.path.join(mnt, "usr/share/gpuledger/queries"))) != \
                    sorted(f for f in os.listdir(os.path.join(REPO, "queries"))
                           if f.endswith(".promql")):
                p.append("/usr/share/gpuledger/queries differs from queries/")
            st = os.stat(os.path.join(mnt, "var/lib/gpuledger"))
            if str(st.st_uid) != UID:
                p.append("/var/lib/gpuledger owned by %d" % st.st_uid)
            sbom = {c["name"] for c in self.sbom.get("components", [])}
            if sbom != listed:
                p.append("the SBOM and the image differ on %s" % sorted(sbom ^ listed)[:6])
            tap.note("%d Debian packages in the image" % len(listed))
            tap.check("image: dpkg-query lists packaging/runtime-packages.txt, as the SBOM (no "
                      "shell, no package manager); binary, CA bundle, zone files, queries, "
                      "example config",
                      p)
        finally:
            self.b("umount", self.ctr)

    def inside(self, *args, timeout=300):
        return self.b("run", "--isolation", "chroot", "--network", "host",
                      "-v", "%s:%s" % (self.path("inside"), INSIDE), self.ctr, "--",
                      "/usr/local/bin/gpuledger", *args, timeout=timeout)

    def version(self):
        os.makedirs(self.path("inside"), exist_ok=True)
        rc, out, err = self.inside("--version")
        _, commit, _ = harness.run_cmd(["git", "-C", REPO, "rev-parse", "--short=12", "HEAD"])
        want = "gpuledger %s (commit %s)\n" % (meson_version(), commit.strip())
        self.tap.check("image: its binary's --version is %r" % want.strip(),
                       [] if rc == 0 and out == want
                       else ["exit %s: %r %s" % (rc, out, harness.tail(err))])

    def runs(self):
        tap = self.tap
        data = self.path("data")
        rc, out, err = harness.run_cmd([sys.executable, os.path.join(REPO, "tests", "gen",
                                                                     "gencluster.py"),
                                        SCENARIO, data], 300)
        if rc != 0:
            raise RuntimeError("gencluster: %s" % harness.tail(err))
        tap.setup("example cluster generated")
        rc, out = harness.backfill(os.path.join(data, "data.om"), self.path("tsdb"), timeout=600)
        if rc != 0:
            raise RuntimeError("backfill: %s" % harness.tail(out))
        self.prom = harness.Prometheus(self.work, self.path("tsdb"))
        self.prom.start()
        tap.setup("Prometheus on %s" % self.prom.url())
        with open(os.path.join(data, "expected.json"), encoding="utf-8") as f:
            expected = json.load(f)
        start, end = expected["window"]["from"], expected["window"]["to"]
        with open(os.path.join(data, "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        cfg["prometheus"]["url"] = self.prom.url()
        cfg["run"] = {"start": start, "delay_minutes": 0}
        cfg["prices"] = {"file": "prices.csv"}
        # Inside: the image's own queries (the binary's default folder).
        cfg.get("collection", {}).pop("queries_dir", None)
        inside = self.path("inside")
        os.makedirs(inside, exist_ok=True)
        os.chmod(inside, 0o777)  # the image's user writes the database and outputs
        shutil.copy(os.path.join(data, "prices.csv"), inside)
        with open(os.path.join(inside, "gpuledger.json"), "w") as f:
            json.dump(cfg, f, indent=2)
        outside = self.path("outside")
        os.makedirs(outside)
        shutil.copy(os.path.join(data, "prices.csv"), outside)
        cfg["collection"] = dict(cfg.get("collection", {}),
                                 queries_dir=os.path.join(REPO, "queries"))
        with open(os.path.join(outside, "gpuledger.json"), "w") as f:
            json.dump(cfg, f, indent=2)

        g_in = ["--config", INSIDE + "/gpuledger.json", "--db", INSIDE + "/gpuledger.db"]
        rc, out, err = self.inside(*g_in, "check", "--at", start)
        tap.check("image: check in the image reaches the loopback Prometheus (example cluster)",
                  [] if rc == 0 else ["exit %s: %s" % (rc, harness.tail(out + err))])
        rc, out, err = self.inside(*g_in, "run", "--now", end, "--out", INSIDE + "/out",
                                   timeout=600)
        tap.check("image: run in the image", [] if rc == 0 else
                  ["exit %s: %s" % (rc, harness.tail(err))])
        rc2, _, err2 = harness.run_cmd([self.args.bin, "--config",
                                        os.path.join(outside, "gpuledger.json"), "--db",
                                        os.path.join(outside, "gpuledger.db"), "run", "--now",
                                        end, "--out", os.path.join(outside, "out")], 600)
        if rc2 != 0:
            raise RuntimeError("run outside the image: exit %s: %s" % (rc2, harness.tail(err2)))
        tap.setup("the same run outside the image")
        period = expected["period"]
        d_in = os.path.join(inside, "out", period, "invoices")
        d_out = os.path.join(outside, "out", period, "invoices")
        names = sorted(os.listdir(d_out)) if os.path.isdir(d_out) else []
        p = [] if names else ["no invoice outside the image in %s" % d_out]
        got_in = sorted(os.listdir(d_in)) if os.path.isdir(d_in) else []
        if got_in != names:
            p.append("invoice files in the image %s, outside %s" % (got_in, names))
        for n in set(names) & set(got_in):
            with open(os.path.join(d_in, n), "rb") as a, open(os.path.join(d_out, n), "rb") as b:
                if a.read() != b.read():
                    p.append("%s differs" % n)
        tap.check("image: the run's invoices equal the same run outside the image, byte for "
                  "byte (%d files)" % len(names), p)
        p = []
        totals = {}
        for n in got_in:
            if n.endswith(".json"):
                with open(os.path.join(d_in, n), encoding="utf-8") as f:
                    doc = json.load(f)
                totals[doc["team"]] = doc["total"]
        want = {t: inv["total"] for t, inv in expected["invoices"].items()}
        for t in sorted(set(want) | set(totals)):
            if totals.get(t) != want.get(t):
                p.append("%s: image %s, model %s" % (t, totals.get(t), want.get(t)))
        tap.check("image: the run's invoice totals are the generator model's (%d teams)"
                  % len(want), p)

    def cleanup(self):
        if getattr(self, "prom", None):
            self.prom.stop()
        if getattr(self, "ctr", None):
            self.b("rm", self.ctr)


def main():
    args = harness.arguments(__doc__).parse_args()
    return harness.run_driver(ImageSuite, args, harness.Tap(), "image test", "gl-image-")


if __name__ == "__main__":
    sys.exit(main())
