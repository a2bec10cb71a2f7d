-- gpuledger schema 007: a closed period's statement as figures.
-- Applied by engine/ledger/store.c after the earlier files; IF NOT EXISTS so the
-- file applies whatever number the migration list gives it.
--
-- `close` stores here everything the invoice set of the period holds, so
-- that every output of a closed month is rendered from these rows by the
-- normal renderers (a format added later can render it too). The texts in
-- frozen_invoice and closed_period.focus_csv stay as the audit copy: each
-- time the figures are loaded the invoice JSON, Markdown and FOCUS CSV
-- rendered from them are compared with those texts, and a difference is an
-- error (exit 7) naming the period, team and format, never a silent print.
-- Since schema 011 the figures are checked by their digests instead (the
-- texts are compared once more for a period closed before it).
-- A period closed before this schema has no frozen_period row: it keeps
-- printing its stored texts. Written by engine/ledger/store_frozen.c in close's
-- transaction; 128-bit figures are decimal integer TEXT (minor units,
-- ×10^12, ×10^9 as the column says). `prune` keeps these tables.

-- The period: what the renderers read from the config at close, and the
-- generator that closed it (the invoice JSON's "generator").
CREATE TABLE IF NOT EXISTS frozen_period (
    period         TEXT PRIMARY KEY,   -- YYYY-MM (closed_period.period)
    generator      TEXT NOT NULL,      -- "gpuledger <version>"
    currency       TEXT NOT NULL,
    minor_digits   INTEGER NOT NULL,
    idle_policy    TEXT NOT NULL,      -- platform | proportional | unbilled
    focus_version  INTEGER NOT NULL,   -- 12 or 13
    account_id     TEXT NOT NULL,
    account_name   TEXT NOT NULL,
    provider       TEXT NOT NULL,
    service_name   TEXT NOT NULL
) WITHOUT ROWID;

-- The price entries the period's lines used, as they were at close.
CREATE TABLE IF NOT EXISTS frozen_price (
    period        TEXT NOT NULL,
    seq           INTEGER NOT NULL,   -- 0, 1, ... (frozen_line.price_seq)
    row           INTEGER NOT NULL,   -- CSV row
    id            TEXT NOT NULL,      -- "<file>:<row>" as shown
    pattern       TEXT NOT NULL,
    unit          TEXT NOT NULL,      -- GB-Hours | GPU-Hours
    price12       TEXT NOT NULL,      -- price per unit × 10^12
    currency      TEXT NOT NULL,
    valid_from    INTEGER NOT NULL,
    valid_to      INTEGER,            -- NULL: open
    has_capacity  INTEGER NOT NULL,
    capacity_gb12 TEXT NOT NULL,      -- capacity_gb × 10^12
    PRIMARY KEY (period, seq)
) WITHOUT ROWID;

-- One invoice: its header and total (minor units).
CREATE TABLE IF NOT EXISTS frozen_head (
    period      TEXT NOT NULL,
    team        TEXT NOT NULL,
    team_name   TEXT NOT NULL,
    cost_center TEXT,                 -- NULL: unknown
    invoice_id  TEXT NOT NULL,
    total       TEXT NOT NULL,
    PRIMARY KEY (period, team)
) WITHOUT ROWID;

-- The invoice's lines in their order (charged first, then corrections).
CREATE TABLE IF NOT EXISTS frozen_line (
    period           TEXT NOT NULL,
    team             TEXT NOT NULL,
    seq              INTEGER NOT NULL,
    cluster          TEXT NOT NULL,
    model            TEXT NOT NULL,
    kind             TEXT NOT NULL,   -- memory_used, reserved_unused, idle_share, overhead_share
    corrected_period TEXT NOT NULL,   -- '' (charged) or the YYYY-MM a correction corrects
    price_seq        INTEGER NOT NULL,
    unit_price12     TEXT NOT NULL,   -- per GB-hour × 10^12
    mib_seconds      INTEGER NOT NULL,
    amount           TEXT NOT NULL,   -- minor units
    estimated        INTEGER NOT NULL,
    qty_nano         TEXT NOT NULL,   -- corrections: GB-h × 10^9 as printed; else 0
    capacity_gb12    TEXT NOT NULL,   -- GPU-Hours lines, else 0
    PRIMARY KEY (period, team, seq)
) WITHOUT ROWID;

-- A line's UTC days (the FOCUS rows).
CREATE TABLE IF NOT EXISTS frozen_line_day (
    period      TEXT NOT NULL,
    team        TEXT NOT NULL,
    line        INTEGER NOT NULL,     -- frozen_line.seq
    day         INTEGER NOT NULL,     -- UTC midnight
    mib_seconds INTEGER NOT NULL,
    billed      TEXT NOT NULL,        -- minor units
    busy_ppm    INTEGER NOT NULL,
    busy_steps  INTEGER NOT NULL,
    qty_nano    TEXT NOT NULL,        -- corrections: GB-h × 10^9 as printed; else 0
    PRIMARY KEY (period, team, line, day)
) WITHOUT ROWID;

-- Information rows (never priced), in their order: what = waste
-- (a = MiB·s), allocated (a = MiB·s, b = micro-GPU-seconds), compute
-- (a = Σ busy ppm, b = device steps).
CREATE TABLE IF NOT EXISTS frozen_info (
    period  TEXT NOT NULL,
    team    TEXT NOT NULL,
    what    TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    cluster TEXT NOT NULL,
    model   TEXT NOT NULL,
    a       INTEGER NOT NULL,
    b       INTEGER NOT NULL,
    PRIMARY KEY (period, team, what, seq)
) WITHOUT ROWID;

-- The anomalies an invoice lists, in their order.
CREATE TABLE IF NOT EXISTS frozen_anomaly (
    period      TEXT NOT NULL,
    team        TEXT NOT NULL,        -- the invoice's team
    seq         INTEGER NOT NULL,
    kind        TEXT NOT NULL,        -- excess_devices | unallocated_use
    cluster     TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    pod         TEXT NOT NULL,
    node        TEXT NOT NULL,
    device      TEXT NOT NULL,
    model       TEXT NOT NULL,
    first_seen  INTEGER NOT NULL,
    last_seen   INTEGER NOT NULL,
    mib_seconds INTEGER NOT NULL,
    PRIMARY KEY (period, team, seq)
) WITHOUT ROWID;
