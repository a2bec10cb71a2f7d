-- gpuledger schema 009: what `close` checks besides the collected hours, and
-- what a forced close found missing. Applied by engine/ledger/store.c after the
-- earlier files; IF NOT EXISTS so the file applies whatever number the
-- migration list gives it.
--
-- A period closes only when every hour of it is collected for every
-- configured cluster (collected_hour), each cluster's collection reaches
-- close.settle_hours past its end, and no hour of it has a refused
-- collection outstanding (README "Closing a month").

-- Hours whose last collection by `collect` was refused or failed: the shrink
-- guard kept the stored data (reason "shrink"), or the backend failed the
-- chunk, e.g. a partial response refused (reason "backend"). Written by
-- `collect` after the failed chunk's transaction rolled back; an hour stays
-- here until it is stored again (the trigger below). `run` records none: a
-- failed chunk stops its watermark, which `close` checks.
CREATE TABLE IF NOT EXISTS refused_hour (
    cluster    TEXT NOT NULL,
    hour       INTEGER NOT NULL,   -- unix seconds, a whole UTC hour
    refused_at INTEGER NOT NULL,   -- unix seconds
    reason     TEXT NOT NULL,      -- shrink | backend
    PRIMARY KEY (cluster, hour)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS refused_hour_stored AFTER INSERT ON collected_hour BEGIN
    DELETE FROM refused_hour WHERE cluster = NEW.cluster AND hour = NEW.hour;
END;

-- A period closed with `close --force` although incomplete: per cluster the
-- ranges [start_hour, end_hour) that were not collected (missing), whose
-- collection was refused (refused), or the part of the settle delay its
-- collection had not reached (unsettled). Written in close's transaction;
-- every output of the period states them (the stored texts include them).
CREATE TABLE IF NOT EXISTS closed_gap (
    period     TEXT NOT NULL,      -- closed_period.period
    seq        INTEGER NOT NULL,
    cluster    TEXT NOT NULL,
    kind       TEXT NOT NULL,      -- missing | refused | unsettled
    start_hour INTEGER NOT NULL,   -- unix seconds
    end_hour   INTEGER NOT NULL,
    PRIMARY KEY (period, seq)
) WITHOUT ROWID;
