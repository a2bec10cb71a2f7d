"""The tests' view of the ledger database: the one test module that opens it.

The schema belongs to the engine (schema/NNN_*.sql, applied in order by
engine/ledger/store.c, which keeps PRAGMA user_version at the number of the
last one applied). A test reads what the engine stored, or alters it by hand
to show what the engine does with a database changed behind its back, only
through the functions below, each named for what a test needs; a schema
change then touches this file instead of every suite, and a test reads as
what it checks. tests/layers_test.py fails when any other file under tests/
imports sqlite3. tests/golden/make_db.py builds the golden fixture through
the writers at the end of this file.

The tables the tests look into (the schema files say what every column
means):

  device             one row per GPU, MIG instance or a node's allocation
                     pseudo-device ("node:NAME"); usage rows point at its id,
                     which depends on the order devices were first stored,
                     so rows are compared by cluster, uuid and gpu_i_id
  usage              one row per hour, pod, device, team and kind: quantity
                     in MiB x s (or GPU fraction x 10^6 x s, steps)
  collected_hour     an hour of a cluster collected: samples, bad_samples,
                     collected_at (the wall clock of the collect)
  collected_query    series and samples per hour and query
  watermark          per cluster, how far collection has reached
  refused_hour       hours whose last collection was refused or failed
  label_series, pod_owner, work_units, pod_peak, device_model_hour
                     what collect keeps besides usage (owners, unit counters,
                     per-pod peaks, the model a device had in an hour)
  usage_key_hour, device_day, pod_day, anomaly_day
                     aggregates of usage kept by triggers (restated below as
                     GROUP BYs of usage, independently of the engine)
  data_version, output_state
                     per period, the count of stored chunks and the one an
                     output folder was written from
  closed_period, closed_gap, closed_check
                     a closed month, what it lacked at a forced close, the
                     last check of a closed month against late data
  frozen_*           a closed month's figures, texts (frozen_invoice) and
                     their digests (frozen_digest)
  reprice_accepted   price changes accepted for closed months

Connections wait up to 30 s for a lock: the engine may be writing.
"""

import contextlib
import glob
import os
import sqlite3

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCHEMA = os.path.join(REPO, "schema")

# what a caller catches: a missing table (an engine without that
# migration), a database that is not one
Error = sqlite3.Error
OperationalError = sqlite3.OperationalError

TIMEOUT = 30


@contextlib.contextmanager
def _open(db, **kw):
    con = sqlite3.connect(db, timeout=TIMEOUT, **kw)
    try:
        yield con
    finally:
        con.close()


@contextlib.contextmanager
def _change(db):
    """A connection whose statements are committed together on success."""
    with _open(db) as con:
        yield con
        con.commit()


def _run(db, *statements):
    """Runs statements (SQL, or (SQL, arguments)) in one transaction;
    returns the rows they changed."""
    n = 0
    with _change(db) as con:
        for s in statements:
            sql, args = (s, ()) if isinstance(s, str) else s
            n += max(0, con.execute(sql, args).rowcount)
    return n


def _one(db, sql, args=()):
    with _open(db) as con:
        return con.execute(sql, args).fetchone()[0]


def _all(db, sql, args=()):
    with _open(db) as con:
        return con.execute(sql, args).fetchall()


def _columns(con, table):
    return [r[1] for r in con.execute('PRAGMA table_info("%s")' % table)]


# ---------------------------------------------------------------- schema

def migrations():
    """The schema files in the order they are applied."""
    return sorted(glob.glob(os.path.join(SCHEMA, "[0-9][0-9][0-9]_*.sql")))


def latest_schema():
    """The schema version a database has once the engine opened it."""
    return len(migrations())


def schema_version(db):
    return _one(db, "PRAGMA user_version")


def integrity(db):
    """PRAGMA integrity_check's lines: 'ok' when it finds nothing."""
    return "\n".join(str(r[0]) for r in _all(db, "PRAGMA integrity_check"))


def file_state(db):
    """(journal mode, table names, user_version): what the engine must
    leave untouched in a database it refuses."""
    with _open(db) as con:
        mode = con.execute("PRAGMA journal_mode").fetchone()[0]
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master")]
        version = con.execute("PRAGMA user_version").fetchone()[0]
    return mode, tables, version


def make_foreign(db, version):
    """A database that is not the ledger's: one table of its own and the
    given user_version."""
    _run(db, "CREATE TABLE keep (x)", "PRAGMA user_version = %d" % version)


def make_placeholder(db):
    """A database file that exists (a table of its own, no ledger schema)."""
    with _open(db) as con:
        con.execute("CREATE TABLE IF NOT EXISTS t (x)")


def copy(src, dest):
    """dest as a consistent copy of src (SQLite's online backup)."""
    with _open(src) as con, _open(dest) as out:
        con.backup(out)
    return dest


def vacuum_into(db, dest):
    """A VACUUMed copy of db at dest (which must not exist)."""
    with _open(db) as con:
        con.execute("VACUUM INTO ?", (dest,))


def dump(db):
    """Every table's rows, each as repr, sorted (the database as it was)."""
    with _open(db) as con:
        out = {}
        for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                "ORDER BY name"):
            out[t] = sorted(map(repr, con.execute('SELECT * FROM "%s"' % t)))
        return out


# columns whose values depend on when or how often the engine ran, not on
# what it stored: the wall clock (names ending in "_at") and the chunk
# counters (a killed run's committed chunks are stored again by the next)
WALL_CLOCK_SUFFIX = "_at"
COUNTERS = {("data_version", "version"), ("output_state", "data_version")}
# the advice's daily groups: a collection builds the days before its
# window, so which days are built follows where runs started; compared as
# their agreement with the rows instead (_peak_day_mismatches)
PEAK_DAY_TABLES = ("pod_peak_day", "node_peak_hour", "pod_peak_day_built", "pod_peak_day_figures",
                   "pod_peak_day_size")


