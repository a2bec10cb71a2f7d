-- gpuledger schema 013: the memory a pod held per step, kept per hour as a
-- distribution, for right-sizing and consolidation advice (`advise`). The
-- hourly sums of usage cannot give a peak or a percentile.
--
-- One row per (cluster, hour, namespace, pod, device, bucket): bucket is
-- the step's MiB ÷ 1024 (a ladder of 1 GiB buckets, kept sparsely: only
-- buckets with steps have rows); steps counts the steps of the hour in the
-- bucket; peak_mib is the largest MiB of those steps, so the pod's peak is
-- exact (the largest peak_mib of its rows) and a percentile is bounded by
-- its bucket's upper edge. alloc_mib is the largest allocation the pod held
-- on the device's node (its model) at those steps, 0 when none, and
-- alloc_ugpu the same in millionths of a GPU (whole GPU, share or MIG slice).
--
-- Written by engine/ledger/store_peak.c from raw collection only (server
-- mode sums hours on the backend: its hours have no rows, and `advise`
-- says so); replaced with the hour's usage rows when the hour is
-- re-collected. Nothing here is billed.
CREATE TABLE IF NOT EXISTS pod_peak (
    cluster   TEXT NOT NULL,
    hour      INTEGER NOT NULL,  -- unix seconds, a whole UTC hour
    namespace TEXT NOT NULL,
    pod       TEXT NOT NULL,
    device_id INTEGER NOT NULL REFERENCES device(id),
    bucket    INTEGER NOT NULL,  -- ⌊MiB / 1024⌋
    steps     INTEGER NOT NULL,
    peak_mib  INTEGER NOT NULL,
    alloc_mib INTEGER NOT NULL,
    alloc_ugpu INTEGER NOT NULL,  -- the same allocation in millionths of a GPU (1000000: a whole GPU)
    PRIMARY KEY (cluster, hour, namespace, pod, device_id, bucket)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS pod_peak_hour ON pod_peak (hour);
