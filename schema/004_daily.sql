-- gpuledger database, schema version 4: aggregates the outputs read.
-- Applied by the engine (engine/ledger/store.c) after the earlier schema files.
--
-- Every output (invoice, FOCUS export, summary, team and fleet pages, the
-- corrections of closed months) reads these tables, never the hourly
-- `usage` rows, so their cost follows the number of keys, not of pods ×
-- devices × hours. They are kept exact in the transaction that writes the
-- usage rows: the triggers below add every inserted or updated usage row
-- and take out every deleted one, for every writer but the store
-- (engine/ledger/store.c), which drops them inside the transaction that stores a
-- chunk (DDL is transactional: no other connection ever sees them
-- missing), keeps the aggregates itself (the replaced hours' old rows
-- taken out in grouped statements, the new rows' sums added at commit) and
-- creates them again before it commits. The store recomputes at commit
-- what is no sum (anomalies' first and last seen) for the days a chunk
-- cleared, and usage_key_hour for the days of a device whose GPU model
-- changed. An hour re-collected therefore
-- gives the same aggregates as a fresh database.
--
-- Quantities are exact integers (the units of `usage`). SQLite's SUM()
-- fails on integer overflow, but `a + b` silently turns into a REAL: every
-- quantity column is CHECKed to stay an integer, so an overflowing sum
-- fails the chunk's transaction (the store names the pod or device, kind
-- and day) instead of storing a rounded figure.
--
-- Pruning: the hourly `usage` rows of a closed month may be deleted (a
-- later `prune`) once these tables hold its figures: a DELETE made while
-- usage_prune holds a row (in the same transaction: insert it, delete the
-- usage rows, delete it) leaves the aggregates as they are. A prune MUST
-- KEEP: usage_key_hour, device_day, pod_day, anomaly_day (every output of
-- the month and its corrections read them), device (models, hosts, first
-- and last seen), collected_hour and data_version (the day axis, the output
-- state), closed_period, frozen_invoice and frozen_row (the frozen texts
-- and figures), and label_series. A pruned hour must not be re-collected
-- (its old rows are no longer there to be taken out): a prune has to
-- record the hours it pruned and collect has to refuse them.
CREATE TABLE usage_prune (
    reason TEXT NOT NULL
);

-- The usage of each hour per (cluster, GPU model, team, kind): what the
-- invoices, FOCUS rows, the fleet per model and the team days read. Hourly
-- because prices change on whole hours (price.c) and a missing price is
-- reported for the hour of the usage. estimated = MAX over the rows.
CREATE TABLE usage_key_hour (
    hour      INTEGER NOT NULL,
    cluster   TEXT NOT NULL,
    model     TEXT NOT NULL,  -- device.model of the rows' devices
    team      TEXT NOT NULL,
    kind      TEXT NOT NULL,
    quantity  INTEGER NOT NULL CHECK (typeof(quantity) = 'integer'),
    estimated INTEGER NOT NULL,
    rows      INTEGER NOT NULL,
    PRIMARY KEY (hour, cluster, model, team, kind)
) WITHOUT ROWID;

CREATE INDEX usage_key_hour_team ON usage_key_hour (team, hour);

-- Per device (node pseudo-devices included), UTC day and kind: the fleet
-- summary's per-device reconciliation (one grouped pass over a month).
-- rows = usage rows summed; a key whose rows reach 0 is deleted (trigger).
CREATE TABLE device_day (
    day       INTEGER NOT NULL,  -- UTC midnight
    device_id INTEGER NOT NULL REFERENCES device(id),
    kind      TEXT NOT NULL,
    quantity  INTEGER NOT NULL CHECK (typeof(quantity) = 'integer'),
    rows      INTEGER NOT NULL,
    PRIMARY KEY (day, device_id, kind)
) WITHOUT ROWID;

-- Per team, UTC day and pod: memory_used, allocated, reserved_unused of
-- pod rows (pod <> ''): the team pages' top pods. estimated = how many of
-- the rows were estimated.
CREATE TABLE pod_day (
    team      TEXT NOT NULL,
    day       INTEGER NOT NULL,
    cluster   TEXT NOT NULL,
    namespace TEXT NOT NULL,
    pod       TEXT NOT NULL,
    kind      TEXT NOT NULL,
    quantity  INTEGER NOT NULL CHECK (typeof(quantity) = 'integer'),
    estimated INTEGER NOT NULL,
    rows      INTEGER NOT NULL,
    PRIMARY KEY (team, day, cluster, namespace, pod, kind)
) WITHOUT ROWID;

CREATE TRIGGER device_day_empty AFTER UPDATE OF rows ON device_day WHEN NEW.rows = 0 BEGIN
    DELETE FROM device_day
    WHERE day = NEW.day AND device_id = NEW.device_id AND kind = NEW.kind;
END;

CREATE TRIGGER pod_day_empty AFTER UPDATE OF rows ON pod_day WHEN NEW.rows = 0 BEGIN
    DELETE FROM pod_day
    WHERE team = NEW.team AND day = NEW.day AND cluster = NEW.cluster
      AND namespace = NEW.namespace AND pod = NEW.pod AND kind = NEW.kind;
END;

CREATE TRIGGER usage_key_hour_empty AFTER UPDATE OF rows ON usage_key_hour
WHEN NEW.rows = 0 BEGIN
    DELETE FROM usage_key_hour
    WHERE hour = NEW.hour AND cluster = NEW.cluster AND model = NEW.model
      AND team = NEW.team AND kind = NEW.kind;
END;

-- The anomaly rows per UTC day (rare: recomputed per day touched).
CREATE TABLE anomaly_day (
    day        INTEGER NOT NULL,
    kind       TEXT NOT NULL,  -- anomaly_unallocated, anomaly_excess_devices
    cluster    TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    pod        TEXT NOT NULL,
    team       TEXT NOT NULL,
    device_id  INTEGER NOT NULL REFERENCES device(id),
    first_seen INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL,
    quantity   INTEGER NOT NULL CHECK (typeof(quantity) = 'integer'),
    rows       INTEGER NOT NULL,
    PRIMARY KEY (day, kind, cluster, namespace, pod, team, device_id)
) WITHOUT ROWID;

-- No output reads usage by kind any more (they read the tables above):
-- the index usage_team (schema 001: kind, hour, team and, this being a
-- WITHOUT ROWID table, the whole primary key again) held 43 % of a month's
-- database and doubled the B-tree work of every usage write. The
-- anomalies' recompute (a few rows a day) keeps an index of its own.
DROP INDEX usage_team;
CREATE INDEX usage_anomaly ON usage (kind, hour)
WHERE kind IN ('anomaly_unallocated', 'anomaly_excess_devices');

-- A database collected before this schema: the aggregates of every stored
-- hour (SUM fails loudly on an integer overflow; the migration then stops).
INSERT INTO usage_key_hour (hour, cluster, model, team, kind, quantity, estimated, rows)
SELECT u.hour, u.cluster, d.model, u.team, u.kind, SUM(u.quantity), MAX(u.estimated), COUNT(*)
FROM usage u JOIN device d ON d.id = u.device_id
GROUP BY u.hour, u.cluster, d.model, u.team, u.kind;

INSERT INTO device_day (day, device_id, kind, quantity, rows)
SELECT hour - hour % 86400, device_id, kind, SUM(quantity), COUNT(*)
FROM usage GROUP BY 1, 2, 3;

INSERT INTO pod_day (team, day, cluster, namespace, pod, kind, quantity, estimated, rows)
SELECT team, hour - hour % 86400, cluster, namespace, pod, kind, SUM(quantity),
       SUM(estimated <> 0), COUNT(*)
FROM usage
WHERE pod <> '' AND kind IN ('memory_used', 'allocated', 'reserved_unused')
GROUP BY 1, 2, 3, 4, 5, 6;

INSERT INTO anomaly_day (day, kind, cluster, namespace, pod, team, device_id, first_seen,
                         last_seen, quantity, rows)
SELECT hour - hour % 86400, kind, cluster, namespace, pod, team, device_id, MIN(first_seen),
       MAX(last_seen), SUM(quantity), COUNT(*)
FROM usage
WHERE kind IN ('anomaly_unallocated', 'anomaly_excess_devices')
GROUP BY 1, 2, 3, 4, 5, 6, 7;

-- Every usage row inserted (and every upsert's change of one) is added to
-- the aggregates. The device's model is read at insert time: a later
-- change of device.model is the store's (it recomputes the device's days).
CREATE TRIGGER usage_agg_insert AFTER INSERT ON usage BEGIN
    INSERT INTO usage_key_hour (hour, cluster, model, team, kind, quantity, estimated, rows)
    VALUES (NEW.hour, NEW.cluster, (SELECT model FROM device WHERE id = NEW.device_id),
            NEW.team, NEW.kind, NEW.quantity, NEW.estimated, 1)
    ON CONFLICT DO UPDATE SET quantity = quantity + excluded.quantity,
        estimated = max(estimated, excluded.estimated), rows = rows + 1;
    INSERT INTO device_day (day, device_id, kind, quantity, rows)
    VALUES (NEW.hour - NEW.hour % 86400, NEW.device_id, NEW.kind, NEW.quantity, 1)
    ON CONFLICT DO UPDATE SET quantity = quantity + excluded.quantity, rows = rows + 1;
    INSERT INTO pod_day (team, day, cluster, namespace, pod, kind, quantity, estimated, rows)
    SELECT NEW.team, NEW.hour - NEW.hour % 86400, NEW.cluster, NEW.namespace, NEW.pod,
           NEW.kind, NEW.quantity, NEW.estimated <> 0, 1
    WHERE NEW.pod <> '' AND NEW.kind IN ('memory_used', 'allocated', 'reserved_unused')
    ON CONFLICT DO UPDATE SET quantity = quantity + excluded.quantity,
        estimated = estimated + excluded.estimated, rows = rows + 1;
    INSERT INTO anomaly_day (day, kind, cluster, namespace, pod, team, device_id, first_seen,
                             last_seen, quantity, rows)
    SELECT NEW.hour - NEW.hour % 86400, NEW.kind, NEW.cluster, NEW.namespace, NEW.pod,
           NEW.team, NEW.device_id, NEW.first_seen, NEW.last_seen, NEW.quantity, 1
    WHERE NEW.kind IN ('anomaly_unallocated', 'anomaly_excess_devices')
    ON CONFLICT DO UPDATE SET quantity = quantity + excluded.quantity, rows = rows + 1,
        first_seen = min(first_seen, excluded.first_seen),
        last_seen = max(last_seen, excluded.last_seen);
END;

-- An upsert that adds to a stored row (the store's ON CONFLICT DO UPDATE)
-- adds the difference; the key columns of a usage row never change.
CREATE TRIGGER usage_agg_update AFTER UPDATE OF quantity, estimated, first_seen, last_seen
ON usage BEGIN
    UPDATE usage_key_hour SET quantity = quantity + (NEW.quantity - OLD.quantity),
        estimated = max(estimated, NEW.estimated)
    WHERE hour = NEW.hour AND cluster = NEW.cluster
      AND model = (SELECT model FROM device WHERE id = NEW.device_id)
      AND team = NEW.team AND kind = NEW.kind;
    UPDATE device_day SET quantity = quantity + (NEW.quantity - OLD.quantity)
    WHERE day = NEW.hour - NEW.hour % 86400 AND device_id = NEW.device_id AND kind = NEW.kind;
    UPDATE pod_day SET quantity = quantity + (NEW.quantity - OLD.quantity),
        estimated = estimated + ((NEW.estimated <> 0) - (OLD.estimated <> 0))
    WHERE team = NEW.team AND day = NEW.hour - NEW.hour % 86400 AND cluster = NEW.cluster
      AND namespace = NEW.namespace AND pod = NEW.pod AND kind = NEW.kind;
    UPDATE anomaly_day SET quantity = quantity + (NEW.quantity - OLD.quantity),
        first_seen = min(first_seen, NEW.first_seen), last_seen = max(last_seen, NEW.last_seen)
    WHERE day = NEW.hour - NEW.hour % 86400 AND kind = NEW.kind AND cluster = NEW.cluster
      AND namespace = NEW.namespace AND pod = NEW.pod AND team = NEW.team
      AND device_id = NEW.device_id;
END;

-- A deleted usage row is taken out (unless a prune is deleting: see
-- usage_prune). What is no sum is recomputed from the rows left: the
-- estimated flag of a key when an estimated row goes, the first and last
-- seen of an anomaly (through the primary key's hour).
CREATE TRIGGER usage_agg_delete AFTER DELETE ON usage
WHEN NOT EXISTS (SELECT 1 FROM usage_prune) BEGIN
    UPDATE usage_key_hour SET quantity = quantity - OLD.quantity, rows = rows - 1
    WHERE hour = OLD.hour AND cluster = OLD.cluster
      AND model = (SELECT model FROM device WHERE id = OLD.device_id)
      AND team = OLD.team AND kind = OLD.kind;
    UPDATE device_day SET quantity = quantity - OLD.quantity, rows = rows - 1
    WHERE day = OLD.hour - OLD.hour % 86400 AND device_id = OLD.device_id AND kind = OLD.kind;
    UPDATE pod_day SET quantity = quantity - OLD.quantity,
        estimated = estimated - (OLD.estimated <> 0), rows = rows - 1
    WHERE team = OLD.team AND day = OLD.hour - OLD.hour % 86400 AND cluster = OLD.cluster
      AND namespace = OLD.namespace AND pod = OLD.pod AND kind = OLD.kind;
    UPDATE anomaly_day SET quantity = quantity - OLD.quantity, rows = rows - 1
    WHERE day = OLD.hour - OLD.hour % 86400 AND kind = OLD.kind AND cluster = OLD.cluster
      AND namespace = OLD.namespace AND pod = OLD.pod AND team = OLD.team
      AND device_id = OLD.device_id;
    UPDATE usage_key_hour SET estimated = coalesce((
        SELECT max(u.estimated) FROM usage u JOIN device d ON d.id = u.device_id
        WHERE u.kind = OLD.kind AND u.hour = OLD.hour AND u.team = OLD.team
          AND u.cluster = OLD.cluster AND d.model = usage_key_hour.model), 0)
    WHERE OLD.estimated <> 0 AND hour = OLD.hour AND cluster = OLD.cluster
      AND model = (SELECT model FROM device WHERE id = OLD.device_id)
      AND team = OLD.team AND kind = OLD.kind;
    DELETE FROM anomaly_day
    WHERE day = OLD.hour - OLD.hour % 86400 AND kind = OLD.kind AND cluster = OLD.cluster
      AND namespace = OLD.namespace AND pod = OLD.pod AND team = OLD.team
      AND device_id = OLD.device_id AND rows = 0;
    UPDATE anomaly_day SET
        first_seen = (SELECT min(u.first_seen) FROM usage u WHERE u.kind = OLD.kind
            AND u.hour >= anomaly_day.day AND u.hour < anomaly_day.day + 86400
            AND u.team = OLD.team AND u.cluster = OLD.cluster AND u.namespace = OLD.namespace
            AND u.pod = OLD.pod AND u.device_id = OLD.device_id),
        last_seen = (SELECT max(u.last_seen) FROM usage u WHERE u.kind = OLD.kind
            AND u.hour >= anomaly_day.day AND u.hour < anomaly_day.day + 86400
            AND u.team = OLD.team AND u.cluster = OLD.cluster AND u.namespace = OLD.namespace
            AND u.pod = OLD.pod AND u.device_id = OLD.device_id)
    WHERE day = OLD.hour - OLD.hour % 86400 AND kind = OLD.kind AND cluster = OLD.cluster
      AND namespace = OLD.namespace AND pod = OLD.pod AND team = OLD.team
      AND device_id = OLD.device_id;
END;
