#!/usr/bin/env bash
# Cuts a release of the commit checked out: five artifacts in OUT
# (docs/release.md):
#
#   gpuledger-VERSION.tar.gz            the source (git archive of HEAD)
#   gpuledger-VERSION-image.oci.tar     the OCI image (packaging/build-image.sh)
#   gpuledger-VERSION.tgz               the Helm chart (helm package)
#   gpuledger-VERSION-sbom.cdx.json     CycloneDX SBOM of the image's packages
#   SHA256SUMS                          the checksums of the four
#
#   packaging/release.sh [--out DIR] [--work DIR] [--rootfs DIR] [--build DIR]
#
# OUT defaults to build/release/dist; --work, --rootfs and --build go to
# build-image.sh. VERSION is meson.build's; the chart must carry it. A work
# tree with uncommitted changes is refused (the tarball is HEAD's, the image
# would not be): ALLOW_DIRTY=1 builds anyway, for a trial. HELM names the
# helm binary (default: helm on PATH).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/release/dist
pass=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --work|--rootfs|--build) pass+=("$1" "$2"); shift 2 ;;
    *) echo "release.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
die() { echo "release.sh: $*" >&2; exit 1; }

if [ -n "$(git -C "$root" status --porcelain)" ] && [ "${ALLOW_DIRTY:-}" != 1 ]; then
  die "the work tree has uncommitted changes (the source tarball is HEAD's): commit them, or set ALLOW_DIRTY=1 for a trial"
fi
version=$(meson introspect --projectinfo "$root/meson.build" |
          python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
for key in version appVersion; do
  v=$(sed -n "s/^$key: *\"\\{0,1\\}\\([^\"]*\\)\"\\{0,1\\}$/\\1/p" "$root/charts/gpuledger/Chart.yaml")
  [ "$v" = "$version" ] || die "charts/gpuledger/Chart.yaml $key is '$v', meson.build's version is $version"
done
commit=$(git -C "$root" rev-parse --short=12 HEAD)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
git -C "$root" archive --format=tar.gz --prefix="gpuledger-$version/" \
  -o "$out/gpuledger-$version.tar.gz" HEAD
"$root/packaging/build-image.sh" --out "$out" "${pass[@]}" | tee "$out/.image.log" | grep '^#' || true
image=$(tail -n 1 "$out/.image.log")
rm -f "$out/.image.log"
[ -f "$image" ] || die "build-image.sh wrote no image"
"${HELM:-helm}" package "$root/charts/gpuledger" --destination "$out" >/dev/null
work=$root/build/release
for ((i = 0; i < ${#pass[@]}; i += 2)); do
  [ "${pass[i]}" = --work ] && work=${pass[i+1]}
done
python3 "$root/packaging/sbom.py" "$work/stage" "$version" "$commit" \
  > "$out/gpuledger-$version-sbom.cdx.json"
(cd "$out" && sha256sum "gpuledger-$version.tar.gz" "gpuledger-$version-image.oci.tar" \
   "gpuledger-$version.tgz" "gpuledger-$version-sbom.cdx.json" > SHA256SUMS)
echo "# release $version (commit $commit) in $out:"
for f in "gpuledger-$version.tar.gz" "gpuledger-$version-image.oci.tar" \
         "gpuledger-$version.tgz" "gpuledger-$version-sbom.cdx.json" SHA256SUMS; do
  printf '#   %-34s %10d bytes\n' "$f" "$(stat -c %s "$out/$f")"
done
