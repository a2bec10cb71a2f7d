#!/usr/bin/env python3
"""A CycloneDX 1.5 SBOM (JSON) of the image's root file system: every Debian
package dpkg-query lists in ROOTFS/var/lib/dpkg, and gpuledger itself.

usage: packaging/sbom.py ROOTFS VERSION COMMIT > gpuledger-VERSION-sbom.cdx.json

The document is the same for the same packages and commit (serial number
derived from them, timestamp from SOURCE_DATE_EPOCH), so a rebuild can be
compared with the published one.
"""

import datetime
import hashlib
import json
import os
import subprocess
import sys
import uuid

FIELDS = ["Package", "Version", "Architecture", "source:Package", "source:Version", "Homepage",
          "Status"]


def packages(rootfs):
    admin = os.path.join(rootfs, "var", "lib", "dpkg")
    out = subprocess.run(["dpkg-query", "--admindir", admin, "-W", "-f",
                          "\t".join("${%s}" % f for f in FIELDS) + "\n"],
                         check=True, capture_output=True, text=True).stdout
    rows = [dict(zip(FIELDS, line.split("\t"))) for line in out.splitlines() if line]
    rows = [r for r in rows if r["Status"].endswith(" installed")]
    if not rows:
        sys.exit("sbom.py: dpkg-query lists no installed package in %s" % admin)
    return sorted(rows, key=lambda r: r["Package"])


def component(r):
    purl = "pkg:deb/debian/%s@%s?arch=%s&distro=debian-12" % (
        r["Package"], r["Version"].replace(":", "%3A"), r["Architecture"])
    c = {"type": "library", "bom-ref": purl, "name": r["Package"], "version": r["Version"],
         "purl": purl, "publisher": "Debian"}
    props = [{"name": "debian:source", "value": "%s %s" % (r["source:Package"],
                                                           r["source:Version"])}]
    c["properties"] = props
    if r["Homepage"]:
        c["externalReferences"] = [{"type": "website", "url": r["Homepage"]}]
    return c


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[3])
    rootfs, version, commit = sys.argv[1:]
    comps = [component(r) for r in packages(rootfs)]
    me = "pkg:oci/gpuledger@%s?repository_url=ghcr.io/gpuledger/gpuledger" % version
    seed = hashlib.sha256(json.dumps([version, commit, comps], sort_keys=True).encode())
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0") or 0)
    doc = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": "urn:uuid:%s" % uuid.UUID(bytes=seed.digest()[:16], version=4),
        "version": 1,
        "metadata": {
            "timestamp": datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
            .strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tools": {"components": [{"type": "application", "name": "packaging/sbom.py"}]},
            "component": {"type": "container", "bom-ref": me, "name": "gpuledger",
                          "version": version, "purl": me,
                          "licenses": [{"license": {"id": "Apache-2.0"}}],
                          "properties": [{"name": "vcs:commit", "value": commit}]},
        },
        "components": comps,
        "dependencies": [{"ref": me, "dependsOn": [c["bom-ref"] for c in comps]}],
    }
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
