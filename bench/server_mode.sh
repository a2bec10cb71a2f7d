#!/usr/bin/env bash
# bench/server_mode.sh - collection.mode "raw" vs "server":
# `gpuledger collect` of the generated 64-GPU benchmark cluster
# (bench/make_scenario.py, default 30 days at 60 s) from a real Prometheus,
# once per mode, printing next to each other: engine CPU (user+sys), wall,
# peak RSS, bytes transferred (decompressed response bytes, the engine's own
# count), and Prometheus's own query time (the query log's execTotalTime
# summed over the run's requests); then checks that the two databases hold
# the same usage rows. Not part of tests/run.sh.
#
# Usage: bench/server_mode.sh [--days N] [--server-chunk-hours H]
#        [--gpus-per-node G] [--perf] [--keep]
# (--server-chunk-hours: collection.chunk_hours of the server-mode collect,
# default 24: its hourly figures carry each series' labels once per chunk;
# the raw collect keeps the scenario's 6; --gpus-per-node: make_scenario.py's
# smaller fleet of 8 x G GPUs with the same features, G of 2, 4 or 6, for a
# 30-day window whose generation and backfill would take an hour at 64;
# --perf: each collect under `perf record --call-graph dwarf`, and the share
# of its samples in the store (collect.c store_range, which writes a chunk,
# and gl_store_close's checkpoint: the same rows in both modes) printed, so
# that the collection proper (fetch, parse, planning, integration) is
# compared without it)
# Environment: BENCH_DIR (default /tmp/gpuledger-bench) caches the generated
# data and the backfilled TSDB (a 30-day backfill takes a long while once);
# BENCH_BIN: the gpuledger binary to measure (default: this tree's build),
# for a baseline measured on the same data.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/gpuledger-bench}
DAYS=30
KEEP=0
SCH=24
PER=8
PERF=0
while [ $# -gt 0 ]; do
  case "$1" in
    --days) DAYS=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --server-chunk-hours) SCH=$2; shift 2 ;;
    --gpus-per-node) PER=$2; shift 2 ;;
    --perf) PERF=1; shift ;;
    *) echo "usage: $0 [--days N] [--server-chunk-hours H] [--gpus-per-node G] [--perf] [--keep]" >&2
       exit 2 ;;
  esac