def comparable_figures(db):
    """({table: (columns, sorted rows)}, [(period, recorded, current)]):
    every table without the wall clock and the chunk counters, devices
    without their id (a node's pseudo-device without first/last seen),
    usage rows naming their device by cluster, uuid and gpu_i_id; then each
    output state's recorded data version beside the period's current one."""
    with _open(db) as con:
        out = {}
        tables = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]
        for t in tables:
            if t in PEAK_DAY_TABLES:
                continue
            cols = _columns(con, t)
            keep = [c for c in cols if not c.endswith(WALL_CLOCK_SUFFIX) and (t, c) not in COUNTERS]
            if t == "device":
                keep = [c for c in keep if c != "id"]
            if t == "device" and "first_seen" in keep:
                # a node's pseudo-device has no samples: collect stores the
                # start of the chunk as its first/last seen, so they follow
                # where runs started (no output reads them)
                sql = "SELECT %s FROM device" % ", ".join(
                    "CASE WHEN uuid LIKE 'node:%%' THEN NULL ELSE %s END" % c
                    if c in ("first_seen", "last_seen") else c for c in keep)
            elif t == "usage":
                sel = ", ".join("d.cluster, d.uuid, d.gpu_i_id" if c == "device_id" else "u." + c
                                for c in keep)
                sql = "SELECT %s FROM usage u JOIN device d ON d.id = u.device_id" % sel
            else:
                sql = "SELECT %s FROM \"%s\"" % (", ".join('"%s"' % c for c in keep), t)
            out[t] = (keep, sorted(con.execute(sql).fetchall(), key=repr))
        if "pod_peak_day_built" in tables:
            out["built advice days against their rows"] = (["mismatch"],
                                                            _peak_day_mismatches(con))
        versions = []
        if "output_state" in tables:
            versions = con.execute(
                "SELECT o.period, o.data_version, coalesce(v.version, 0) FROM output_state o "
                "LEFT JOIN data_version v ON v.period = o.period").fetchall()
        return out, versions


# what a backup must carry over unchanged (compared without the wall clock)
BACKUP_TABLES = ("usage", "collected_hour", "frozen_row", "frozen_invoice", "watermark",
                 "closed_period", "device")


def backup_tables(db):
    """{table: sorted rows without the "_at" columns} of BACKUP_TABLES."""
    with _open(db) as con:
        out = {}
        for table in BACKUP_TABLES:
            cols = [c for c in _columns(con, table) if not c.endswith(WALL_CLOCK_SUFFIX)]
            out[table] = sorted(con.execute("SELECT %s FROM %s" % (", ".join(cols), table))
                                .fetchall(), key=repr)
        return out


# ---------------------------------------------------------------- collected

def usage_by_device(db, device_cluster=False):
    """Every usage row, its device by uuid and gpu_i_id (with the device's
    cluster too when device_cluster): (hour, cluster, namespace, pod,
    [device cluster,] uuid, gpu_i_id, team, kind, quantity, estimated,
    first_seen, last_seen), ordered by the first eight."""
    dev = "d.cluster, d.uuid, d.gpu_i_id" if device_cluster else "d.uuid, d.gpu_i_id"
    return _all(db, "SELECT u.hour, u.cluster, u.namespace, u.pod, %s, u.team, u.kind, "
                    "u.quantity, u.estimated, u.first_seen, u.last_seen FROM usage u "
                    "JOIN device d ON d.id = u.device_id ORDER BY 1,2,3,4,5,6,7,8" % dev)


def has_usage_table(db):
    return bool(_all(db, "SELECT 1 FROM sqlite_master WHERE name = 'usage'"))


def devices(db, node_seen=True):
    """(cluster, uuid, gpu_i_id, gpu_i_profile, model, hostname,
    max_capacity_mib, first_seen, last_seen) of every device, sorted; a
    node's pseudo-device without its seen times unless node_seen (they follow
    where collect's chunks started)."""
    seen = ("first_seen, last_seen" if node_seen else
            "CASE WHEN uuid LIKE 'node:%' THEN NULL ELSE first_seen END, "
            "CASE WHEN uuid LIKE 'node:%' THEN NULL ELSE last_seen END")
    return _all(db, "SELECT cluster, uuid, gpu_i_id, gpu_i_profile, model, hostname, "
                    "max_capacity_mib, %s FROM device ORDER BY 1,2,3" % seen)


def whole_gpus(db):
    """The number of whole GPUs (no MIG instance, no node pseudo-device)."""
    return _one(db, "SELECT count(*) FROM device WHERE uuid NOT LIKE 'node:%' "
                    "AND gpu_i_id = ''")


def collected_hours(db):
    """(cluster, hour, samples, bad_samples) of every collected hour, sorted."""
    return _all(db, "SELECT cluster, hour, samples, bad_samples FROM collected_hour "
                    "ORDER BY 1,2")


def bad_sample_hours(db):
    """(cluster, hour, bad_samples) of the hours with skipped samples, sorted."""
    return _all(db, "SELECT cluster, hour, bad_samples FROM collected_hour "
                    "WHERE bad_samples != 0 ORDER BY 1,2")


def bump_last_collected(db):
    """The last collected hour re-stamped a second later, as after each
    hourly collect into the open month (its data changed)."""
    _run(db, "UPDATE collected_hour SET collected_at = collected_at + 1 WHERE hour = "
             "(SELECT MAX(hour) FROM collected_hour)")


def query_counts(db, query=None):
    """(cluster, hour, query, series, samples) of every hour and query,
    sorted; with query, (cluster, hour, series, samples) of that query's."""
    if query is None:
        return _all(db, "SELECT cluster, hour, query, series, samples FROM collected_query "
                        "ORDER BY 1,2,3")
    return _all(db, "SELECT cluster, hour, series, samples FROM collected_query "
                    "WHERE query = ? ORDER BY 1,2", (query,))


def watermarks(db):
    """(cluster, collected_to) of every cluster, sorted."""
    return _all(db, "SELECT cluster, collected_to FROM watermark ORDER BY 1")


def lowest_watermark(db):
    return _one(db, "SELECT min(collected_to) FROM watermark")


def refused_hours(db, cluster):
    """The hours of cluster whose last collection was refused or failed."""
    return [r[0] for r in _all(db, "SELECT hour FROM refused_hour WHERE cluster = ? "
                                   "ORDER BY hour", (cluster,))]


# text columns as bytes: an engine may have stored invalid UTF-8
RAW_TABLES = {"usage": "*", "device": "*",
              "collected_hour": "cluster, hour, samples, bad_samples",  # not when
              "label_series": "*", "watermark": "*"}


def raw_tables(db):
    """{table: sorted rows, text as bytes} of what collect stores."""
    with _open(db) as con:
        con.text_factory = bytes
        return {t: sorted(con.execute("SELECT %s FROM %s" % (cols, t)).fetchall())
                for t, cols in RAW_TABLES.items()}


