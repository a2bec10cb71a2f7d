#!/usr/bin/env bash
# The README's first command as a suite: ./examples/demo.sh builds, loads the
# example cluster into its own Prometheus and writes every output into
# ./out/; one TAP line says whether it did, and stopped its Prometheus.
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
log=$(mktemp)
if ./examples/demo.sh >"$log" 2>&1 && ls out/invoices/*.json >/dev/null 2>&1 &&
   ls out/focus-*.csv out/summary-*.md out/anomalies-*.md >/dev/null 2>&1 &&
   ls out/reports/fleet-*.html >/dev/null 2>&1 && ! pgrep -f "storage.tsdb.path=$root/out/tsdb" >/dev/null; then
  echo "ok - examples/demo.sh writes invoices, FOCUS CSV, summary, anomalies, reports and stops its Prometheus"
else
  echo "not ok - examples/demo.sh"
  tail -n 20 "$log" | sed 's/^/# /'
fi
rm -f "$log"
