/* store_digest — SHA-256 digests of a closed period's frozen rows (schema 011). */
#include "store_digest.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "store_sql.h"

/* Every table a closed month is rendered or corrected from, with its
 * columns listed (a column added later does not change an older digest)
 * in primary-key order. ?1 = the period. */
static const struct {
    const char *name, *sql;
} tables[] = {
    {"closed_period", "SELECT closed_at FROM closed_period WHERE period = ?1"},
    {"frozen_row", "SELECT corrected_period, team, cluster, model, kind, price_id, price_key, "
                   "day, unit_price, mib_seconds, gb_hours_nano, billed_minor FROM frozen_row "
                   "WHERE period = ?1 ORDER BY corrected_period, team, cluster, model, kind, "
                   "price_key, day"},
    {"frozen_period", "SELECT generator, currency, minor_digits, idle_policy, focus_version, "
                      "account_id, account_name, provider, service_name FROM frozen_period "
                      "WHERE period = ?1"},
    {"frozen_setting", "SELECT key, value FROM frozen_setting WHERE period = ?1 ORDER BY key"},
    {"frozen_price", "SELECT seq, row, id, pattern, unit, price12, currency, valid_from, "
                     "valid_to, has_capacity, capacity_gb12 FROM frozen_price WHERE period = ?1 "
                     "ORDER BY seq"},
    {"frozen_head", "SELECT team, team_name, cost_center, invoice_id, total FROM frozen_head "
                    "WHERE period = ?1 ORDER BY team"},
    {"frozen_line", "SELECT team, seq, cluster, model, kind, corrected_period, price_seq, "
                    "unit_price12, mib_seconds, amount, estimated, qty_nano, capacity_gb12 "
                    "FROM frozen_line WHERE period = ?1 ORDER BY team, seq"},
    {"frozen_line_day", "SELECT team, line, day, mib_seconds, billed, busy_ppm, busy_steps, "
                        "qty_nano FROM frozen_line_day WHERE period = ?1 "
                        "ORDER BY team, line, day"},
    {"frozen_info", "SELECT team, what, seq, cluster, model, a, b FROM frozen_info "
                    "WHERE period = ?1 ORDER BY team, what, seq"},
    {"frozen_anomaly", "SELECT team, seq, kind, cluster, namespace, pod, node, device, model, "
                       "first_seen, last_seen, mib_seconds FROM frozen_anomaly "
                       "WHERE period = ?1 ORDER BY team, seq"},
    {"closed_gap", "SELECT seq, cluster, kind, start_hour, end_hour FROM closed_gap "
                   "WHERE period = ?1 ORDER BY seq"},
};
#define NTABLES (sizeof tables / sizeof *tables)

static void put_u64(EVP_MD_CTX *md, uint64_t v)
{
    unsigned char b[8];
    for (int i = 7; i >= 0; i--, v >>= 8)
        b[i] = (unsigned char)v;
    EVP_DigestUpdate(md, b, sizeof b);
}

/* One value: its type, then a fixed-width integer or a length-prefixed
 * byte string, so that no two rows encode alike ("ab","c" vs "a","bc";
 * 1 vs '1'). */
static void put_value(EVP_MD_CTX *md, sqlite3_stmt *st, int i)
{
    int type = sqlite3_column_type(st, i);
    unsigned char tag = type == SQLITE_INTEGER ? 'i' : type == SQLITE_FLOAT ? 'r'
                        : type == SQLITE_NULL  ? 'n' : type == SQLITE_BLOB ? 'b' : 't';
    EVP_DigestUpdate(md, &tag, 1);
    if (type == SQLITE_INTEGER) {
        put_u64(md, (uint64_t)sqlite3_column_int64(st, i));
    } else if (type == SQLITE_FLOAT) {
        double d = sqlite3_column_double(st, i);
        uint64_t u;
        memcpy(&u, &d, sizeof u);
        put_u64(md, u);
    } else if (type != SQLITE_NULL) {
        const void *p = type == SQLITE_BLOB ? sqlite3_column_blob(st, i)
                                            : (const void *)sqlite3_column_text(st, i);
        int n = sqlite3_column_bytes(st, i);
        put_u64(md, (uint64_t)n);
        if (n > 0)
            EVP_DigestUpdate(md, p, (size_t)n);
    }
}