# ---------------------------------------------------------------- usage

def usage_count(db, hour_from=None, hour_to=None):
    """The number of usage rows (of hours in [hour_from, hour_to))."""
    if hour_from is None:
        return _one(db, "SELECT count(*) FROM usage")
    return _one(db, "SELECT count(*) FROM usage WHERE hour >= ? AND hour < ?",
                (hour_from, hour_to))


def last_usage_hour(db):
    return _one(db, "SELECT max(hour) FROM usage")


def first_usage_hour(db):
    return _one(db, "SELECT min(hour) FROM usage")


def usage_sums(db, hour_from=None, hour_to=None):
    """{(cluster, hour, kind): summed quantity} (of hours in [hour_from, hour_to))."""
    where, args = ("1", ()) if hour_from is None else ("hour >= ? AND hour < ?",
                                                       (hour_from, hour_to))
    return {(c, h, k): q for c, h, k, q in _all(
        db, "SELECT cluster, hour, kind, sum(quantity) FROM usage WHERE %s "
            "GROUP BY 1, 2, 3" % where, args)}


def memory_used_total(db):
    """(rows, MiB x s) of memory_used."""
    return tuple(_all(db, "SELECT count(*), coalesce(sum(quantity), 0) FROM usage "
                          "WHERE kind = 'memory_used'")[0])


def pod_usage(db):
    """(hour, namespace, pod, uuid, team, kind, quantity, estimated) of every
    usage row, sorted."""
    return _all(db, "SELECT u.hour, u.namespace, u.pod, d.uuid, u.team, u.kind, u.quantity, "
                    "u.estimated FROM usage u JOIN device d ON d.id = u.device_id "
                    "ORDER BY 1, 2, 3, 4, 5, 6")


def team_memory_and_gpu(db):
    """{team: (memory_used MiB x s, allocated_gpu)}; a team without one of
    them has 0 there."""
    got = {}
    for team, kind, q in _all(db, "SELECT team, kind, sum(quantity) FROM usage WHERE kind IN "
                                  "('memory_used', 'allocated_gpu') GROUP BY team, kind"):
        mib, gpu = got.get(team, (0, 0))
        got[team] = (q, gpu) if kind == "memory_used" else (mib, q)
    return got


def team_memory_by_hour(db):
    """{(hour, team): memory_used MiB x s} of the hours where it is not 0."""
    return {(h, t): q for h, t, q in _all(
        db, "SELECT hour, team, sum(quantity) FROM usage WHERE kind = 'memory_used' "
            "GROUP BY 1, 2 HAVING sum(quantity) != 0")}


def whole_device_hours(db, uuid, kinds):
    """{(hour, kind): quantity} of the whole GPU uuid (not a MIG instance)."""
    return {(h, k): q for h, k, q in _all(
        db, "SELECT u.hour, u.kind, SUM(u.quantity) FROM usage u JOIN device d ON d.id = "
            "u.device_id WHERE d.uuid = ? AND d.gpu_i_id = '' AND u.kind IN (%s) "
            "GROUP BY 1, 2" % ", ".join("?" * len(kinds)), (uuid,) + tuple(kinds))}


def device_hours(db):
    """The number of distinct (hour, device) pairs with usage."""
    return _one(db, "SELECT count(*) FROM (SELECT DISTINCT hour, device_id FROM usage)")


def delete_first_memory_hour(db, team):
    """The first hour of team's memory_used rows deleted (data changed
    under a closed month)."""
    _run(db, ("DELETE FROM usage WHERE team = ? AND kind = 'memory_used' AND hour = "
              "(SELECT MIN(hour) FROM usage WHERE team = ? AND kind = 'memory_used')",
              (team, team)))


class Writer:
    """A connection that rewrites usage, each change its own immediate
    transaction (a concurrent writer beside the engine)."""

    def __init__(self, db):
        self.con = sqlite3.connect(db, timeout=TIMEOUT, isolation_level=None)

    def set_usage(self, hour, team, kind, quantity):
        self.con.execute("BEGIN IMMEDIATE")
        self.con.execute("UPDATE usage SET quantity = ? WHERE hour = ? AND team = ? "
                         "AND kind = ?", (quantity, hour, team, kind))
        self.con.execute("COMMIT")

    def close(self):
        self.con.close()


def alter_usage(db, h0, hours):
    """Rows changed by hand over [h0, h0 + hours): quantities doubled, a
    'ghost-' copy of every pod's row added (estimated), and at h0 the
    memory_used rows of one pod deleted."""
    end = h0 + hours * 3600
    _run(db, ("UPDATE usage SET quantity = quantity * 2 WHERE hour >= ? AND hour < ?",
              (h0, end)),
         ("INSERT INTO usage SELECT hour, cluster, namespace, 'ghost-' || pod, device_id,"
          " team, kind, quantity, 1, first_seen, last_seen FROM usage"
          " WHERE hour >= ? AND hour < ? AND pod <> ''", (h0, end)),
         ("DELETE FROM usage WHERE hour = ? AND kind = 'memory_used' AND pod IN"
          " (SELECT pod FROM usage WHERE hour = ? AND pod <> '' LIMIT 1)", (h0, h0)))


