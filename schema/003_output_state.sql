-- gpuledger database: the state of the written outputs (docs/specification.md "Complete
-- outputs"). Applied by the engine (engine/ledger/store.c) after the earlier
-- schema files; engine/run/outstate.c owns these tables.

-- A counter per period (YYYY-MM of the hour) that every stored chunk bumps:
-- collection marks each hour it stores in collected_hour (INSERT OR REPLACE,
-- in the chunk's transaction), and these triggers count the change. The
-- INSERT trigger fires for a plain insert and for a REPLACE (whose implicit
-- delete fires the DELETE trigger too only under PRAGMA recursive_triggers;
-- then the counter moves by two, which is as good: only "changed" matters).
-- The UPDATE trigger covers an upsert (ON CONFLICT DO UPDATE) writer.
CREATE TABLE data_version (
    period  TEXT PRIMARY KEY,
    version INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER data_version_insert AFTER INSERT ON collected_hour BEGIN
    INSERT INTO data_version (period, version)
    VALUES (strftime('%Y-%m', NEW.hour, 'unixepoch'), 1)
    ON CONFLICT (period) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER data_version_update AFTER UPDATE ON collected_hour BEGIN
    INSERT INTO data_version (period, version)
    VALUES (strftime('%Y-%m', NEW.hour, 'unixepoch'), 1)
    ON CONFLICT (period) DO UPDATE SET version = version + 1;
    UPDATE data_version SET version = version + 1
    WHERE period = strftime('%Y-%m', OLD.hour, 'unixepoch')
      AND period <> strftime('%Y-%m', NEW.hour, 'unixepoch');
END;

CREATE TRIGGER data_version_delete AFTER DELETE ON collected_hour BEGIN
    UPDATE data_version SET version = version + 1
    WHERE period = strftime('%Y-%m', OLD.hour, 'unixepoch');
END;

-- A database collected before this schema: every period with data starts
-- at the number of its collected hours (no output state exists yet, so
-- every open period is written by the next run anyway).
INSERT INTO data_version (period, version)
SELECT strftime('%Y-%m', hour, 'unixepoch'), COUNT(*) FROM collected_hour GROUP BY 1;

-- What the files of an open period in an output folder were last written
-- from: recorded by `run` only once the period's whole tree is in place.
-- A run rewrites the period when any of these differ from what the
-- database, the price table and the config give now, or when a listed file
-- is missing or has another size.
CREATE TABLE output_state (
    out_dir      TEXT NOT NULL,     -- the output folder, absolute (realpath)
    period       TEXT NOT NULL,     -- YYYY-MM
    data_version INTEGER NOT NULL,  -- data_version.version of the period (0: no data)
    closed       TEXT NOT NULL,     -- closed periods whose corrections it carries:
                                    -- "YYYY-MM:<data version>" joined by ' ', newest first
    devices      TEXT NOT NULL,     -- hash of the device rows as the period sees them
    prices       TEXT NOT NULL,     -- hash of the price table's entries
    config       TEXT NOT NULL,     -- hash of the gpuledger version and config file bytes
    files        TEXT NOT NULL,     -- "<path under out_dir/period>\t<size>\n", sorted
    written_at   INTEGER NOT NULL,  -- unix seconds (wall clock)
    PRIMARY KEY (out_dir, period)
) WITHOUT ROWID;
