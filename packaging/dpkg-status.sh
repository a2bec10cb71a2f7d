#!/bin/sh
# mmdebstrap extract hook (packaging/rootfs.sh): ROOTFS/var/lib/dpkg/status
# from the control fields of the packages that were unpacked, so that
# dpkg-query and image scanners see them. The extract variant runs no
# maintainer script; these packages need none at run time (shared libraries,
# certificates whose bundle rootfs.sh writes, zone files).
set -eu
root=$1
status="$root/var/lib/dpkg/status"
: > "$status"
for deb in "$root"/var/cache/apt/archives/*.deb; do
  dpkg-deb --field "$deb" | sed '1a Status: install ok installed' >> "$status"
  echo >> "$status"
done
[ -s "$status" ] || { echo "dpkg-status.sh: no package found in $root/var/cache/apt/archives" >&2; exit 1; }