def delete_usage_as_prune(db, first_day, end_day):
    """Usage rows of [first_day, end_day) (YYYY-MM-DD) deleted the way prune
    does (a row in usage_prune while deleting, so the aggregates keep
    them; the table is created when missing, so that an engine without it
    shows what deleting the rows does to its outputs); returns the count."""
    con = sqlite3.connect(db, timeout=TIMEOUT, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("CREATE TABLE IF NOT EXISTS usage_prune (reason TEXT NOT NULL)")
        con.execute("INSERT INTO usage_prune VALUES ('agg_test')")
        n = con.execute("DELETE FROM usage WHERE hour >= strftime('%s', ?) AND "
                        "hour < strftime('%s', ?)", (first_day, end_day)).rowcount
        con.execute("DELETE FROM usage_prune")
        con.execute("COMMIT")
    finally:
        con.close()
    return n


# ---------------------------------------------------------------- aggregates

# The aggregates as GROUP BYs of usage (the schema file's definitions,
# restated here independently of the engine's maintenance): name ->
# (expected from usage, stored).
AGGREGATES = {
    "usage_key_hour": (
        "SELECT u.hour, u.cluster, d.model, u.team, u.kind, SUM(u.quantity), MAX(u.estimated),"
        " COUNT(*) FROM usage u JOIN device d ON d.id = u.device_id GROUP BY 1, 2, 3, 4, 5",
        "SELECT hour, cluster, model, team, kind, quantity, estimated, rows FROM usage_key_hour"),
    "device_day": (
        "SELECT hour / 86400 * 86400, device_id, kind, SUM(quantity), COUNT(*) FROM usage"
        " GROUP BY 1, 2, 3",
        "SELECT day, device_id, kind, quantity, rows FROM device_day"),
    "pod_day": (
        "SELECT team, hour / 86400 * 86400, cluster, namespace, pod, kind, SUM(quantity),"
        " SUM(estimated <> 0), COUNT(*) FROM usage WHERE pod <> ''"
        " AND kind IN ('memory_used', 'allocated', 'reserved_unused') GROUP BY 1, 2, 3, 4, 5, 6",
        "SELECT team, day, cluster, namespace, pod, kind, quantity, estimated, rows FROM pod_day"),
    "anomaly_day": (
        "SELECT hour / 86400 * 86400, kind, cluster, namespace, pod, team, device_id,"
        " MIN(first_seen), MAX(last_seen), SUM(quantity) FROM usage"
        " WHERE kind IN ('anomaly_unallocated', 'anomaly_excess_devices')"
        " GROUP BY 1, 2, 3, 4, 5, 6, 7",
        "SELECT day, kind, cluster, namespace, pod, team, device_id, first_seen, last_seen,"
        " quantity FROM anomaly_day"),
}
# an aggregate that a scenario without anomalies leaves empty
AGGREGATES_MAY_BE_EMPTY = ("anomaly_day",)


def _sorted_rows(db, sql):
    with _open(db) as con:
        return sorted(tuple(r) for r in con.execute(sql))


def aggregates(db):
    """{name: (rows expected from usage, rows stored)}, each sorted."""
    return {name: (_sorted_rows(db, want), _sorted_rows(db, got))
            for name, (want, got) in AGGREGATES.items()}


def aggregate_tables(db):
    """{name: sorted rows stored} of every aggregate."""
    return {name: _sorted_rows(db, got) for name, (_, got) in AGGREGATES.items()}


def non_integer_quantities(db):
    """{name: number of rows whose quantity is not stored as an integer}."""
    with _open(db) as con:
        return {name: con.execute("SELECT count(*) FROM %s WHERE typeof(quantity) <> 'integer'"
                                  % name).fetchone()[0] for name in AGGREGATES}


def key_hours(db):
    """Every usage_key_hour row, sorted."""
    return sorted(_all(db, "SELECT * FROM usage_key_hour"))


def copy_as_schema(src, dest, version):
    """dest: a database of the first `version` schema files holding the
    rows of src's tables that schema has (as an older engine left it)."""
    with _open(dest) as con:
        for f in sorted(os.listdir(SCHEMA))[:version]:
            with open(os.path.join(SCHEMA, f)) as fh:
                con.executescript(fh.read())
        con.execute("PRAGMA user_version = %d" % version)
        con.execute("ATTACH ? AS g", (src,))
        names = [r[0] for r in con.execute("SELECT name FROM main.sqlite_master WHERE type = "
                                           "'table'")]
        for t in names:
            con.execute("DELETE FROM main.%s" % t)
            con.execute("INSERT INTO main.%s SELECT * FROM g.%s" % (t, t))
        con.commit()
        con.execute("DETACH g")


# ---------------------------------------------------------------- models, owners, peaks, units

def device_model_hours(db):
    """(hour, uuid, gpu_i_id, model, max_capacity_mib) of every device-hour
    with its model, sorted."""
    return sorted(_all(db, "SELECT m.hour, d.uuid, d.gpu_i_id, m.model,"
                           " m.max_capacity_mib FROM device_model_hour m"
                           " JOIN device d ON d.id = m.device_id"))


def device_model_hour_count(db):
    return _one(db, "SELECT count(*) FROM device_model_hour")


def drop_device_model_hours(db):
    """The database as before the model-per-hour migration (schema 9)."""
    _run(db, "DROP TABLE device_model_hour", "PRAGMA user_version = 9")


def pod_owners(db):
    """(namespace, pod, owner_kind, owner_name) of every pod with an owner."""
    return _all(db, "SELECT namespace, pod, owner_kind, owner_name FROM pod_owner")


def work_units(db):
    """(cluster, namespace, pod, counter, hour, units, gaps), sorted."""
    return _all(db, "SELECT cluster, namespace, pod, counter, hour, units, gaps "
                    "FROM work_units ORDER BY 1, 2, 3, 4, 5")


def _unbuild(con, where="1", args=()):
    """The built marks (schema 014) of the days matching where removed, as
    the engine's writer of pod_peak does when it replaces a day's rows: a
    helper writing pod_peak directly must do the same (set-up)."""
    if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'pod_peak_day_built'").fetchone():
        con.execute("DELETE FROM pod_peak_day_built WHERE " + where, args)


def repeat_window(db, w0, w1, copies):
    """The per-hour rows (peaks, device models, usage) of [w0, w1) copied
    copies - 1 more times, each shifted by another window length."""
    with _change(db) as con:
        for table in ("pod_peak", "device_model_hour", "usage"):
            cols = _columns(con, table)
            sel = ", ".join("hour + ?" if c == "hour" else c for c in cols)
            for k in range(1, copies):
                con.execute("INSERT INTO %s (%s) SELECT %s FROM %s WHERE hour >= ? AND "
                            "hour < ?" % (table, ", ".join(cols), sel, table),
                            (k * (w1 - w0), w0, w1))
        _unbuild(con)


def remeasure_device(db, uuid, hours, capacity_mib):
    """The whole GPU uuid measured at capacity_mib in the given hours (its
    device_model_hour rows, written with the device's model when absent);
    returns the rows changed."""
    return _run(db, *[("INSERT INTO device_model_hour (hour, device_id, model, max_capacity_mib)"
                       " SELECT ?, d.id, d.model, ? FROM device d WHERE d.uuid = ?"
                       " AND d.gpu_i_profile = '' ON CONFLICT DO UPDATE SET"
                       " max_capacity_mib = excluded.max_capacity_mib",
                       (h, capacity_mib, uuid)) for h in hours])


def copy_cluster(db, src, dst):
    """Cluster src's devices (new ids), their models per hour, pod peaks,
    usage and pod owners copied as cluster dst's; returns the peak rows
    copied."""
    dev = ("JOIN device o ON o.id = t.device_id AND o.cluster = ?1"
           " JOIN device n ON n.cluster = ?2 AND n.uuid = o.uuid AND n.gpu_i_id = o.gpu_i_id")
    with _change(db) as con:
        con.execute("INSERT INTO device (cluster, uuid, gpu_i_id, gpu_i_profile, model, hostname,"
                    " max_capacity_mib, first_seen, last_seen) SELECT ?2, uuid, gpu_i_id,"
                    " gpu_i_profile, model, hostname, max_capacity_mib, first_seen, last_seen"
                    " FROM device WHERE cluster = ?1", (src, dst))
        con.execute("INSERT INTO device_model_hour (hour, device_id, model, max_capacity_mib)"
                    " SELECT t.hour, n.id, t.model, t.max_capacity_mib FROM device_model_hour t "
                    + dev, (src, dst))
        con.execute("INSERT INTO pod_owner (cluster, namespace, pod, owner_kind, owner_name,"
                    " seen_at) SELECT ?2, namespace, pod, owner_kind, owner_name, seen_at"
                    " FROM pod_owner WHERE cluster = ?1", (src, dst))
        for table in ("pod_peak", "usage"):
            cols = [c for c in _columns(con, table) if c not in ("cluster", "device_id")]
            con.execute("INSERT INTO %s (cluster, device_id, %s) SELECT ?2, n.id, %s FROM %s t %s"
                        % (table, ", ".join(cols), ", ".join("t." + c for c in cols), table, dev),
                        (src, dst))
        _unbuild(con, "cluster = ?", (dst,))
        return con.execute("SELECT count(*) FROM pod_peak WHERE cluster = ?", (dst,)).fetchone()[0]


def peak_rows(db):
    """Every pod peak with what the advice needs beside it: (hour, cluster,
    namespace, pod, uuid, hostname, owner kind, owner name, MIG profile,
    model that hour, capacity that hour, bucket, steps, peak MiB, allocated
    MiB, the team holding the most memory_used of that pod and device)."""
    return _all(db,
                "SELECT k.hour, k.cluster, k.namespace, k.pod, d.uuid, d.hostname,"
                " coalesce(o.owner_kind, ''), coalesce(o.owner_name, ''), d.gpu_i_profile,"
                " coalesce(m.model, d.model), coalesce(m.max_capacity_mib, d.max_capacity_mib),"
                " k.bucket, k.steps, k.peak_mib, k.alloc_mib,"
                " (SELECT u.team FROM usage u WHERE u.hour = k.hour AND u.cluster = k.cluster"
                "  AND u.namespace = k.namespace AND u.pod = k.pod AND u.device_id = k.device_id"
                "  AND u.kind = 'memory_used' ORDER BY u.quantity DESC, u.team LIMIT 1)"
                " FROM pod_peak k JOIN device d ON d.id = k.device_id"
                " LEFT JOIN device_model_hour m ON m.hour = k.hour AND m.device_id = k.device_id"
                " LEFT JOIN pod_owner o ON o.cluster = k.cluster AND o.namespace = k.namespace"
                "  AND o.pod = k.pod")


# A built day's groups and node-hours, restated from its pod_peak rows (the
# schema file's definitions: the device's model and capacity of the hour,
# else the device row's; a node-hour of whole GPUs of known capacity sums
# each pod's largest peak per device and counts the devices).
_DAY_OF = "k.hour - k.hour % 86400"
_BUILT = " JOIN pod_peak_day_built b ON b.cluster = k.cluster AND b.day = " + _DAY_OF
_MODEL = (" JOIN device d ON d.id = k.device_id LEFT JOIN device_model_hour m"
          " ON m.hour = k.hour AND m.device_id = k.device_id")
PEAK_DAY_EXPECTED = {
    "pod_peak_day": (
        "SELECT k.cluster, " + _DAY_OF + ", k.namespace, k.pod, k.device_id,"
        " coalesce(m.model, d.model), coalesce(m.max_capacity_mib, d.max_capacity_mib),"
        " k.bucket, k.alloc_mib, k.alloc_ugpu, SUM(k.steps), MAX(k.peak_mib), MIN(k.hour)"
        " FROM pod_peak k" + _BUILT + _MODEL + " GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10",
        "SELECT p.cluster, p.day, namespace, pod, device_id, model, capacity_mib, bucket,"
        " alloc_mib, alloc_ugpu, steps, peak_mib, first_hour FROM pod_peak_day p"
        " JOIN pod_peak_day_built b ON b.cluster = p.cluster AND b.day = p.day"),
    "node_peak_hour": (
        "SELECT k.cluster, k.hour, d.hostname, coalesce(m.model, d.model) AS model,"
        " coalesce(m.max_capacity_mib, d.max_capacity_mib) AS cap, SUM(k.peak),"
        " COUNT(DISTINCT d.uuid)"
        " FROM (SELECT k.cluster, k.hour, k.device_id, MAX(k.peak_mib) AS peak FROM pod_peak k"
        + _BUILT + " GROUP BY k.cluster, k.hour, k.namespace, k.pod, k.device_id) k" + _MODEL +
        " WHERE d.gpu_i_profile = '' AND cap > 0 GROUP BY 1, 2, 3, 4, 5",
        "SELECT n.cluster, hour, hostname, model, capacity_mib, sum_peak, devices"
        " FROM node_peak_hour n JOIN pod_peak_day_built b ON b.cluster = n.cluster"
        " AND b.day = n.hour - n.hour % 86400"),
    # the day's (hour, namespace, pod) with used memory and no peak row
    "pod_peak_day_figures": (
        "SELECT b.cluster, b.day, (SELECT count(*) FROM (SELECT u.hour, u.namespace, u.pod"
        "  FROM usage u WHERE u.cluster = b.cluster AND u.hour - u.hour % 86400 = b.day"
        "  AND u.kind = 'memory_used' AND u.pod <> '' EXCEPT SELECT k.hour, k.namespace, k.pod"
        "  FROM pod_peak k WHERE k.cluster = b.cluster AND k.hour - k.hour % 86400 = b.day))"
        " FROM pod_peak_day_built b",
        "SELECT f.cluster, f.day, f.missing_pod_hours FROM pod_peak_day_figures f"
        " JOIN pod_peak_day_built b ON b.cluster = f.cluster AND b.day = f.day"),
    # the day's GPU sizes: each hour's model and capacity of a real device
    "pod_peak_day_size": (
        "SELECT DISTINCT d.cluster, m.hour - m.hour % 86400, m.model, d.gpu_i_profile,"
        " m.max_capacity_mib FROM device_model_hour m JOIN device d ON d.id = m.device_id"
        " JOIN pod_peak_day_built b ON b.cluster = d.cluster AND b.day = m.hour - m.hour % 86400"
        " WHERE m.max_capacity_mib > 0 AND substr(d.uuid, 1, 5) <> 'node:'",
        "SELECT z.cluster, z.day, z.model, z.profile, z.capacity_mib FROM pod_peak_day_size z"
        " JOIN pod_peak_day_built b ON b.cluster = z.cluster AND b.day = z.day"),
}


def _peak_day_mismatches(con):
    out = []
    for table, (want_sql, got_sql) in PEAK_DAY_EXPECTED.items():
        want = sorted(tuple(r) for r in con.execute(want_sql))
        got = sorted(tuple(r) for r in con.execute(got_sql))
        out += [(table, "expected", r) for r in sorted(set(want) - set(got))]
        out += [(table, "stored", r) for r in sorted(set(got) - set(want))]
    return out


def peak_day_mismatches(db):
    """The rows of the built days' groups and node-hours that differ from
    their restatement from the days' pod_peak rows: (table, "expected" or
    "stored", row), [] when they agree."""
    with _open(db) as con:
        return _peak_day_mismatches(con)


def peak_days_built(db):
    """(cluster, day) of every day whose daily advice groups are built, sorted."""
    return _all(db, "SELECT cluster, day FROM pod_peak_day_built ORDER BY 1, 2")


def peak_day_rows(db, cluster, day):
    """The daily groups and node-hours stored for cluster's day (built or
    not)."""
    return _one(db, "SELECT (SELECT count(*) FROM pod_peak_day WHERE cluster = ?1 AND day = ?2)"
                    " + (SELECT count(*) FROM node_peak_hour WHERE cluster = ?1 AND hour >= ?2"
                    " AND hour < ?2 + 86400)", (cluster, day))


def drop_trigger(db, name):
    """Trigger name dropped (a database changed by hand)."""
    _run(db, ("DROP TRIGGER %s" % name, ()))


def unbuild_peak_days(db):
    """Every day's built mark deleted (the advice reads every hourly row)."""
    return _run(db, ("DELETE FROM pod_peak_day_built", ()))


def add_to_day_peaks(db, pod, mib):
    """mib added to the pod's peaks in the built daily groups alone (their
    hourly rows unchanged): a read of those groups shows it; returns the
    groups changed."""
    return _run(db, ("UPDATE pod_peak_day SET peak_mib = peak_mib + ? WHERE pod = ?", (mib, pod)))


def add_to_hour_peaks(db, hour, mib):
    """mib added to every pod peak of the hour; returns the rows changed."""
    with _change(db) as con:
        n = con.execute("UPDATE pod_peak SET peak_mib = peak_mib + ? WHERE hour = ?",
                        (mib, hour)).rowcount
        _unbuild(con, "day = ?", (hour - hour % 86400,))
    return n


def delete_hour_peaks(db, hour_from, hour_to):
    """The pod peaks of hours [hour_from, hour_to) deleted (their usage kept:
    hours as server mode stores them); returns the rows deleted."""
    return _run(db, ("DELETE FROM pod_peak WHERE hour >= ? AND hour < ?", (hour_from, hour_to)))


def add_ghost_usage(db, hour_from, hour_to):
    """Each memory_used row of hours [hour_from, hour_to) copied for a pod
    named "ghost-" + its pod (a pod without peak rows); returns the rows."""
    with _change(db) as con:
        cols = _columns(con, "usage")
        sel = ", ".join("'ghost-' || pod" if c == "pod" else c for c in cols)
        return con.execute("INSERT INTO usage (%s) SELECT %s FROM usage WHERE hour >= ? AND"
                           " hour < ? AND kind = 'memory_used' AND pod <> ''"
                           % (", ".join(cols), sel), (hour_from, hour_to)).rowcount


def add_to_day_missing(db, n):
    """n added to every built day's stored count of pod-hours without peak
    data (their rows unchanged); returns the days changed."""
    return _run(db, ("UPDATE pod_peak_day_figures SET missing_pod_hours = missing_pod_hours + ?",
                     (n,)))


def day_missing_total(db):
    """The stored counts of pod-hours without peak data of the built days, summed."""
    return _one(db, "SELECT coalesce(sum(f.missing_pod_hours), 0) FROM pod_peak_day_figures f"
                    " JOIN pod_peak_day_built b ON b.cluster = f.cluster AND b.day = f.day")


def delete_day_sizes(db):
    """Every built day's stored GPU sizes deleted; returns how many."""
    return _run(db, "DELETE FROM pod_peak_day_size")


def delete_pod_peaks(db):
    """Every pod peak deleted; returns how many there were."""
    with _change(db) as con:
        n = con.execute("SELECT count(*) FROM pod_peak").fetchone()[0]
        con.execute("DELETE FROM pod_peak")
        _unbuild(con)
    return n


def break_peak_day_build(db):
    """Every build of an advice day made to fail at its mark (a trigger
    raising an error): the build's failure without a broken database."""
    _run(db, ("CREATE TRIGGER break_peak_day BEFORE INSERT ON pod_peak_day_built BEGIN"
              " SELECT RAISE(ABORT, 'advice days broken by the test'); END", ()))


def pod_hours_without_peak(db):
    """The number of (hour, namespace, pod) with memory_used and no peak."""
    return _one(db, "SELECT count(*) FROM (SELECT DISTINCT hour, namespace, pod FROM usage "
                    "WHERE kind = 'memory_used' AND pod <> '' EXCEPT "
                    "SELECT DISTINCT hour, namespace, pod FROM pod_peak)")


# ---------------------------------------------------------------- closed months

def closed_periods(db):
    """The closed periods, in the order the table gives them."""
    return [r[0] for r in _all(db, "SELECT period FROM closed_period")]


def closes(db):
    """(period, closed_at) of every closed period, by period."""
    return _all(db, "SELECT period, closed_at FROM closed_period ORDER BY period")


def frozen_invoice_count(db, period):
    return _one(db, "SELECT count(*) FROM frozen_invoice WHERE period = ?", (period,))


def close_state(db, period):
    """'open' or 'closed' when period is wholly one, else what is half done
    ("half: ..."): counts of the period's rows in the close's tables."""
    with _open(db) as con:
        tables = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND "
            "(name LIKE 'frozen%' OR name LIKE 'closed%')")]
        counts = {}
        for t in tables:
            if "period" in _columns(con, t):
                counts[t] = con.execute("SELECT count(*) FROM %s WHERE period = ?" % t,
                                        (period,)).fetchone()[0]
    if not counts.get("closed_period"):
        rest = {t: n for t, n in counts.items() if n}
        return "open" if not rest else "half: open with rows %s" % rest
    if counts["closed_period"] == 1 and counts.get("frozen_invoice") and \
            counts.get("frozen_row"):
        return "closed"
    return "half: closed with %s" % counts


