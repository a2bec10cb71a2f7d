#!/usr/bin/env bash
# The matrix parser's cost, the engine's (streaming) against the cJSON tree it
# replaced: µs per sample and peak RSS on one generated query_range body.
#   bench/parse_bench.sh [SERIES [STEPS]]      (default 10000 x 720: ~150 MiB)
# Needs the release build (meson setup build && ninja -C build); compiles
# bench/parse_bench.c against build/libgpuledger_engine.a into build/.
set -eu
cd "$(dirname "$0")/.."
ninja -C build >/dev/null
cc -O2 -std=c11 -D_DEFAULT_SOURCE -Ibuild $(for d in engine/*/; do printf -- " -I%s" "$d"; done) -c bench/parse_bench.c -o build/parse_bench.o
c++ build/parse_bench.o build/libgpuledger_engine.a \
  $(pkg-config --libs libcjson libpcre2-8) -lboost_json -lm -o build/parse_bench
for path in cjson engine; do
  build/parse_bench "$path" "$@"
done
