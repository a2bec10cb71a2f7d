-- gpuledger schema 010: a GPU's model (and capacity) per device and hour.
-- Applied by engine/ledger/store.c after the earlier files.
--
-- A UUID may report another modelName from some hour on (a board swapped
-- under the same UUID, a relabelled exporter). Each hour is priced at the
-- model it reported: usage_key_hour is keyed by the model of the row's
-- hour, read here, never by device.model (the model of the device's latest
-- hour, for the device lists). A later hour reporting another model
-- therefore changes no earlier hour's key, and no closed month.
--
-- Written by the store (engine/ledger/store.c) for every device and hour it
-- stores usage rows of, before the rows; replaced with the hours' rows when
-- an hour is re-collected. A prune keeps it (the closed months' device
-- lists read it).
CREATE TABLE IF NOT EXISTS device_model_hour (
    hour             INTEGER NOT NULL,  -- unix seconds, a whole UTC hour
    device_id        INTEGER NOT NULL REFERENCES device(id),
    model            TEXT NOT NULL,
    max_capacity_mib INTEGER NOT NULL,  -- the largest capacity seen in the hour's chunk run
    PRIMARY KEY (hour, device_id)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS device_model_hour_device ON device_model_hour (device_id, model);

-- A database collected before: every stored hour had its device's model.
INSERT OR IGNORE INTO device_model_hour (hour, device_id, model, max_capacity_mib)
SELECT DISTINCT u.hour, u.device_id, d.model, d.max_capacity_mib
FROM usage u JOIN device d ON d.id = u.device_id;

-- Schema 004's triggers, reading the model of the row's hour (the device's
-- when the hour has none: a writer other than the store).
DROP TRIGGER IF EXISTS usage_agg_insert;
DROP TRIGGER IF EXISTS usage_agg_update;
DROP TRIGGER IF EXISTS usage_agg_delete;

CREATE TRIGGER usage_agg_insert AFTER INSERT ON usage BEGIN
    INSERT INTO usage_key_hour (hour, cluster, model, team, kind, quantity, estimated, rows)
    VALUES (NEW.hour, NEW.cluster,
            coalesce((SELECT model FROM device_model_hour
                      WHERE hour = NEW.hour AND device_id = NEW.device_id),
                     (SELECT model FROM device WHERE id = NEW.device_id)),
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

CREATE TRIGGER usage_agg_update AFTER UPDATE OF quantity, estimated, first_seen, last_seen
ON usage BEGIN
    UPDATE usage_key_hour SET quantity = quantity + (NEW.quantity - OLD.quantity),
        estimated = max(estimated, NEW.estimated)
    WHERE hour = NEW.hour AND cluster = NEW.cluster
      AND model = coalesce((SELECT model FROM device_model_hour
                            WHERE hour = NEW.hour AND device_id = NEW.device_id),
                           (SELECT model FROM device WHERE id = NEW.device_id))
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

CREATE TRIGGER usage_agg_delete AFTER DELETE ON usage
WHEN NOT EXISTS (SELECT 1 FROM usage_prune) BEGIN
    UPDATE usage_key_hour SET quantity = quantity - OLD.quantity, rows = rows - 1
    WHERE hour = OLD.hour AND cluster = OLD.cluster
      AND model = coalesce((SELECT model FROM device_model_hour
                            WHERE hour = OLD.hour AND device_id = OLD.device_id),
                           (SELECT model FROM device WHERE id = OLD.device_id))
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
        LEFT JOIN device_model_hour m ON m.hour = u.hour AND m.device_id = u.device_id
        WHERE u.kind = OLD.kind AND u.hour = OLD.hour AND u.team = OLD.team
          AND u.cluster = OLD.cluster
          AND coalesce(m.model, d.model) = usage_key_hour.model), 0)
    WHERE OLD.estimated <> 0 AND hour = OLD.hour AND cluster = OLD.cluster
      AND model = coalesce((SELECT model FROM device_model_hour
                            WHERE hour = OLD.hour AND device_id = OLD.device_id),
                           (SELECT model FROM device WHERE id = OLD.device_id))
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