def delete_missing_gaps(db, period):
    """The 'missing' rows of what a forced close of period lacked deleted;
    returns how many."""
    return _run(db, ("DELETE FROM closed_gap WHERE period = ? AND kind = 'missing'", (period,)))


def delete_closed_checks(db):
    """As a database that never recorded a check of its closed months."""
    _run(db, "DELETE FROM closed_check")


def closed_check_count(db):
    """The number of recorded checks of closed months against late data."""
    return _one(db, "SELECT count(*) FROM closed_check")


def reprice_accepted_count(db):
    """The number of accepted price changes of closed months; None when the
    table is missing (an engine without it)."""
    try:
        return _one(db, "SELECT count(*) FROM reprice_accepted")
    except sqlite3.Error:
        return None


def stored_texts(db, period):
    """([(team, invoice JSON, invoice Markdown)], FOCUS CSV) stored at the
    close of period."""
    with _open(db) as con:
        texts = con.execute("SELECT team, json, md FROM frozen_invoice WHERE period = ?",
                            (period,)).fetchall()
        csv = con.execute("SELECT focus_csv FROM closed_period WHERE period = ?",
                          (period,)).fetchone()[0]
    return texts, csv


def delete_stored_texts(db):
    """Every invoice and FOCUS text stored at a close deleted."""
    _run(db, "DELETE FROM frozen_invoice", "UPDATE closed_period SET focus_csv = ''")


