#!/bin/sh
# fleet_stream_check.sh - bench/fleet_stream.py writes exactly gencluster's
# samples: the sorted sample lines of a 2-copy fleet (128 GPUs, 26 h, one
# copy per shard, so the shard split and the namespaces-once rule are
# exercised) against tests/gen/gencluster.py's single file, and the same
# metric families. Prints OK or the first differences; exit 1 on a mismatch.
# Usage: sh bench/fleet_stream_check.sh   (about 20 s)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
python3 "$here/make_scenario.py" "$w/scn.json" --start 2026-11-29T00:00:00Z --hours 26 \
    --replicate 2
python3 - "$here/../tests/gen" "$w/scn.json" "$w/old.om" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import gencluster
with open(sys.argv[3], "w", encoding="utf-8", newline="\n") as f:
    gencluster.load_scenario(sys.argv[2]).write_openmetrics(f)
PY
python3 "$here/fleet_stream.py" "$w/scn.json" "$w/stream" --om-only --shard-nodes 8 2>/dev/null
export LC_ALL=C
grep -v '^#' "$w/old.om" | sort >"$w/a"
cat "$w"/stream/slice-*.om | grep -v '^#' | sort >"$w/b"
grep '^# TYPE' "$w/old.om" | sort >"$w/ta"
cat "$w"/stream/slice-*.om | grep '^# TYPE' | sort -u >"$w/tb"
for f in "$w"/stream/slice-*.om; do
    [ "$(grep -c '^# EOF$' "$f")" = 1 ] && [ "$(tail -n 1 "$f")" = "# EOF" ] || {
        echo "FAIL: $f does not end in exactly one # EOF"; exit 1; }
done
if cmp -s "$w/a" "$w/b" && cmp -s "$w/ta" "$w/tb"; then
    echo "OK: $(wc -l <"$w/a") sample lines and $(wc -l <"$w/ta") families identical"
else
    echo "FAIL: streamed samples differ from gencluster's"
    diff "$w/a" "$w/b" | head -5
    diff "$w/ta" "$w/tb" | head -5
    exit 1
fi
