#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, in build-fuzz/) and runs
# each for a bounded time. TAP: one line per target, "ok" when the run ended
# without a finding, "not ok" with the reason and the reproducer's path.
# Without clang/libFuzzer every target is "ok ... # SKIP" (a failure when
# CI=true). Not part of ./tests/run.sh, which replays the corpora and the
# regressions (the replay-* suites); run it for a longer search:
#
# usage: tests/fuzz/run.sh [--minutes N | -t SECONDS] [-c CORPUS_DIR] [TARGET ...]
#   --minutes N  minutes per target
#   -t  seconds per target (default $GL_FUZZ_SECONDS or 60)
#   -c  keep the corpus the fuzzer grows in CORPUS_DIR/TARGET (default: a
#       fresh folder per run, removed afterwards)
#   TARGET  matrix, config, prices (default: all three)
# Reproducers go to build-fuzz/fuzz-artifacts/; replay one with
#   build-fuzz/tests/fuzz/fuzz_TARGET FILE
set -u
cd "$(dirname "$0")/../.."
root=$(pwd)
secs=${GL_FUZZ_SECONDS:-60}
keep=""
if [ "${1:-}" = "--minutes" ]; then
  case "${2:-}" in
    ''|*[!0-9]*) echo "usage: $0 --minutes N [TARGET ...]" >&2; exit 2 ;;
  esac
  secs=$(( $2 * 60 )); shift 2
fi
while getopts "t:c:" opt; do
  case $opt in
    t) secs=$OPTARG ;;
    c) keep=$OPTARG ;;
    *) echo "usage: $0 [-t SECONDS] [-c CORPUS_DIR] [TARGET ...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(matrix config prices)
dir=build-fuzz

skip_all() {
  for t in "${targets[@]}"; do echo "ok - fuzz $t # SKIP $1"; done
  exit 0
}

# clang and its libFuzzer runtime (Debian: clang, libclang-rt-14-dev)
command -v clang >/dev/null 2>&1 || skip_all "clang is not installed"
probe=$(mktemp -d)
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
  >"$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >"$probe/log" 2>&1; then
  why=$(head -c 300 "$probe/log" | tr '\n' ' ')
  rm -rf "$probe"
  skip_all "clang cannot link a libFuzzer+ASan+UBSan program (libclang-rt-14-dev missing?): $why"
fi
rm -rf "$probe"

# build (a configured build-fuzz is reused)
t0=$(date +%s)
if [ ! -f "$dir/build.ninja" ]; then
  if ! CC=clang CXX=clang++ meson setup "$dir" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
      >"$dir.log" 2>&1; then
    echo "not ok - fuzz build: meson setup failed: $(tail -n 5 "$dir.log" | tr '\n' ' ')"
    exit 1
  fi
fi
if ! ninja -C "$dir" "${targets[@]/#/tests/fuzz/fuzz_}" >"$dir.log" 2>&1; then
  echo "not ok - fuzz build: $(grep -m3 -i 'error' "$dir.log" | tr '\n' ' ')"
  exit 1
fi
echo "ok - fuzz build (clang, ASan+UBSan, $(( $(date +%s) - t0 )) s)"

arts="$dir/fuzz-artifacts"
mkdir -p "$arts"
failed=0
for t in "${targets[@]}"; do
  if [ -n "$keep" ]; then corpus="$keep/$t"; mkdir -p "$corpus"; else corpus=$(mktemp -d); fi
  log="$arts/$t.log"
  prefix="$arts/$t-$(date +%Y%m%dT%H%M%S)-"
  start=$(date +%s)
  # leaks are findings; a UBSan report ends the run like an ASan one
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    timeout $((secs + 120)) "$dir/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 \
    -rss_limit_mb=2048 -dict="tests/fuzz/dict/$t.dict" -artifact_prefix="$prefix" \
    -print_final_stats=1 "$corpus" "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" \
    >"$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  [ -z "$keep" ] && rm -rf "$corpus"
  repro=$(ls "$prefix"* 2>/dev/null | head -n 1)
  if [ $rc -eq 0 ] && [ -z "$repro" ]; then
    runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    cov=$(grep 'DONE' "$log" | tail -n 1 | grep -o 'cov: [0-9]*')
    echo "ok - fuzz $t: ${runs:-?} inputs in $took s, $cov, no finding"
  else
    failed=$((failed + 1))
    why=$(grep -m1 -E 'fuzz invariant broken|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' "$log")
    [ $rc -eq 124 ] && why="did not stop within $((secs + 120)) s"
    echo "not ok - fuzz $t: ${why:-exit status $rc}; reproducer ${repro:-none}; log $log; replay: $dir/tests/fuzz/fuzz_$t ${repro:-FILE}"
    # the top of the stack, as TAP comments
    grep -E '^ *#[0-9]+ 0x[0-9a-f]+ in ' "$log" \
      | grep -v -E ' in (fuzzer::|__sanitizer|abort|raise|__pthread|__libc|_start|main |fuzz_fail)' \
      | head -n 6 | sed 's/^ */# /'
  fi
done
[ $failed -eq 0 ]
