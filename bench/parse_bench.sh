#!/usr/bin/env bash
# The matrix parser's cost, yajl (the engine's) against the cJSON tree it
# replaced: µs per sample and peak RSS on one generated query_range body.
#   bench/parse_bench.sh [SERIES [STEPS]]      (default 10000 x 720: ~150 MiB)
# Needs the release build (meson setup build && ninja -C build); compiles
# bench/parse_bench.c against build/libgpuledger_engine.a into build/.
set -eu
cd "$(dirname "$0")/.."
ninja -C build >/dev/null
cc -O2 -std=c11 -D_DEFAULT_SOURCE -Ibuild -Iengine bench/parse_bench.c \
  build/libgpuledger_engine.a $(pkg-config --cflags --libs libcjson yajl libpcre2-8) \
  -lm -o build/parse_bench
for path in cjson yajl; do
  build/parse_bench "$path" "$@"
done
