#!/usr/bin/env bash
# What a usage row costs to store: the engine's store (a collect's chunk
# transaction: clear, devices, rows, aggregates, commit) next to SQLite's
# own floor for the same rows, in the same run (bench/store_rows.c).
#   bench/store_rows.sh SOURCE.db [RUNS]
# SOURCE.db: a database a collect wrote, e.g. a fleet of
#   python3 bench/scale.py --sizes 1024 --keep --work DIR   (DIR/fleet-1024/collect-new.db)
# Prints per mode the least CPU us per row of RUNS (default 3) and, with
# valgrind, the instructions per row (callgrind, deterministic).
set -euo pipefail
[ $# -ge 1 ] || { sed -n 2,9p "$0" >&2; exit 2; }
src=$(realpath "$1")
runs=${2:-3}
cd "$(dirname "$0")/.."
ninja -C build >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -g -std=c11 -Ibuild $(for d in engine/*/; do printf -- " -I%s" "$d"; done) -c bench/store_rows.c -o "$tmp/store_rows.o"
c++ "$tmp/store_rows.o" build/libgpuledger_engine.a \
  $(pkg-config --libs sqlite3 libcurl libcjson libpcre2-8 libcrypto) -lboost_json -lcsv -lm \
  -o "$tmp/store_rows"
printf '| mode | rows | CPU us/row (least of %s) | instructions/row |\n|---|---|---|---|\n' "$runs"
for mode in engine text text-fk int rowid; do
  best=
  for i in $(seq 1 "$runs"); do
    rm -f "$tmp"/o.db*
    out=$("$tmp/store_rows" "$src" "$mode" "$tmp/o.db")
    us=$(echo "$out" | sed -n 's/.*devices, \([0-9.]*\) us.*/\1/p')
    rows=$(echo "$out" | sed -n 's/.*: \([0-9]*\) rows.*/\1/p')
    best=$(awk -v a="$best" -v b="$us" 'BEGIN {print (a == "" || b < a) ? b : a}')
  done
  ins=-
  if command -v valgrind >/dev/null; then
    rm -f "$tmp"/o.db*
    ir=$(valgrind --tool=callgrind --toggle-collect=insert_rows --callgrind-out-file=/dev/null \
      "$tmp/store_rows" "$src" "$mode" "$tmp/o.db" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
    ins=$(awk -v a="$ir" -v n="$rows" 'BEGIN {printf "%.0f", a / n}')
  fi
  echo "| $mode | $rows | $best | $ins |"
done
