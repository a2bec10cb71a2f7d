-- gpuledger schema 008: the last check of each closed period. Applied by engine/ledger/store.c after the earlier files; IF
-- NOT EXISTS so the file applies whatever number the migration list gives it.
--
-- Every `run` checks that the prices do not change a closed month (exit 7
-- unless --reprice-closed), and every output of an open month carries the
-- correction lines of the closed months before it: both recompute the
-- closed month from its aggregates. A row here records that the closed
-- period was recomputed and checked when what its figures depend on had the
-- fingerprint `fingerprint` (16 hex digits: the gpuledger version and the
-- config file's bytes, the price entries in force on some hour of the
-- month, the month's data version, the GPU models of its devices and the
-- measured capacity per model, its accepted repricings, and the correction
-- rows of it frozen in later closed months): no price changed then, and
-- `corrections` says whether the recomputation differed from the frozen
-- figures plus those correction rows (1: correction lines to carry). While
-- the fingerprint is unchanged the recomputation is skipped: the check
-- passes again, and a period with corrections = 0 adds no correction lines.
-- Written by `run` (and --reprice-closed) in the check's transaction.
CREATE TABLE IF NOT EXISTS closed_check (
    period      TEXT PRIMARY KEY,    -- the closed YYYY-MM (closed_period.period)
    fingerprint TEXT NOT NULL,
    corrections INTEGER NOT NULL,    -- 0 or 1
    checked_at  INTEGER NOT NULL     -- unix seconds
) WITHOUT ROWID;

-- The correction rows of a closed period, wherever they were frozen (the
-- fingerprint and the corrections read them by corrected_period).
CREATE INDEX IF NOT EXISTS frozen_row_corrected ON frozen_row (corrected_period, period);