done
log() { printf '# %s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
for tool in prometheus promtool curl python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
cd "$REPO"
if [ -n "${BENCH_BIN:-}" ]; then
  BIN=$BENCH_BIN # another build (a baseline) instead of this tree's
else
  [ -f build/build.ninja ] || meson setup build >&2
  ninja -C build gpuledger >&2 || die "build failed"
  BIN=$REPO/build/gpuledger
fi
mkdir -p "$BENCH_DIR/gen" "$BENCH_DIR/tsdb"
SCEN=$BENCH_DIR/scenario-${DAYS}d-$((8 * PER))gpu.json
# (the expected figures are one billing period's: a window of more than
# 26 days starts on the 1st instead of make_scenario's default 5th)
START=2026-10-05T00:00:00Z
[ "$DAYS" -gt 26 ] && START=2026-10-01T00:00:00Z
python3 bench/make_scenario.py "$SCEN" --days "$DAYS" --start "$START" --gpus-per-node "$PER"
KEY=$(cat "$SCEN" tests/gen/gencluster.py | sha256sum | cut -c1-16)
GEN=$BENCH_DIR/gen/srv-$KEY
TSDB=$BENCH_DIR/tsdb/srv-$KEY
if [ ! -f "$TSDB/.complete" ]; then
  rm -rf "$GEN" "$TSDB"
  log "generating and backfilling $DAYS days (cached in $BENCH_DIR)"
  python3 tests/gen/gencluster.py "$SCEN" "$GEN" >&2 || die "gencluster failed"
  promtool tsdb create-blocks-from openmetrics --max-block-duration=24h "$GEN/data.om" "$TSDB" \
    >/dev/null || die "backfill failed"
  touch "$TSDB/.complete"
fi
RUN=$(mktemp -d "$BENCH_DIR/srvrun.XXXXXX")
PROM_PID=""
cleanup() {
  [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null
  [ "$KEEP" = 1 ] || rm -rf "$RUN"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
printf 'global: {scrape_interval: 1h, query_log_file: %s}\n' "$RUN/queries.log" >"$RUN/prometheus.yml"
prometheus --config.file="$RUN/prometheus.yml" --storage.tsdb.path="$TSDB" \
  --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$PORT" \
  --query.lookback-delta=59s </dev/null >"$RUN/prom.log" 2>&1 &
PROM_PID=$!
for _ in $(seq 1 300); do
  curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/-/ready" 2>/dev/null | grep -q 200 && break
  sleep 0.2
done
read -r FROM TO <<<"$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["window"]; print(e["from"], e["to"])' "$GEN/expected.json")"
for mode in raw server; do
  python3 - "$GEN/config.json" "$RUN/config-$mode.json" "http://127.0.0.1:$PORT" "$GEN" "$mode" "$SCH" <<'PY'
import json, os, sys
src, dst, url, gen, mode, sch = sys.argv[1:]
c = json.load(open(src))
c["prometheus"]["url"] = url
c["prices"]["file"] = os.path.join(gen, "prices.csv")
c.setdefault("collection", {})["mode"] = mode
if mode == "server":
    c["collection"]["chunk_hours"] = int(sch)
json.dump(c, open(dst, "w"))
PY
  : >"$RUN/queries.log"
  log "collect, mode $mode"
  PREFIX=()
  [ "$PERF" = 1 ] && PREFIX=(perf record -q -F 499 --call-graph dwarf -o "$RUN/perf-$mode.data" --)
  "${PREFIX[@]}" /usr/bin/time -f '%U %S %e %M' -o "$RUN/time-$mode" "$BIN" \
    --config "$RUN/config-$mode.json" --db "$RUN/$mode.db" collect --from "$FROM" --to "$TO" \
    2>"$RUN/err-$mode" >/dev/null || { tail -5 "$RUN/err-$mode" >&2; die "collect ($mode) failed"; }
  if [ "$PERF" = 1 ]; then
    perf report -i "$RUN/perf-$mode.data" --children --sort symbol -g none --stdio 2>/dev/null |
      awk '/ store_range( |$)| gl_store_close( |$)/ { sub("%", "", $1); s += $1 } END { printf "%.2f\n", s }' \
      >"$RUN/store-$mode"
  fi
  python3 - "$RUN/queries.log" >"$RUN/promtime-$mode" <<'PY'
import json, sys
t = 0.0
for line in open(sys.argv[1]):
    try:
        t += json.loads(line)["stats"]["timings"]["execTotalTime"]
    except (ValueError, KeyError):
        pass
print("%.2f" % t)
PY
done
python3 - "$RUN" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("collection", {}).get("chunk_hours", 6))' "$GEN/config.json")" "$SCH" <<'PY'
import os, re, sqlite3, sys
run = sys.argv[1]
res = {}
for mode in ("raw", "server"):
    u, s_, wall, rss = open("%s/time-%s" % (run, mode)).read().split()
    err = open("%s/err-%s" % (run, mode)).read()
    b = sum(int(x) for x in re.findall(r"collect transfer.* bytes=(\d+)", err))
    sv = sum(int(x) for x in re.findall(r" device_hours_server=(\d+)", err))
    rw = sum(int(x) for x in re.findall(r" device_hours_raw=(\d+)", err))
    pt = float(open("%s/promtime-%s" % (run, mode)).read())
    rows = sorted(sqlite3.connect("%s/%s.db" % (run, mode)).execute(
        "SELECT u.hour, u.cluster, u.namespace, u.pod, d.uuid, d.gpu_i_id, u.team, u.kind, "
        "u.quantity, u.estimated, u.first_seen, u.last_seen FROM usage u "
        "JOIN device d ON d.id = u.device_id").fetchall())
    res[mode] = (round(float(u) + float(s_), 2), float(wall), int(rss) // 1024, b, pt, sv, rw, rows)
r, s = res["raw"], res["server"]
print("%-34s %14s %14s %8s" % ("", "raw", "server", "raw/srv"))
print("(collection.chunk_hours: raw %s, server %s)" % (sys.argv[2], sys.argv[3]))
for i, name in enumerate(["engine CPU s (user+sys)", "wall s", "peak RSS MiB",
                          "bytes transferred", "Prometheus query time s"]):
    ratio = r[i] / s[i] if s[i] else float("inf")
    print("%-34s %14s %14s %7.1fx" % (name, r[i], s[i], ratio))
if os.path.exists("%s/store-raw" % run):
    # the store's share of each run's samples (perf), its CPU and the rest
    sh = [float(open("%s/store-%s" % (run, m)).read()) / 100 for m in ("raw", "server")]
    st = [r[0] * sh[0], s[0] * sh[1]]
    rest = [r[0] - st[0], s[0] - st[1]]
    print("%-34s %13.0f%% %13.0f%%" % ("store share of CPU (perf)", 100 * sh[0], 100 * sh[1]))
    print("%-34s %14.2f %14.2f %7.1fx" % ("  store CPU s", st[0], st[1],
                                           st[0] / st[1] if st[1] else float("inf")))
    print("%-34s %14.2f %14.2f %7.1fx" % ("  collection CPU s (without store)", rest[0], rest[1],
                                           rest[0] / rest[1] if rest[1] else float("inf")))
print("device-hours from hourly sums (server mode): %d, raw: %d" % (s[5], s[6]))
same = r[7] == s[7]
print("usage rows: %d raw, %d server: %s" % (len(r[7]), len(s[7]), "equal" if same else "DIFFERENT"))
sys.exit(0 if same else 1)
PY
