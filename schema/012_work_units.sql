-- gpuledger schema 012: units of work per pod and hour (engine/collect/work.c),
-- for the cost per unit of work (`unit-cost`, the team report). Applied by
-- engine/ledger/store.c after the earlier files; IF NOT EXISTS so the file
-- applies whatever number the migration list gives it.
--
-- units: the counter's increase in the hour, an exact integer: the sum of
-- the positive differences between consecutive samples of each of the
-- pod's series, a decrease being a restart counted from 0, each difference
-- in the hour of its later sample, nothing extrapolated. A re-collected
-- hour replaces its rows (engine/ledger/store_work.c).
CREATE TABLE IF NOT EXISTS work_units (
    cluster    TEXT NOT NULL,
    hour       INTEGER NOT NULL,  -- unix seconds, a whole UTC hour
    namespace  TEXT NOT NULL,
    pod        TEXT NOT NULL,
    counter    TEXT NOT NULL,     -- work.counters[].name
    unit       TEXT NOT NULL,     -- tokens, requests, steps or another word
    units      INTEGER NOT NULL,
    gaps       INTEGER NOT NULL,  -- differences taken across a gap longer than the staleness window
    PRIMARY KEY (cluster, hour, namespace, pod, counter, unit)
) WITHOUT ROWID;
