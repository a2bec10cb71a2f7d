-- gpuledger schema 014: the advice's groups of pod_peak (schema 013) per
-- cluster and UTC day, so that `advise` (and the team pages it feeds)
-- reads a month of days rather than a month of hourly rows on every run.
--
-- Built by engine/ledger/store_peakday.c at the end of a collection, for
-- the days whose hours are all older than the window re-pulled, one day a
-- transaction, from the day's pod_peak rows as the advice reads them
-- (engine/ledger/query_peak.c); read by query_peak.c for the days with a
-- row in pod_peak_day_built only. A day without one is read from its
-- hourly rows, as before this schema: a database migrated here reads
-- exactly as it did.
--
-- What the groups depend on and how a change reaches them: a day's row of
-- pod_peak_day_built is removed in the transaction that writes or deletes
-- the day's pod_peak rows (a re-collected hour: by the one writer, which
-- clears a range before writing it, engine/ledger/store_peak.c, rather
-- than by a trigger on each of the many rows a collection writes), or by
-- the triggers below, in the one that writes or deletes its
-- device_model_hour rows (a remeasured device), or that changes a device
-- row's hostname, MIG profile, model or capacity. That last unbuilds every
-- built day of the cluster (those group the node-hours and stand in for an
-- hour without a device_model_hour row): narrowing it to the device's days
-- would need pod_peak indexed by device (its key leads with cluster and
-- hour: a device's rows are a search of the cluster's every row), a cost
-- on every row collected for a rare change; the days older than a collection rebuilds then read from
-- their hourly rows, exactly. The rest is read when the advice is made, as
-- for the hourly rows: the device's uuid, instance, profile and hostname
-- of each group, the pod's owner, the team of a group's first hour.

-- One group of a day: the advice's group key without the price segment
-- (a day with a price bound inside is read from its hourly rows).
-- model and capacity_mib: the device's of the hours (device_model_hour,
-- else the device row's); steps: Σ; peak_mib: max; first_hour: min.
CREATE TABLE IF NOT EXISTS pod_peak_day (
    cluster      TEXT NOT NULL,
    day          INTEGER NOT NULL,  -- unix seconds, a UTC midnight
    namespace    TEXT NOT NULL,
    pod          TEXT NOT NULL,
    device_id    INTEGER NOT NULL,
    model        TEXT NOT NULL,
    capacity_mib INTEGER NOT NULL,
    bucket       INTEGER NOT NULL,
    alloc_mib    INTEGER NOT NULL,
    alloc_ugpu   INTEGER NOT NULL,
    steps        INTEGER NOT NULL,
    peak_mib     INTEGER NOT NULL,
    first_hour   INTEGER NOT NULL,
    PRIMARY KEY (cluster, day, namespace, pod, device_id, model, capacity_mib, bucket,
                 alloc_mib, alloc_ugpu)
) WITHOUT ROWID;

-- One node-hour of the consolidation advice (whole GPUs of known capacity):
-- the pods' peaks of the hour summed (each pod's largest MiB on each
-- device) and the devices with a pod step.
CREATE TABLE IF NOT EXISTS node_peak_hour (
    cluster      TEXT NOT NULL,
    hour         INTEGER NOT NULL,  -- unix seconds, a whole UTC hour
    hostname     TEXT NOT NULL,
    model        TEXT NOT NULL,
    capacity_mib INTEGER NOT NULL,
    sum_peak     INTEGER NOT NULL,
    devices      INTEGER NOT NULL,
    PRIMARY KEY (cluster, hour, hostname, model, capacity_mib)
) WITHOUT ROWID;

-- The days whose rows above equal their hourly rows (one row a built day).
CREATE TABLE IF NOT EXISTS pod_peak_day_built (
    cluster TEXT NOT NULL,
    day     INTEGER NOT NULL,
    PRIMARY KEY (cluster, day)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS model_hour_day_insert AFTER INSERT ON device_model_hour BEGIN
    DELETE FROM pod_peak_day_built WHERE day = NEW.hour - NEW.hour % 86400
      AND cluster = (SELECT cluster FROM device WHERE id = NEW.device_id);
END;
CREATE TRIGGER IF NOT EXISTS model_hour_day_update AFTER UPDATE ON device_model_hour BEGIN
    DELETE FROM pod_peak_day_built WHERE (day = OLD.hour - OLD.hour % 86400
      AND cluster = (SELECT cluster FROM device WHERE id = OLD.device_id))
       OR (day = NEW.hour - NEW.hour % 86400
      AND cluster = (SELECT cluster FROM device WHERE id = NEW.device_id));
END;
CREATE TRIGGER IF NOT EXISTS model_hour_day_delete AFTER DELETE ON device_model_hour BEGIN
    DELETE FROM pod_peak_day_built WHERE day = OLD.hour - OLD.hour % 86400
      AND cluster = (SELECT cluster FROM device WHERE id = OLD.device_id);
END;

CREATE TRIGGER IF NOT EXISTS device_peak_day_update AFTER UPDATE ON device
WHEN OLD.cluster IS NOT NEW.cluster OR OLD.uuid IS NOT NEW.uuid
  OR OLD.gpu_i_id IS NOT NEW.gpu_i_id OR OLD.gpu_i_profile IS NOT NEW.gpu_i_profile
  OR OLD.hostname IS NOT NEW.hostname OR OLD.model IS NOT NEW.model
  OR OLD.max_capacity_mib IS NOT NEW.max_capacity_mib BEGIN
    DELETE FROM pod_peak_day_built WHERE cluster IN (OLD.cluster, NEW.cluster);
END;
CREATE TRIGGER IF NOT EXISTS device_peak_day_delete AFTER DELETE ON device BEGIN
    DELETE FROM pod_peak_day_built WHERE cluster = OLD.cluster;
END;

-- The advice's two other month-long reads, per built day: stored when the
-- day is built (store_peakday.c), read for a day with a row here and in
-- pod_peak_day_built, else from the day's rows (query_dayfig.c). A day
-- built before these tables reads from its rows.
-- missing_pod_hours: the day's pod-hours with used memory and no pod_peak
-- row. Besides pod_peak it depends on the day's usage rows, and both
-- writers of usage remove the stamps of the days they touch: collect
-- clears a window's usage and pod_peak together (store_peak.c unbuilds
-- those days), prune unbuilds the range it deletes (store_admin.c).
CREATE TABLE IF NOT EXISTS pod_peak_day_figures (
    cluster           TEXT NOT NULL,
    day               INTEGER NOT NULL,
    missing_pod_hours INTEGER NOT NULL,
    PRIMARY KEY (cluster, day)
) WITHOUT ROWID;

-- The GPU sizes of the day's device_model_hour rows of the cluster's real
-- devices (model, MIG profile, capacity; capacity known), each once.
CREATE TABLE IF NOT EXISTS pod_peak_day_size (
    cluster      TEXT NOT NULL,
    day          INTEGER NOT NULL,
    model        TEXT NOT NULL,
    profile      TEXT NOT NULL,
    capacity_mib INTEGER NOT NULL,
    PRIMARY KEY (cluster, day, model, profile, capacity_mib)
) WITHOUT ROWID;
