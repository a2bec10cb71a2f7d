#!/bin/sh
# agg_bench.sh - invoice / export / summary / report / run output stage on a
# month of a GPU fleet, the engine before schema 004 (OLD, reading hourly
# usage rows) next to this build (NEW, reading the aggregates), same run.
#
# Usage: bench/agg_bench.sh OLD_BIN NEW_BIN [GPUS] [DAYS]
#   OLD_BIN: a gpuledger of schema 3 (e.g. main built in /tmp)
#   GPUS (default 1024), DAYS (default 30): the fleet and days of 2026-10
#   OLD_COMMANDS (environment, default all): the commands OLD runs too (the
#   old summary, report and run rescan the month per device: at 1,024 GPUs
#   x 30 days each takes tens of minutes)
#
# The database is written straight with SQLite (schema 001-003, as
# tests/golden/make_db.py does): per GPU and hour one pod's memory_used row,
# the device rows capacity / reserved / idle (reconciling) and the team's
# busy rows, 32 teams, 8 GPUs per node: about 7 rows per GPU-hour, as a
# collected fleet of exclusive GPUs stores. OLD runs on it as written; NEW
# on a copy it migrates (the migration time is printed). Figures: wall
# seconds per command, and database bytes per GPU-month before and after.
set -eu
old=$1 new=$2 gpus=${3:-1024} days=${4:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/gl-aggbench-XXXXXX)
trap 'rm -rf "$work"' EXIT
db=$work/old.db
start=$(date -u -d 2026-10-01T00:00:00Z +%s)
hours=$((days * 24))

for f in "$root"/schema/001_*.sql "$root"/schema/002_*.sql "$root"/schema/003_*.sql; do
    sqlite3 "$db" < "$f"
done
sqlite3 "$db" <<EOF
PRAGMA user_version = 3;

BEGIN;
WITH RECURSIVE d(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM d WHERE j < $gpus)
INSERT INTO device (id, cluster, uuid, gpu_i_id, gpu_i_profile, model, hostname,
                    max_capacity_mib, first_seen, last_seen)
SELECT j, 'east', 'GPU-' || j, '', '', 'NVIDIA A100-SXM4-80GB', 'node-' || (j / 8), 81920,
       $start, $start + $hours * 3600 - 60 FROM d;
WITH RECURSIVE h(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM h WHERE i < $hours - 1),
     d(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM d WHERE j < $gpus),
     x AS (SELECT $start + i * 3600 AS hr, j, (30000 + (i * 7 + j * 13) % 40000) * 3600 AS used
           FROM h, d)
INSERT INTO usage (hour, cluster, namespace, pod, device_id, team, kind, quantity, estimated,
                   first_seen, last_seen)
SELECT hr, 'east', 'ns-' || (j % 32), 'pod-' || j || '-' || (hr / 86400), j, 'team-' || (j % 32),
       'memory_used', used, 0, hr, hr + 3540 FROM x
UNION ALL SELECT hr, 'east', '', '', j, '', 'capacity', 81920 * 3600, 0, hr, hr + 3540 FROM x
UNION ALL SELECT hr, 'east', '', '', j, '', 'reserved', 615 * 3600, 0, hr, hr + 3540 FROM x
UNION ALL SELECT hr, 'east', '', '', j, '', 'idle', (81920 - 615) * 3600 - used, 0, hr, hr + 3540
          FROM x
UNION ALL SELECT hr, 'east', '', '', j, 'team-' || (j % 32), 'busy_ppm', 600000 * 60, 0, hr,
          hr + 3540 FROM x
UNION ALL SELECT hr, 'east', '', '', j, 'team-' || (j % 32), 'busy_steps', 60, 0, hr, hr + 3540
          FROM x;
INSERT INTO collected_hour SELECT 'east', $start + i * 3600, $start, 0, 0 FROM
  (WITH RECURSIVE h(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM h WHERE i < $hours - 1)
   SELECT i FROM h);
INSERT INTO watermark VALUES ('east', $start + $hours * 3600, $start);
COMMIT;

EOF
cat > "$work/c.json" <<EOF
{"clusters": [{"name": "east", "prometheus": {"url": "http://127.0.0.1:9"}}],
 "collection": {"queries_dir": "$root/queries"},
 "teams": {"rules": [{"pod_label": "team"}], "default": "unallocated"},
 "idle_overhead": {"policy": "proportional", "platform_team": "platform"},
 "run": {"delay_minutes": 10, "repull_hours": 0},
 "prices": {"file": "$root/tests/golden/prices.csv"},
 "billing": {"currency": "USD", "account_id": "a", "account_name": "b", "provider": "c",
             "service_name": "d"}}
EOF
rows=$(sqlite3 "$db" "SELECT count(*) FROM usage")
cp "$db" "$work/new.db"
t() { # label bin db args...: prints wall seconds
    label=$1 bin=$2 d=$3
    shift 3
    s=$(date +%s.%N)
    rc=0
    "$bin" --config "$work/c.json" --db "$d" "$@" > "$work/$label.out" 2> "$work/$label.err" || rc=$?
    e=$(date +%s.%N)
    printf '%s' "$(echo "$e - $s" | bc)"
    [ $rc -eq 0 ] || printf ' (exit %d)' $rc
}
echo "fleet: $gpus GPUs x $days days of 2026-10, $rows usage rows"
mig=$(t migrate "$new" "$work/new.db" summary --period 2099-01)
bytes() { sqlite3 "$1" "PRAGMA wal_checkpoint(TRUNCATE)" > /dev/null; stat -c %s "$1"; }
bo=$(bytes "$db") bn=$(bytes "$work/new.db")
echo "migration to schema 4 (backfill): ${mig} s"
echo "database bytes per GPU-month: old $((bo * 30 / days / gpus)), new $((bn * 30 / days / gpus))"
printf '%-10s %12s %12s\n' command old_s new_s
for c in invoice export summary report run; do
    case $c in
        report) a="report --period 2026-10 --out"; o="$work/rep-old"; n="$work/rep-new" ;;
        run) a="run --now 2026-10-$(printf %02d "$days")T23:30:00Z --out"; o="$work/run-old"
             n="$work/run-new" ;;
        *) a="$c --period 2026-10"; o=""; n="" ;;
    esac
    ro=-
    case " ${OLD_COMMANDS:-invoice export summary report run} " in
        *" $c "*)
            # shellcheck disable=SC2086
            ro=$(t "old-$c" "$old" "$db" $a $o) ;;
    esac
    # shellcheck disable=SC2086
    rn=$(t "new-$c" "$new" "$work/new.db" $a $n)
    printf '%-10s %12s %12s\n' "$c" "$ro" "$rn"
    case $c in
        invoice|export|summary) [ "$ro" = - ] || cmp -s "$work/old-$c.out" "$work/new-$c.out" ||
            echo "  $c: OUTPUTS DIFFER" ;;
        report) [ "$ro" = - ] || diff -r "$work/rep-old" "$work/rep-new" > /dev/null || echo "  report: OUTPUTS DIFFER" ;;
    esac
done
