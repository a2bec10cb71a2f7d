#!/usr/bin/env bash
# Line coverage of engine/ by the test suites: builds the engine with gcov
# instrumentation (-Db_coverage=true, in build-coverage), runs the suites of
# tests/runner.py against it once each (no sanitizer pass: the ASan rows run
# the same paths as their plain rows), then prints gcovr's summary of the
# files under engine/. The figure to compare between two commits is the
# "lines:" one; both runs should end with no failed check (a suite that
# stops early covers less).
#
#   tests/coverage.sh                      every suite
#   tests/coverage.sh --only unit focus    the suites named, or with a tag
#   tests/coverage.sh --json FILE ...      also write gcovr's JSON tracefile
#
# Tracefiles of separate runs combine into the coverage of their union:
#   gcovr -r . --filter 'engine/' -a A.json -a B.json -s
# Needs gcovr (Debian package gcovr); the suites' own tools as ./tests/run.sh.
# The scenario and image caches are shared with ./tests/run.sh's
# (build/test-cache) unless GL_TEST_CACHE names another.
set -u
cd "$(dirname "$0")/.."
json=""
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --json) json=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
command -v gcovr >/dev/null || { echo "coverage.sh: gcovr is missing (apt-get install gcovr)" >&2; exit 2; }
dir=build-coverage
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" -Db_coverage=true >"$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
fi
ninja -C "$dir" >"$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
# the release binary the image and manifests suites share, as run.sh builds it
if python3 tests/runner.py --wants-release "${args[@]}"; then
  if [ ! -f build-release/build.ninja ]; then
    meson setup build-release --buildtype=release -Dqueries_dir=/usr/share/gpuledger/queries \
      >build-release.log 2>&1 || { cat build-release.log; exit 1; }
  fi
  ninja -C build-release gpuledger >build-release.log 2>&1 || { cat build-release.log; exit 1; }
fi
# counters from an earlier run would add to this one's
find "$dir" -name '*.gcda' -delete
export GL_TEST_CACHE=${GL_TEST_CACHE:-$(pwd)/build/test-cache}
python3 tests/runner.py --build "$dir" --no-asan "${args[@]}" > "$dir/suites.log"
rc=$?
grep -E '^(not ok|# [0-9]+ suites in)' "$dir/suites.log"
tail -n 1 "$dir/suites.log"
out=()
[ -n "$json" ] && out=(--json "$json")
gcovr -r . --filter 'engine/' "${out[@]}" -s "$dir" | grep -E '^(lines|functions|branches):'
exit $rc
