-- gpuledger database, schema version 1.
-- Applied by the engine (engine/ledger/store.c) when PRAGMA user_version < 1.
-- Quantities are exact integers: MiB·s (MiB held × seconds).

-- A device is a physical GPU (uuid, gpu_i_id = '') or a MIG instance.
CREATE TABLE device (
    id            INTEGER PRIMARY KEY,
    cluster       TEXT NOT NULL,
    uuid          TEXT NOT NULL,
    gpu_i_id      TEXT NOT NULL DEFAULT '',
    gpu_i_profile TEXT NOT NULL DEFAULT '',
    model         TEXT NOT NULL,
    hostname      TEXT NOT NULL DEFAULT '',
    max_capacity_mib INTEGER NOT NULL DEFAULT 0,
    first_seen    INTEGER NOT NULL,
    last_seen     INTEGER NOT NULL,
    UNIQUE (cluster, uuid, gpu_i_id)
);

-- Hourly rollups, keyed as docs/specification.md says. The quantity is an exact integer
-- whose unit depends on the kind:
--   pod rows (namespace, pod, team set):
--     memory_used, allocated, reserved_unused, reserved_unused_billed,
--     anomaly_unallocated, anomaly_excess_devices      MiB·s
--     allocated_gpu                                     micro-GPU-seconds
--   team rows (namespace = pod = ''): busy_ppm (Σ busy ratio × 10^6 over
--     steps), busy_steps (device steps)
--   device rows (namespace = pod = team = ''): capacity, reserved,
--     unattributed, idle, excess (MiB·s); unknown_steps (steps with pods but
--     no memory metrics)
-- Allocation rows (allocated*, reserved_unused*) sit on the node's
-- pseudo-device (device.uuid = 'node:<name>', gpu_i_id = the GPU model).
CREATE TABLE usage (
    hour        INTEGER NOT NULL,  -- unix seconds, a whole UTC hour
    cluster     TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    pod         TEXT NOT NULL,
    device_id   INTEGER NOT NULL REFERENCES device(id),
    team        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    quantity    INTEGER NOT NULL,
    estimated   INTEGER NOT NULL DEFAULT 0,
    first_seen  INTEGER NOT NULL,  -- first step instant in the hour with data
    last_seen   INTEGER NOT NULL,
    PRIMARY KEY (hour, cluster, namespace, pod, device_id, team, kind)
) WITHOUT ROWID;

CREATE INDEX usage_team ON usage (kind, hour, team);

-- Which hours of which cluster have been collected, and what was seen.
CREATE TABLE collected_hour (
    cluster      TEXT NOT NULL,
    hour         INTEGER NOT NULL,
    collected_at INTEGER NOT NULL,
    samples      INTEGER NOT NULL,
    bad_samples  INTEGER NOT NULL,
    PRIMARY KEY (cluster, hour)
) WITHOUT ROWID;

-- Collection watermark per cluster: every hour before collected_to has been
-- stored by `run` (advanced in the same transaction as the chunk).
CREATE TABLE watermark (
    cluster      TEXT PRIMARY KEY,
    collected_to INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- A closed period: its invoices and FOCUS rows are frozen here and printed
-- from here; later data becomes correction rows of the next open period.
CREATE TABLE closed_period (
    period    TEXT PRIMARY KEY,   -- YYYY-MM
    closed_at INTEGER NOT NULL,
    focus_csv TEXT NOT NULL       -- the export as it was at close, header included
) WITHOUT ROWID;

CREATE TABLE frozen_invoice (
    period TEXT NOT NULL REFERENCES closed_period(period),
    team   TEXT NOT NULL,
    json   TEXT NOT NULL,
    md     TEXT NOT NULL,
    PRIMARY KEY (period, team)
) WITHOUT ROWID;

-- The FOCUS keys of a closed period's rows with their exact figures:
-- charged rows (corrected_period = '') and the correction rows it carried.
CREATE TABLE frozen_row (
    period           TEXT NOT NULL REFERENCES closed_period(period),
    corrected_period TEXT NOT NULL,  -- '' or the YYYY-MM a correction row corrects
    team             TEXT NOT NULL,
    cluster          TEXT NOT NULL,
    model            TEXT NOT NULL,
    kind             TEXT NOT NULL,
    price_id         TEXT NOT NULL,     -- as shown (file:row)
    price_key        TEXT NOT NULL,     -- model_pattern@valid_from: stable when rows move
    day              INTEGER NOT NULL,
    unit_price       TEXT NOT NULL,     -- per GB-hour, 12 decimals
    mib_seconds      INTEGER NOT NULL,
    gb_hours_nano    INTEGER NOT NULL,  -- the quantity as printed (GB-h × 10^9)
    billed_minor     INTEGER NOT NULL,
    PRIMARY KEY (period, corrected_period, team, cluster, model, kind, price_key, day)
) WITHOUT ROWID;

-- When each label series (kube_pod_labels, kube_namespace_labels,
-- kube_node_labels) was first seen, so that "the series that first appeared
-- later wins" (docs/specification.md) does not depend on where a chunk starts.
CREATE TABLE label_series (
    labels     TEXT PRIMARY KEY,  -- the series' labels, name=value joined
    first_seen INTEGER NOT NULL
) WITHOUT ROWID;