def append_to_stored_markdown(db, period, text, team=None):
    """text appended to the Markdown invoices stored for period (team's only,
    when given)."""
    if team is None:
        _run(db, ("UPDATE frozen_invoice SET md = md || ? WHERE period = ?", (text, period)))
    else:
        _run(db, ("UPDATE frozen_invoice SET md = md || ? WHERE period = ? AND team = ?",
                  (text, period, team)))


def frozen_correction_lines(db, period, corrected):
    """The number of frozen lines of period that correct the month corrected."""
    return _one(db, "SELECT COUNT(*) FROM frozen_line WHERE period = ? AND corrected_period = ?",
                (period, corrected))


def frozen_period_count(db):
    """The number of months whose figures were frozen at close."""
    return _one(db, "SELECT COUNT(*) FROM frozen_period")


FIGURE_TABLES = ("frozen_period", "frozen_price", "frozen_head", "frozen_line",
                 "frozen_line_day", "frozen_info", "frozen_anomaly")
DIGEST_TABLES = ("frozen_setting", "frozen_digest")


def migration_number(name):
    """The number of the schema file NNN_name.sql."""
    path, = glob.glob(os.path.join(SCHEMA, "[0-9][0-9][0-9]_%s.sql" % name))
    return int(os.path.basename(path)[:3])


