-- gpuledger database, schema version 1.
-- Applied by the engine (engine/store.c) when PRAGMA user_version < 1.
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

-- Hourly rollups, keyed as SPEC §9 says. Pod rows carry a namespace, a pod
-- and a team; device rows (capacity, reserved, unattributed, idle, excess)
-- have namespace = pod = team = ''.
CREATE TABLE usage (
    hour        INTEGER NOT NULL,  -- unix seconds, a whole UTC hour
    cluster     TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    pod         TEXT NOT NULL,
    device_id   INTEGER NOT NULL REFERENCES device(id),
    team        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    mib_seconds INTEGER NOT NULL,
    estimated   INTEGER NOT NULL DEFAULT 0,
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
