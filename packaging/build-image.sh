#!/usr/bin/env bash
# Builds gpuledger's OCI image without a container daemon: the release
# binary, a root filesystem of Debian packages (packaging/rootfs.sh), the
# queries and the example configuration, committed by buildah into an OCI
# archive.
#
#   packaging/build-image.sh [--work DIR] [--out DIR] [--rootfs DIR] [--build DIR]
#
#   --work DIR    build folder: release build, staging tree, buildah storage
#                 (default build/release)
#   --build DIR   an existing release build folder of this source tree to
#                 build the binary in instead of WORK/build (tests/run.sh
#                 makes one, build-release, shared by the suites); it must
#                 have been set up with --buildtype=release and
#                 -Dqueries_dir=/usr/share/gpuledger/queries, else it is refused
#   --out DIR     where gpuledger-VERSION-image.oci.tar goes (default build/release/dist)
#   --rootfs DIR  an already assembled packaging/rootfs.sh tree to start
#                 from (copied, not changed); default: assembled in WORK
#
# IMAGE (default ghcr.io/gpuledger/gpuledger) names the image, tagged with
# meson.build's version; SOURCE_URL is the repository's public address (the
# org.opencontainers.image.source label). Needs root, mmdebstrap and buildah
# (tests/deps.sh installs them). The last line of its output is the
# archive's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$root/build/release out=$root/build/release/dist rootfs="" rbuild=""
while [ $# -gt 0 ]; do
  case $1 in
    --work) work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rootfs) rootfs=$2; shift 2 ;;
    --build) rbuild=$2; shift 2 ;;
    *) echo "build-image.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
image=${IMAGE:-ghcr.io/gpuledger/gpuledger}
source_url=${SOURCE_URL:-https://github.com/gpuledger/gpuledger}
# The user of examples/Dockerfile and of the chart's securityContext.
uid=10001
t0=$(date +%s)
mkdir -p "$work" "$out"
work=$(cd "$work" && pwd) out=$(cd "$out" && pwd)

# ---- the release binary: its default query folder is the image's
commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$rbuild" ]; then
  # Another folder's options would give another binary (a debug build, the
  # repository's query folder): only the image's own are accepted.
  [ -f "$rbuild/build.ninja" ] || { echo "build-image.sh: --build $rbuild is no meson build folder" >&2; exit 2; }
  opts=$(meson introspect --buildoptions "$rbuild" | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o.get("buildtype"), o.get("queries_dir"))')
  [ "$opts" = "release /usr/share/gpuledger/queries" ] || {
    echo "build-image.sh: --build $rbuild has buildtype and queries_dir '$opts', not 'release /usr/share/gpuledger/queries'" >&2
    exit 2
  }
  bdir=$(cd "$rbuild" && pwd)
else
  bdir=$work/build
  if [ ! -f "$bdir/build.ninja" ]; then
    meson setup "$bdir" "$root" --buildtype=release \
      -Dqueries_dir=/usr/share/gpuledger/queries -Dcommit="$commit" >/dev/null
  fi
fi
ninja -C "$bdir" gpuledger >/dev/null
version=$(meson introspect --projectinfo "$bdir" |
          python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
epoch=$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)

# ---- the tree: Debian packages, then gpuledger's files
if [ -z "$rootfs" ]; then
  rootfs=$work/rootfs
  "$root/packaging/rootfs.sh" "$rootfs"
fi
stage=$work/stage
rm -rf "$stage"
cp -a "$rootfs" "$stage"
install -D -m 0755 "$bdir/gpuledger" "$stage/usr/local/bin/gpuledger"
strip "$stage/usr/local/bin/gpuledger"
install -d "$stage/usr/share/gpuledger/queries" "$stage/usr/share/gpuledger/examples"
install -m 0644 "$root"/queries/*.promql "$stage/usr/share/gpuledger/queries/"
# The example configuration reads ../queries, i.e. the image's queries.
install -m 0644 "$root/config/gpuledger.example.json" "$root/config/prices.example.csv" \
  "$stage/usr/share/gpuledger/examples/"
install -D -m 0644 "$root/LICENSE" "$stage/usr/share/doc/gpuledger/LICENSE"

# ---- the image: one layer, committed to an OCI archive
storage=$work/buildah
b() { buildah --storage-driver vfs --root "$storage/root" --runroot "$storage/run" "$@"; }
ctr=$(b from --quiet scratch)
trap 'b rm "$ctr" >/dev/null 2>&1 || true' EXIT
mnt=$(b mount "$ctr")
cp -a "$stage/." "$mnt/"
b umount "$ctr" >/dev/null
b config --os linux --arch amd64 --user "$uid:$uid" --workingdir /var/lib/gpuledger \
  --entrypoint '["/usr/local/bin/gpuledger"]' --cmd '--help' \
  --label org.opencontainers.image.title=gpuledger \
  --label "org.opencontainers.image.description=GPU chargeback for Kubernetes: GPU memory GB-hours per team, invoices and FOCUS CSV" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$commit" \
  --label "org.opencontainers.image.source=$source_url" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  "$ctr"
archive=$out/gpuledger-$version-image.oci.tar
rm -f "$archive"
b commit --quiet --format oci --disable-compression=false --timestamp "$epoch" --rm "$ctr" \
  "oci-archive:$archive:$image:$version" >/dev/null
trap - EXIT
echo "# image $image:$version (commit $commit): $(du -sb "$stage" | cut -f1) bytes uncompressed," \
     "archive $(stat -c %s "$archive") bytes, $(( $(date +%s) - t0 )) s"
echo "$archive"