def drop_frozen_figures(db):
    """As an engine before frozen figures left its closed months: only the
    texts (figure and digest tables dropped, user_version 6)."""
    _run(db, *["DROP TABLE IF EXISTS %s" % t for t in FIGURE_TABLES + DIGEST_TABLES],
         "PRAGMA user_version = 6")


def drop_digests(db):
    """As an engine with frozen figures but before their digests left its
    closed months: the schema just before the digests' migration (later
    migrations create their tables only when missing)."""
    _run(db, *["DROP TABLE IF EXISTS %s" % t for t in DIGEST_TABLES],
         "PRAGMA user_version = %d" % (migration_number("frozen_digest") - 1))


def digests(db):
    """{period: number of tables with a digest}; empty for an engine without them."""
    try:
        return dict(_all(db, "SELECT period, COUNT(*) FROM frozen_digest GROUP BY period"))
    except sqlite3.OperationalError:
        return {}


# A closed month's frozen figures altered by hand (the golden database's
# 2026-08, -09 and -10): name -> (the table the engine must name, the
# statements). Each statement alters at least one row of a complete close.
_P9 = "period = '2026-09'"
_FIRST_DAY = ("(SELECT MIN(day) FROM frozen_line_day WHERE period = '2026-09' "
              "AND team = 'ml-research' AND line = 0)")
TAMPERINGS = {
    "day amount": ("frozen_line_day", [
        "UPDATE frozen_line_day SET billed = CAST(billed AS INTEGER) + 1 WHERE %s AND "
        "team = 'ml-research' AND line = 0 AND day = %s" % (_P9, _FIRST_DAY)]),
    "line, day and total": ("frozen_", [
        "UPDATE frozen_line SET amount = CAST(amount AS INTEGER) + 100 WHERE %s AND "
        "team = 'ml-research' AND seq = 0" % _P9,
        "UPDATE frozen_line_day SET billed = CAST(billed AS INTEGER) + 100 WHERE %s "
        "AND team = 'ml-research' AND line = 0 AND day = %s" % (_P9, _FIRST_DAY),
        "UPDATE frozen_head SET total = CAST(total AS INTEGER) + 100 WHERE %s AND "
        "team = 'ml-research'" % _P9]),
    "team name": ("frozen_head", [
        "UPDATE frozen_head SET team_name = 'Someone Else' WHERE %s AND "
        "team = 'ml-research'" % _P9]),
    "FOCUS provider": ("frozen_period", [
        "UPDATE frozen_period SET provider = 'Elsewhere' WHERE %s" % _P9]),
    "price entry": ("frozen_price", [
        "UPDATE frozen_price SET id = id || 'x' WHERE %s AND seq = 0" % _P9]),
    "FOCUS key row": ("frozen_row", [
        "UPDATE frozen_row SET billed_minor = billed_minor + 1 WHERE %s AND "
        "day = (SELECT MIN(day) FROM frozen_row WHERE %s) AND team = (SELECT MIN(team) "
        "FROM frozen_row WHERE %s)" % (_P9, _P9, _P9)]),
    "anomaly deleted": ("frozen_anomaly", [
        "DELETE FROM frozen_anomaly WHERE %s AND seq = 0" % _P9]),
    "billing basis": ("frozen_setting", [
        "UPDATE frozen_setting SET value = 'used' WHERE period = '2026-08' "
        "AND key = 'basis'"]),
    "forced close's gaps deleted": ("closed_gap", [
        "DELETE FROM closed_gap WHERE period = '2026-10'"]),
    "close time": ("closed_period", [
        "UPDATE closed_period SET closed_at = closed_at + 86400 WHERE %s" % _P9]),
    "digest deleted": ("frozen_line", [
        "DELETE FROM frozen_digest WHERE %s AND tbl = 'frozen_line'" % _P9]),
}


