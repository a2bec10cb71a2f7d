#!/bin/bash
# alternate.sh - two or more engine binaries' collect CPU, run by run in turn
# on the same data (a shared or drifting machine slows every binary of one
# round alike, not one binary's back-to-back runs).
#
# Usage: N=5 bench/alternate.sh CONFIG FROM TO BIN [BIN...]
#   CONFIG  a gpuledger config whose prometheus.url serves the data (e.g. a
#           fleet of bench/scale.py --keep: WORK/fleet-N/collect.json)
#   FROM TO the collect window (RFC 3339)
# Prints per binary the mean and least CPU (user+sys, GNU time) and wall of
# N fresh collects (default 5), each into a new database.
set -euo pipefail
[ $# -ge 4 ] || { sed -n 2,12p "$0" >&2; exit 2; }
cfg=$1 from=$2 to=$3
shift 3
n=${N:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 1 "$n"); do
  for b in "$@"; do
    rm -f "$tmp"/c.db*
    /usr/bin/time -f "%U %S %e" -o "$tmp/t" "$b" --config "$cfg" --db "$tmp/c.db" --quiet \
      collect --from "$from" --to "$to"
    echo "$b $(awk '{print $1 + $2, $3}' "$tmp/t")"
  done
done | awk '{c[$1] += $2; w[$1] += $3; k[$1]++; if (!($1 in m) || $2 < m[$1]) m[$1] = $2}
  END {for (b in k) printf "%s: CPU mean %.3f s, least %.3f s; wall mean %.3f s (%d runs)\n",
       b, c[b] / k[b], m[b], w[b] / k[b], k[b]}'
