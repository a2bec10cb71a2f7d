-- gpuledger database, schema version 2.
-- Applied by the engine (engine/ledger/store.c) when PRAGMA user_version < 2.

-- What each query of a collected hour returned when it was stored: series
-- with at least one valid sample in the hour, and those samples. A
-- re-collect that would replace the hour with clearly less (docs/specification.md: no
-- samples where there were some, or fewer series than
-- collection.shrink_tolerance allows) is refused unless the user allows
-- it. Hours collected before version 2 have no rows here; for them the
-- memory query's samples in collected_hour stand in.
CREATE TABLE collected_query (
    cluster TEXT NOT NULL,
    hour    INTEGER NOT NULL,  -- unix seconds, a whole UTC hour
    query   TEXT NOT NULL,     -- the query's name (<queries_dir>/<name>.promql)
    series  INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    PRIMARY KEY (cluster, hour, query)
) WITHOUT ROWID;