def tamper(db, name):
    """Applies TAMPERINGS[name] to db; returns (rows altered, statements):
    nothing altered when a table is missing (an engine without it)."""
    sql = TAMPERINGS[name][1]
    changed = 0
    with _change(db) as con:
        try:
            for stmt in sql:
                changed += con.execute(stmt).rowcount
        except sqlite3.OperationalError:
            changed = 0
    return changed, len(sql)


def add_device(db, cluster, uuid, model, hostname, capacity_mib, first_seen, last_seen):
    """A whole GPU stored by hand (no MIG instance)."""
    _run(db, ("INSERT INTO device (cluster, uuid, gpu_i_id, gpu_i_profile, model, hostname,"
              " max_capacity_mib, first_seen, last_seen) VALUES (?, ?, '', '', ?, ?, ?, ?, ?)",
              (cluster, uuid, model, hostname, capacity_mib, first_seen, last_seen)))


class History:
    """Months of the past written by hand for the trend of a report: key
    hours and frozen FOCUS rows, written together by commit()."""

    def __init__(self, db):
        self.con = sqlite3.connect(db, timeout=TIMEOUT)

    def key_hour(self, hour, cluster, model, team, kind, quantity):
        """One usage_key_hour row (not estimated, one usage row)."""
        self.con.execute("INSERT INTO usage_key_hour (hour, cluster, model, team, kind, quantity,"
                         " estimated, rows) VALUES (?, ?, ?, ?, ?, ?, 0, 1)",
                         (hour, cluster, model, team, kind, quantity))

    def frozen_row(self, period, corrected_period, team, model, day, minor):
        """One frozen memory_used FOCUS row of cluster east billing minor units."""
        self.con.execute("INSERT INTO frozen_row (period, corrected_period, team, cluster, model,"
                         " kind, price_id, price_key, day, unit_price, mib_seconds, gb_hours_nano,"
                         " billed_minor) VALUES (?, ?, ?, 'east', ?, 'memory_used', 'p:1', 'k',"
                         " ?, '0', 0, 0, ?)", (period, corrected_period, team, model, day, minor))

    def correction_of(self, period, corrected_period, team, minor):
        """A correction row in period of one of team's frozen rows of
        corrected_period (a price entry that month has), a day later."""
        self.con.execute("INSERT INTO frozen_row SELECT ?, ?, team, cluster, model,"
                         " kind, price_id, price_key, day + 86400, unit_price, 0, 0, ?"
                         " FROM frozen_row WHERE period = ? AND team = ? LIMIT 1",
                         (period, corrected_period, minor, corrected_period, team))

    def commit(self):
        self.con.commit()

    def close(self):
        self.con.close()


def team_memory_key_hours(db, team, before):
    """(hour, MiB x s) of team's memory_used key hours before the hour before."""
    return _all(db, "SELECT hour, quantity FROM usage_key_hour WHERE team = ? AND "
                    "kind = 'memory_used' AND hour < ?", (team, before))


def team_frozen_minor(db, team, before):
    """(period, billed minor units) of team's frozen rows of periods before before."""
    return _all(db, "SELECT period, billed_minor FROM frozen_row "
                    "WHERE team = ? AND period < ?", (team, before))


# ---------------------------------------------------------------- the golden fixture
# tests/golden/make_db.py writes its rows through these (no engine run).

def create_ledger(path):
    """A new database of every schema file (user_version set as the engine
    sets it, WAL as the engine opens it); returns the open connection."""
    con = sqlite3.connect(path)
    files = migrations()
    for f in files:
        with open(f) as fh:
            con.executescript(fh.read())
    con.execute("PRAGMA user_version = %d" % len(files))
    con.execute("PRAGMA journal_mode = WAL")
    return con


def open_ledger(path):
    """An existing database, for the writers below; commit and close it."""
    return sqlite3.connect(path)


def insert_device(con, id_, cluster, uuid, gpu_i_id, profile, model, hostname, capacity_mib,
                  first_seen, last_seen):
    con.execute("INSERT INTO device (id, cluster, uuid, gpu_i_id, gpu_i_profile, model, "
                "hostname, max_capacity_mib, first_seen, last_seen) "
                "VALUES (?,?,?,?,?,?,?,?,?,?)", (id_, cluster, uuid, gpu_i_id, profile, model,
                                                 hostname, capacity_mib, first_seen, last_seen))


def delete_devices(con):
    """Every device deleted (before a fixture of other devices)."""
    con.execute("DELETE FROM device")


def insert_watermark(con, cluster, collected_to, updated_at):
    con.execute("INSERT INTO watermark VALUES (?, ?, ?)", (cluster, collected_to, updated_at))


def insert_usage(con, hour, cluster, namespace, pod, device_id, team, kind, quantity, estimated,
                 first_seen, last_seen):
    con.execute("INSERT INTO usage VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (hour, cluster, namespace, pod, device_id, team, kind, quantity, estimated,
                 first_seen, last_seen))


def insert_collected_hour(con, cluster, hour, collected_at, samples, bad_samples,
                          replace=True):
    """An hour collected (replacing an earlier collection, or kept when one
    exists unless replace)."""
    con.execute("INSERT OR %s INTO collected_hour VALUES (?,?,?,?,?)"
                % ("REPLACE" if replace else "IGNORE"),
                (cluster, hour, collected_at, samples, bad_samples))
