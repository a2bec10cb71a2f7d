#!/usr/bin/env bash
# bench/collect.sh - collection benchmark: `gpuledger collect` of a generated
# 64-GPU cluster (7 days at 60 s) from a real Prometheus, next to plain curl
# downloading the very same query_range requests in the same run (the
# transfer floor): samples/s, peak RSS and the engine/curl ratios, then the
# engine's invoice totals checked against the generator's expected.json.
# The request list is recorded from the engine itself (one unmeasured run
# through a proxy); curl replays it sequentially on one connection, and also
# with --parallel-max K when the engine had K > 1 requests in flight.
# Not part of tests/run.sh. Details: bench/collect_bench.py.
#
# Usage: bench/collect.sh [--repeat N] [--days N] [--keep]
#   --repeat N   measured engine + curl rounds (default 3; the median is shown)
#   --days N     scenario length (default 7)
#   --keep       keep the run directory (databases, logs, configs)
# Environment: BENCH_DIR (default /tmp/gpuledger-bench) holds the caches and
# the run directory: generator output under $BENCH_DIR/gen/<hash of scenario +
# gencluster.py>, the backfilled (and once compacted) TSDB under
# $BENCH_DIR/tsdb/<hash of data.om + promtool version>, so only the first run
# pays for generation and backfill (about 4 minutes for 7 days).
#
# stdout: the result table and the invoice check; progress goes to stderr.
# Exit status: 0 when every run collected and all invoice totals match,
# 1 otherwise.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/gpuledger-bench}
REPEAT=3
DAYS=7
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) REPEAT=$2; shift 2 ;;
    --days) DAYS=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--repeat N] [--days N] [--keep]" >&2; exit 2 ;;
  esac
done

