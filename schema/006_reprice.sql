-- gpuledger schema 006: repricings of closed periods that were accepted
-- (--reprice-closed; engine/bill/reprice.c). Applied by engine/ledger/store.c
-- after the earlier files; IF NOT EXISTS so the file applies whatever number
-- the migration list gives it.
--
-- A closed period keeps the unit prices it was frozen with (frozen_row). A
-- price table or a GB-hour conversion that prices a closed period's
-- (GPU model, UTC day) differently is refused unless accepted; an accepted
-- repricing stores here the price entries and unit prices of that
-- (period, model, day) as recomputed, which replace the frozen ones for the
-- check from then on (later runs agree without the flag). The differences
-- themselves are correction rows of the next open period, as for late data.
CREATE TABLE IF NOT EXISTS reprice_accepted (
    period      TEXT NOT NULL,     -- the closed YYYY-MM
    model       TEXT NOT NULL,     -- GPU model
    day         INTEGER NOT NULL,  -- UTC midnight
    price_key   TEXT NOT NULL,     -- pattern@valid_from (frozen_row.price_key)
    unit_price  TEXT NOT NULL,     -- per GB-hour, 12 decimals
    accepted_at INTEGER NOT NULL,  -- unix seconds
    PRIMARY KEY (period, model, day, price_key)
) WITHOUT ROWID;
