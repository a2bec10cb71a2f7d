-- gpuledger schema 011: a closed period is checked by its figures, not by
-- the wording of its texts. Applied by engine/ledger/store.c after the earlier
-- files; IF NOT EXISTS so the file applies whatever number the migration
-- list gives it.
--
-- `close` stores, in its transaction, a SHA-256 per table over a canonical
-- encoding of the period's rows (engine/ledger/store_digest.c: closed_period's
-- closed_at, frozen_row, the schema 007 figures, closed_gap and the
-- settings below). Each time the figures are loaded the digests are
-- recomputed; a difference is an error (exit 7) naming the period and the
-- table. The figures are then rendered by today's renderers, so a wording
-- change, a new column or FOCUS 1.3 renders a closed month from its
-- figures; the texts in frozen_invoice and closed_period.focus_csv stay as
-- the audit copy and are no longer compared.
--
-- A period closed with schema 007 figures before this schema has no
-- digest: it is checked once more against its stored texts (byte for
-- byte); when they agree, the digests and the settings below are stored
-- then (sealed), the settings taken from the config of that moment.

-- Config settings the renderers read for a closed month besides those in
-- frozen_period (key: basis = used | max, platform_team).
CREATE TABLE IF NOT EXISTS frozen_setting (
    period TEXT NOT NULL,      -- closed_period.period
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (period, key)
) WITHOUT ROWID;

-- One row per table and closed period: how many rows the period had in it
-- at close and the digest of them (64 lowercase hex digits).
CREATE TABLE IF NOT EXISTS frozen_digest (
    period    TEXT NOT NULL,   -- closed_period.period
    tbl       TEXT NOT NULL,   -- the table digested
    row_count INTEGER NOT NULL,
    sha256    TEXT NOT NULL,
    sealed_at INTEGER NOT NULL, -- unix seconds: the close, or the first check of an older close
    PRIMARY KEY (period, tbl)
) WITHOUT ROWID;
