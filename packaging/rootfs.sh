#!/usr/bin/env bash
# Assembles the image's root filesystem in DIR from Debian bookworm packages
# (packaging/runtime-packages.txt and their dependencies) with mmdebstrap,
# without a shell, a package manager or a daemon:
#
#   packaging/rootfs.sh DIR
#
# mmdebstrap's "extract" variant only unpacks the packages (no maintainer
# script runs, so nothing needs a chroot); what their scripts would have
# done for these packages is done here: the CA bundle, and a dpkg status
# file so that `dpkg-query --admindir=DIR/var/lib/dpkg` (the SBOM, image
# scanners) lists what is inside. Needs root (mmdebstrap --mode=root).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: packaging/rootfs.sh DIR}
uid=10001

packages=$(grep -v '^#' "$here/runtime-packages.txt" | paste -sd, -)
rm -rf "$dir"
# Manual pages, translations and documentation are not needed at run time;
# the copyright files stay (the licenses of what is shipped).
mmdebstrap --quiet --variant=extract --mode=root --include="$packages" \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/lintian/*' \
  --extract-hook="\"$here/dpkg-status.sh\" \"\$1\"" \
  bookworm "$dir" \
  "deb http://deb.debian.org/debian bookworm main" \
  "deb http://deb.debian.org/debian bookworm-updates main" \
  "deb http://deb.debian.org/debian-security bookworm-security main"

# ca-certificates' postinst: every certificate it ships, enabled (its
# default), in the bundle libcurl and OpenSSL read.
install -d "$dir/etc/ssl/certs"
find "$dir/usr/share/ca-certificates" -name '*.crt' | LC_ALL=C sort | xargs cat \
  > "$dir/etc/ssl/certs/ca-certificates.crt"

# The numeric user the chart runs as (runAsUser/fsGroup), named for ls and id.
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\ngpuledger:x:%d:%d::/var/lib/gpuledger:/usr/sbin/nologin\n' \
  "$uid" "$uid" > "$dir/etc/passwd"
printf 'root:x:0:\ngpuledger:x:%d:\n' "$uid" > "$dir/etc/group"
install -d -m 1777 "$dir/tmp"
install -d -o "$uid" -g "$uid" -m 0750 "$dir/var/lib/gpuledger"
# Nothing of the build's apt state is needed at run time.
rm -rf "$dir/var/cache/apt" "$dir/var/lib/apt" "$dir/var/log"/* "$dir/dev"/*