/* Table t's rows of period: their count and digest (hex). */
static enum gl_status digest_table(struct gl_store *s, size_t t, const char *period,
                                   int64_t *rows, char hex[65], struct gl_error *err)
{
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_query_named(s, tables[t].sql, period, &st,
                                             "digesting the frozen figures", err);
    if (rc)
        return rc;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || !EVP_DigestInit_ex(md, EVP_sha256(), NULL)) {
        EVP_MD_CTX_free(md);
        sqlite3_finalize(st);
        return gl_error_set(err, GL_ERR_RUNTIME, "SHA-256: the crypto library failed");
    }
    static const char magic[] = "gpuledger frozen digest 1";
    EVP_DigestUpdate(md, magic, sizeof magic);
    EVP_DigestUpdate(md, tables[t].name, strlen(tables[t].name) + 1);
    EVP_DigestUpdate(md, period, strlen(period) + 1);
    *rows = 0;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        int ncol = sqlite3_column_count(st);
        unsigned char tag = 'R';
        EVP_DigestUpdate(md, &tag, 1);
        put_u64(md, (uint64_t)ncol);
        for (int i = 0; i < ncol; i++)
            put_value(md, st, i);
        (*rows)++;
    }
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(md, out, &n);
    EVP_MD_CTX_free(md);
    if (sr != SQLITE_DONE)
        rc = gl_store_fail(s, "digesting the frozen figures", err);
    sqlite3_finalize(st);
    for (unsigned int i = 0; i < n && i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", out[i]);
    hex[64] = '\0';
    return rc;
}

enum gl_status gl_frozen_digest_store(struct gl_store *s, const char *period, int64_t sealed_at,
                                      struct gl_error *err)
{
    static const char sql[] = "INSERT OR REPLACE INTO frozen_digest (period, tbl, row_count, "
                              "sha256, sealed_at) VALUES (?,?,?,?,?)";
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_prepare(s, sql, &st, "closing the period: its digest", err);
    for (size_t t = 0; !rc && t < NTABLES; t++) {
        int64_t rows;
        char hex[65];
        if ((rc = digest_table(s, t, period, &rows, hex, err)))
            break;
        sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, tables[t].name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, rows);
        sqlite3_bind_text(st, 4, hex, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 5, sealed_at);
        rc = gl_store_put_row(s, st, "closing the period: its digest", err);
    }
    sqlite3_finalize(st);
    return rc;
}

static enum gl_status altered(const char *period, const char *table, const char *what,
                              struct gl_error *err)
{
    return gl_error_set(err, GL_ERR_STATE,
                        "period %s is closed and its frozen rows in table %s %s: the database "
                        "was altered after the close; nothing was printed (restore it from a "
                        "backup)",
                        period, table, what);
}

/* Reads table t's stored digest: *found false when it has none. */
static enum gl_status stored(struct gl_store *s, sqlite3_stmt *st, const char *table,
                             bool *found, int64_t *rows, char hex[65], struct gl_error *err)
{
    sqlite3_bind_text(st, 2, table, -1, SQLITE_STATIC);
    int sr = sqlite3_step(st);
    enum gl_status rc = GL_OK;
    *found = sr == SQLITE_ROW;
    if (*found) {
        *rows = sqlite3_column_int64(st, 0);
        const unsigned char *h = sqlite3_column_text(st, 1);
        snprintf(hex, 65, "%s", h ? (const char *)h : "");
    } else if (sr != SQLITE_DONE) {
        rc = gl_store_fail(s, "reading the frozen digest", err);
    }
    sqlite3_reset(st);
    return rc;
}

enum gl_status gl_frozen_digest_check(struct gl_store *s, const char *period, bool *have,
                                      struct gl_error *err)
{
    *have = false;
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_query_named(s,
                                             "SELECT row_count, sha256 FROM frozen_digest "
                                             "WHERE period = ?1 AND (tbl = ?2 OR ?2 IS NULL) "
                                             "LIMIT 1",
                                             period, &st, "reading the frozen digest", err);
    if (rc)
        return rc;
    int64_t want_rows = 0;
    char want[65];
    /* none at all: closed before schema 011 (close writes every table's
     * digest in one transaction, so a partial set was altered) */
    rc = stored(s, st, NULL, have, &want_rows, want, err);
    for (size_t t = 0; !rc && *have && t < NTABLES; t++) {
        bool found;
        if ((rc = stored(s, st, tables[t].name, &found, &want_rows, want, err)))
            break;
        if (!found) {
            rc = altered(period, tables[t].name, "have no digest while the other tables do",
                         err);
            break;
        }
        int64_t rows;
        char got[65];
        if ((rc = digest_table(s, t, period, &rows, got, err)))
            break;
        if (rows != want_rows || strcmp(got, want) != 0) {
            char what[160];
            snprintf(what, sizeof what,
                     "differ from the digest stored at close (%lld rows now, %lld at close)",
                     (long long)rows, (long long)want_rows);
            rc = altered(period, tables[t].name, what, err);
        }
    }
    sqlite3_finalize(st);
    return rc;
}
