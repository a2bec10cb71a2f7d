#!/usr/bin/env python3
"""release_test.py - one version everywhere, and the release's files agree.

Usage: python3 tests/integration/release_test.py --bin build/gpuledger

meson.build's project version is the one source: `gpuledger --version`,
the chart's version and appVersion, the image tags of the examples, the
newest CHANGELOG.md release must all say it. examples/Dockerfile must
install the Debian packages of packaging/runtime-packages.txt (the image of
packaging/build-image.sh) and run as the same numeric user; the chart's
default image is build-image.sh's. The CI workflows must parse as YAML and
run the test runner and the release script; the packaging scripts must
parse as bash. No root, no network.
"""

import glob
import os
import re
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import manifests_test as mt  # noqa: E402  (its Dockerfile parser; imports yaml)
import yaml  # noqa: E402


def read(rel):
    with open(os.path.join(REPO, rel), encoding="utf-8") as f:
        return f.read()


def meson_version():
    m = re.search(r"^project\([^)]*?version:\s*'([^']+)'", read("meson.build"), re.S | re.M)
    return m.group(1) if m else None


def script_value(rel, name):
    m = re.search(r"^%s=\$\{\w+:-([^}]+)\}|^%s=(\S+)" % (name, name), read(rel), re.M)
    return (m.group(1) or m.group(2)) if m else None


class ReleaseSuite(harness.Suite):
    def main(self):
        tap = self.tap
        v = meson_version()
        tap.check("meson.build: a semantic version", [] if v and re.fullmatch(
            r"\d+\.\d+\.\d+", v) else ["version %r" % v])
        tap.note("version %s" % v)
        self.versions(v)
        self.changelog(v)
        self.image_agrees()
        self.workflows()

    def versions(self, v):
        p = []
        rc, out, err = harness.run_cmd([self.args.bin, "--version"], 30)
        if rc != 0 or not re.fullmatch(r"gpuledger %s \(commit ([0-9a-f]{12}|unknown)\)"
                                       % re.escape(v), out.strip()):
            p.append("--version printed %r (exit %s)" % (out.strip(), rc))
        chart = yaml.safe_load(read("charts/gpuledger/Chart.yaml"))
        for key in ("version", "appVersion"):
            if str(chart.get(key)) != v:
                p.append("Chart.yaml %s %r" % (key, chart.get(key)))
        values = yaml.safe_load(read("charts/gpuledger/values.yaml"))
        if values["image"].get("tag"):
            p.append("values.yaml image.tag %r: the default must be the appVersion ('')"
                     % values["image"]["tag"])
        for rel in ("examples/Dockerfile", "examples/kubernetes/gpuledger.yaml",
                    "examples/kubernetes/shell.yaml", "examples/kubernetes/README.md"):
            for tag in re.findall(r"/gpuledger:(\d+\.\d+\.\d+)", read(rel)):
                if tag != v:
                    p.append("%s names the image tag %s" % (rel, tag))
        tap_name = "version %s everywhere: --version, Chart.yaml version and appVersion, the " \
                   "examples' image tags" % v
        self.tap.check(tap_name, p)

    def changelog(self, v):
        text = read("CHANGELOG.md")
        p = []
        if "Keep a Changelog" not in text or "Semantic Versioning" not in text:
            p.append("no Keep a Changelog / Semantic Versioning preamble")
        heads = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.M)
        if not heads or heads[0][0] != "Unreleased":
            p.append("the first section is not [Unreleased]: %s" % heads[:1])
        released = [h for h in heads if h[0] != "Unreleased"]
        if not released or released[0][0] != v or not released[0][1]:
            p.append("the newest release is %s, not [%s] - DATE" % (released[:1], v))
        for name, _ in heads:
            if not re.search(r"^\[%s\]: https://" % re.escape(name), text, re.M):
                p.append("no link reference for [%s]" % name)
        for sec in re.findall(r"^### (.+)$", text, re.M):
            if sec not in ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"):
                p.append("section %r is not a Keep a Changelog type" % sec)
        self.tap.check("CHANGELOG.md: Keep a Changelog form, [Unreleased] then [%s] - date" % v, p)

    def image_agrees(self):
        try:
            info = mt.lint_dockerfile(os.path.join(REPO, "examples", "Dockerfile"))
        except mt.Fail as e:
            self.tap.fail("image: examples/Dockerfile parses", str(e))
            return
        p = []
        want = [l.strip() for l in read("packaging/runtime-packages.txt").splitlines()
                if l.strip() and not l.startswith("#")]
        got = info["runtime_packages"]
        if sorted(got) != sorted(want):
            p.append("Dockerfile runtime packages %s, packaging/runtime-packages.txt %s" % (
                sorted(set(got) ^ set(want)), "differ"))
        for rel in ("packaging/build-image.sh", "packaging/rootfs.sh"):
            uid = script_value(rel, "uid")
            if str(info["uid"]) != uid:
                p.append("Dockerfile USER %s, %s uid %s" % (info["uid"], rel, uid))
        image = script_value("packaging/build-image.sh", "image")
        values = yaml.safe_load(read("charts/gpuledger/values.yaml"))
        if values["image"]["repository"] != image:
            p.append("chart image.repository %s, build-image.sh's image %s"
                     % (values["image"]["repository"], image))
        self.tap.check("image: Dockerfile's runtime packages and USER are packaging's; the "
                       "chart's default image is build-image.sh's", p)

    def workflows(self):
        p = []
        docs = {}
        for path in sorted(glob.glob(os.path.join(REPO, ".github", "workflows", "*.yml"))):
            try:
                docs[os.path.basename(path)] = yaml.safe_load(open(path, encoding="utf-8"))
            except yaml.YAMLError as e:
                p.append("%s: %s" % (os.path.basename(path), e))
        for name, needle in (("ci.yml", "./tests/run.sh"), ("release.yml", "packaging/release.sh")):
            doc = docs.get(name)
            if not isinstance(doc, dict):
                p.append("%s missing or not a mapping" % name)
                continue
            # PyYAML reads the key `on` as True (YAML 1.1)
            if "jobs" not in doc or not (doc.get("on") or doc.get(True)):
                p.append("%s: no `on` or `jobs`" % name)
            steps = [s for j in (doc.get("jobs") or {}).values() for s in j.get("steps", [])]
            if not any(needle in (s.get("run") or "") for s in steps):
                p.append("%s: no step runs %s" % (name, needle))
        rel = docs.get("release.yml") or {}
        tags = ((rel.get("on") or rel.get(True) or {}).get("push") or {}).get("tags") or []
        if "v*" not in tags:
            p.append("release.yml does not run on a v* tag push: %s" % tags)
        self.tap.check("workflows: ci.yml and release.yml parse, run ./tests/run.sh and "
                       "packaging/release.sh (on a v* tag)", p)
        p = []
        for path in sorted(glob.glob(os.path.join(REPO, "packaging", "*.sh"))):
            rc, _, err = harness.run_cmd(["bash", "-n", path], 30)
            if rc != 0:
                p.append("%s: %s" % (os.path.basename(path), harness.tail(err, 200)))
        self.tap.check("packaging: the scripts parse (bash -n)", p)


def main():
    args = harness.arguments(__doc__).parse_args()
    return harness.run_driver(ReleaseSuite, args, harness.Tap(), "release test", "gl-release-")


if __name__ == "__main__":
    sys.exit(main())