log() { printf '# %s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

# ---- dependencies and build
if [ -f "$REPO/tests/deps.sh" ]; then
  # shellcheck source=/dev/null
  . "$REPO/tests/deps.sh"
fi
if declare -F gl_install_deps >/dev/null; then
  gl_install_deps time || die "could not install the build/bench dependencies"
elif [ ! -x /usr/bin/time ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq time >/dev/null 2>&1 \
    || die "/usr/bin/time is missing and 'apt-get install time' failed"
fi
if ! declare -F gl_free_port >/dev/null; then
  gl_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
  }
fi
for tool in prometheus promtool curl python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || die "$tool not found"
done

log "building the engine (meson/ninja)"
cd "$REPO"
if [ ! -f build/build.ninja ]; then
  meson setup build >&2 || die "meson setup failed"
fi
BIN=$REPO/build/gpuledger
BUILD_NOTE=""
if ! ninja -C build gpuledger >&2; then
  # other work in progress may break the build; an existing binary still benchmarks
  [ -x "$BIN" ] || die "ninja -C build gpuledger failed and there is no $BIN"
  BUILD_NOTE="WARNING: the engine build failed; benchmarking the existing $BIN ($(date -u -r "$BIN" +%FT%TZ))"
  log "$BUILD_NOTE"
fi

# ---- scenario, generated data and backfilled TSDB (cached)
# Generator output: $BENCH_DIR/gen/<hash of scenario + gencluster.py>;
# TSDB: $BENCH_DIR/tsdb/<hash of data.om + promtool version>, so a generator
# change that leaves the data alone costs a regeneration but no backfill.
mkdir -p "$BENCH_DIR/gen" "$BENCH_DIR/tsdb"
SCEN=$BENCH_DIR/scenario-${DAYS}d.json
python3 "$REPO/bench/make_scenario.py" "$SCEN" --days "$DAYS"
GENKEY=$(cat "$SCEN" "$REPO/tests/gen/gencluster.py" | sha256sum | cut -c1-16)
GEN=$BENCH_DIR/gen/$GENKEY
RUN=$BENCH_DIR/run
PROM_PID=""
CHILD_PID=""

# run_step CMD...: run a long step in the background and wait for it, so that INT
# and TERM reach the trap at once (bash defers traps until a foreground
# child exits); the trap stops the step.
run_step() {
  local rc=0
  "$@" &
  CHILD_PID=$!
  wait "$CHILD_PID" || rc=$?
  CHILD_PID=""
  return $rc
}

# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local rc=$?
  if [ -n "$CHILD_PID" ] && kill -0 "$CHILD_PID" 2>/dev/null; then
    kill "$CHILD_PID" 2>/dev/null || true
    wait "$CHILD_PID" 2>/dev/null || true
  fi
  if [ -n "$PROM_PID" ] && kill -0 "$PROM_PID" 2>/dev/null; then
    kill "$PROM_PID" 2>/dev/null || true
    wait "$PROM_PID" 2>/dev/null || true
  fi
  PROM_PID=""
  if [ "$KEEP" = 0 ] && [ -d "$RUN" ]; then rm -rf "$RUN"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_prometheus TSDB LOG: sets PROM_PID and PROM_URL, waits for /-/ready.
start_prometheus() {
  local tsdb=$1 logf=$2 cfg port
  cfg=$(dirname "$logf")/prometheus.yml
  echo 'global: {scrape_interval: 1h}' >"$cfg"
  for _ in 1 2 3; do
    port=$(gl_free_port)
    prometheus --config.file="$cfg" --storage.tsdb.path="$tsdb" \
      --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" \
      --query.lookback-delta=59s </dev/null >>"$logf" 2>&1 &
    PROM_PID=$!
    PROM_URL=http://127.0.0.1:$port
    for _ in $(seq 1 300); do
      kill -0 "$PROM_PID" 2>/dev/null || break
      if curl -s -o /dev/null -w '%{http_code}' "$PROM_URL/-/ready" 2>/dev/null | grep -q 200; then
        return 0
      fi
      sleep 0.2
    done
    kill "$PROM_PID" 2>/dev/null || true
    wait "$PROM_PID" 2>/dev/null || true
    PROM_PID=""
  done
  tail -5 "$logf" >&2
  die "prometheus did not become ready (log: $logf)"
}

stop_prometheus() {
  if [ -n "$PROM_PID" ]; then
    kill "$PROM_PID" 2>/dev/null || true
    wait "$PROM_PID" 2>/dev/null || true
    PROM_PID=""
  fi
}

nblocks() { find "$1" -mindepth 2 -maxdepth 2 -name meta.json 2>/dev/null | wc -l; }

# promtool re-reads the whole file once per block it writes: 18 h blocks
# (the largest Prometheus block range <= 24 h) instead of the default 2 h
# make a 7-day backfill about 6x faster. Prometheus compacts them further.
BACKFILL_FLAGS="--max-block-duration=24h"
T0=$(date +%s)
TSDB=""
if [ -f "$GEN/.complete" ] && [ -f "$BENCH_DIR/tsdb/$(cat "$GEN/tsdb.key")/.complete" ]; then
  TSDB=$BENCH_DIR/tsdb/$(cat "$GEN/tsdb.key")
else
  rm -rf "$GEN"
  log "generating $SCEN (64 GPUs, $DAYS days at 60 s: about 10 s per day of data)"
  run_step python3 "$REPO/tests/gen/gencluster.py" "$SCEN" "$GEN" >&2 || die "gencluster failed"
  { sha256sum <"$GEN/data.om" | cut -c1-16; promtool --version 2>&1 | head -1; echo "$BACKFILL_FLAGS"; } \
    | sha256sum | cut -c1-16 >"$GEN/tsdb.key"
  TSDB=$BENCH_DIR/tsdb/$(cat "$GEN/tsdb.key")
fi
if [ ! -f "$TSDB/.complete" ]; then
  rm -rf "$TSDB"
  mkdir -p "$TSDB"
  log "backfilling $(du -h "$GEN/data.om" | cut -f1) of OpenMetrics with promtool (about 20 s per day)"
  # shellcheck disable=SC2086
  run_step promtool tsdb create-blocks-from openmetrics -q $BACKFILL_FLAGS "$GEN/data.om" "$TSDB/data" >&2 \
    || die "promtool backfill failed"
  # Prometheus compacts the backfilled blocks about a minute after it
  # starts; let it do that now, once, so that measured runs never overlap it.
  log "letting prometheus compact the $(nblocks "$TSDB/data") backfilled blocks (once, about 90 s)"
  start_prometheus "$TSDB/data" "$TSDB/prometheus-compact.log"
  run_step sleep 62
  last=-1; stable=0
  for _ in $(seq 1 150); do
    n=$(nblocks "$TSDB/data")
    if [ "$n" = "$last" ]; then stable=$((stable + 1)); else stable=0; fi
    last=$n
    [ $stable -ge 5 ] && break
    sleep 2
  done
  stop_prometheus
  log "TSDB ready: $(nblocks "$TSDB/data") blocks, $(du -sh "$TSDB/data" | cut -f1)"
  touch "$TSDB/.complete"
fi
rm -f "$GEN/data.om"
touch "$GEN/.complete"
if [ "$(( $(date +%s) - T0 ))" -gt 5 ]; then log "data ready after $(( $(date +%s) - T0 )) s (cached for next runs)"; fi
log "data: $GEN, TSDB: $TSDB"

# ---- the measured run
rm -rf "$RUN"
mkdir -p "$RUN"
# a private copy: other work may rebuild build/gpuledger while we measure
cp "$BIN" "$RUN/gpuledger"
log "starting prometheus"
start_prometheus "$TSDB/data" "$RUN/prometheus.log"
log "prometheus ready on $PROM_URL (pid $PROM_PID)"
rc=0
[ -z "$BUILD_NOTE" ] || echo "$BUILD_NOTE"
echo "engine: $BIN built $(date -u -r "$BIN" +%FT%TZ) (repo HEAD $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$REPO" diff --quiet HEAD -- engine 2>/dev/null || echo ', engine/ has uncommitted changes')); $(nproc) CPUs"
run_step python3 "$REPO/bench/collect_bench.py" --bin "$RUN/gpuledger" --url "$PROM_URL" \
  --gen "$GEN" --queries "$REPO/queries" --work "$RUN" --repeat "$REPEAT" || rc=$?
stop_prometheus
exit $rc
