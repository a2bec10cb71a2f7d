/* store_frozen — a closed period's figures written and read back (schema 007). */
#include "store_frozen.h"

#include <stdlib.h>
#include <string.h>

#include "query.h" /* struct gl_frozen_row */
#include "store_digest.h"
#include "store_sql.h"
#include "util.h"

static const char *const policy_names[] = {[GL_IDLE_PLATFORM] = "platform",
                                           [GL_IDLE_PROPORTIONAL] = "proportional",
                                           [GL_IDLE_UNBILLED] = "unbilled"};
#define NPOLICIES (sizeof policy_names / sizeof *policy_names)

static const char *const info_names[] = {"allocated", "compute", "waste"};


/* The settings of schema 011 (frozen_setting): config fields the renderers
 * read that frozen_period has no column for. */
#define SETTING_BASIS "basis"
#define SETTING_PLATFORM "platform_team"

/* 128-bit integers are stored as decimal TEXT. */
static void bind_i128(sqlite3_stmt *st, int col, gl_i128 v)
{
    char buf[64];
    gl_dec_format(v, 0, buf, sizeof buf);
    sqlite3_bind_text(st, col, buf, -1, SQLITE_TRANSIENT);
}

/* Strict: an optional '-' and 1 to 39 digits that fit 128 bits. */
static bool parse_i128(const char *s, gl_i128 *out)
{
    if (!s)
        return false;
    bool neg = *s == '-';
    const char *p = s + neg;
    gl_i128 v = 0;
    size_t n = 0;
    for (; *p; p++, n++) {
        if (*p < '0' || *p > '9' || n >= 39 || __builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, neg ? -(*p - '0') : *p - '0', &v))
            return false;
    }
    if (!n)
        return false;
    *out = v;
    return true;
}

static enum gl_status step_done(struct gl_store *s, sqlite3_stmt *st, struct gl_error *err)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? GL_OK : gl_store_fail(s, "closing the period: its figures", err);
}

/* ---- writing ---- */

enum {
    W_PERIOD, W_PRICE, W_HEAD, W_LINE, W_DAY, W_INFO, W_ANOMALY, W_N
};

static const char *const write_sql[W_N] = {
    [W_PERIOD] = "INSERT INTO frozen_period (period, generator, currency, minor_digits, "
                 "idle_policy, focus_version, account_id, account_name, provider, service_name) "
                 "VALUES (?,?,?,?,?,?,?,?,?,?)",
    [W_PRICE] = "INSERT INTO frozen_price (period, seq, row, id, pattern, unit, price12, "
                "currency, valid_from, valid_to, has_capacity, capacity_gb12) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
    [W_HEAD] = "INSERT INTO frozen_head (period, team, team_name, cost_center, invoice_id, total) "
               "VALUES (?,?,?,?,?,?)",
    [W_LINE] = "INSERT INTO frozen_line (period, team, seq, cluster, model, kind, "
               "corrected_period, price_seq, unit_price12, mib_seconds, amount, estimated, "
               "qty_nano, capacity_gb12) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [W_DAY] = "INSERT INTO frozen_line_day (period, team, line, day, mib_seconds, billed, "
              "busy_ppm, busy_steps, qty_nano) VALUES (?,?,?,?,?,?,?,?,?)",
    [W_INFO] = "INSERT INTO frozen_info (period, team, what, seq, cluster, model, a, b) "
               "VALUES (?,?,?,?,?,?,?,?)",
    [W_ANOMALY] = "INSERT INTO frozen_anomaly (period, team, seq, kind, cluster, namespace, pod, "
                  "node, device, model, first_seen, last_seen, mib_seconds) "
                  "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
};

static void bind_str(sqlite3_stmt *st, int col, const char *v)
{
    if (v)
        sqlite3_bind_text(st, col, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

/* The seq of price entry e among those already numbered (added when new). */
static int64_t price_seq(const struct gl_price_entry ***seen, size_t *n,
                         const struct gl_price_entry *e, bool *is_new)
{
    for (size_t i = 0; i < *n; i++)
        if ((*seen)[i] == e) {
            *is_new = false;
            return (int64_t)i;
        }
    *seen = gl_xrealloc(*seen, (*n + 1) * sizeof **seen);
    (*seen)[*n] = e;
    *is_new = true;
    return (int64_t)(*n)++;
}

static enum gl_status write_info(struct gl_store *s, sqlite3_stmt *st, const char *period,
                                 const char *team, const char *what,
                                 const struct gl_info_row *rows, size_t n, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    for (size_t i = 0; !rc && i < n; i++) {
        sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, team, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, what, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (int64_t)i);
        sqlite3_bind_text(st, 5, rows[i].cluster, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, rows[i].model, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, rows[i].a);
        sqlite3_bind_int64(st, 8, rows[i].b);
        rc = step_done(s, st, err);
    }
    return rc;
}

static enum gl_status write_invoice(struct gl_store *s, sqlite3_stmt **w, const char *period,
                                    const struct gl_invoice *inv,
                                    const struct gl_price_entry ***seen, size_t *nseen,
                                    struct gl_error *err)
{
    sqlite3_stmt *st = w[W_HEAD];
    sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, inv->team, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, inv->team_name, -1, SQLITE_STATIC);
    bind_str(st, 4, inv->cost_center);
    sqlite3_bind_text(st, 5, inv->invoice_id, -1, SQLITE_STATIC);
    bind_i128(st, 6, inv->total);
    enum gl_status rc = step_done(s, st, err);
    for (size_t j = 0; !rc && j < inv->nlines; j++) {
        const struct gl_invoice_line *l = &inv->lines[j];
        const struct gl_price_entry *e = l->price;
        bool is_new;
        int64_t ps = price_seq(seen, nseen, e, &is_new);
        if (is_new) {
            st = w[W_PRICE];
            sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, ps);
            sqlite3_bind_int64(st, 3, e->row);
            sqlite3_bind_text(st, 4, e->id, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 5, e->pattern, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 6, e->unit == GL_PRICE_GPU_HOURS ? "GPU-Hours" : "GB-Hours", -1,
                              SQLITE_STATIC);
            bind_i128(st, 7, e->price12);
            sqlite3_bind_text(st, 8, e->currency ? e->currency : "", -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 9, e->valid_from);
            if (e->valid_to == INT64_MAX)
                sqlite3_bind_null(st, 10);
            else
                sqlite3_bind_int64(st, 10, e->valid_to);
            sqlite3_bind_int(st, 11, e->has_capacity);
            bind_i128(st, 12, e->capacity_gb12);
            if ((rc = step_done(s, st, err)))
                break;
        }
        st = w[W_LINE];
        sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, inv->team, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (int64_t)j);
        sqlite3_bind_text(st, 4, l->cluster, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, l->model, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, gl_line_kind_name(l->kind), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 7, l->corrected_period, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 8, ps);
        bind_i128(st, 9, l->unit_price12);
        sqlite3_bind_int64(st, 10, l->mib_s);
        bind_i128(st, 11, l->amount);
        sqlite3_bind_int(st, 12, l->estimated != 0);
        bind_i128(st, 13, l->qty_nano);
        bind_i128(st, 14, l->capacity_gb12);
        if ((rc = step_done(s, st, err)))
            break;
        st = w[W_DAY];
        for (size_t d = 0; !rc && d < l->ndays; d++) {
            const struct gl_line_day *x = &l->days[d];
            sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, inv->team, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 3, (int64_t)j);
            sqlite3_bind_int64(st, 4, x->day);
            sqlite3_bind_int64(st, 5, x->mib_s);
            bind_i128(st, 6, x->billed);
            sqlite3_bind_int64(st, 7, x->busy_ppm);
            sqlite3_bind_int64(st, 8, x->busy_steps);
            bind_i128(st, 9, x->qty_nano);
            rc = step_done(s, st, err);
        }
    }
    if (!rc)
        rc = write_info(s, w[W_INFO], period, inv->team, "waste", inv->waste, inv->nwaste, err);
    if (!rc)
        rc = write_info(s, w[W_INFO], period, inv->team, "allocated", inv->allocated,
                        inv->nallocated, err);
    if (!rc)
        rc = write_info(s, w[W_INFO], period, inv->team, "compute", inv->compute, inv->ncompute,
                        err);
    st = w[W_ANOMALY];
    for (size_t i = 0; !rc && i < inv->anomalies.n; i++) {
        const struct gl_anomaly *a = &inv->anomalies.items[i];
        sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, inv->team, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (int64_t)i);
        sqlite3_bind_text(st, 4, gl_anomaly_kind_name(a->kind), -1, SQLITE_STATIC);
        const char *cols[] = {a->cluster, a->ns, a->pod, a->node, a->device, a->model};
        for (int k = 0; k < 6; k++)
            sqlite3_bind_text(st, 5 + k, cols[k], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 11, a->first_seen);
        sqlite3_bind_int64(st, 12, a->last_seen);
        sqlite3_bind_int64(st, 13, a->mib_s);
        rc = step_done(s, st, err);
    }
    return rc;
}

/* What a forced close found missing (schema 009 closed_gap). */
static enum gl_status write_gaps(struct gl_store *s, const struct gl_invoice_set *set,
                                 struct gl_error *err)
{
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_prepare(s,
                                         "INSERT INTO closed_gap (period, seq, cluster, kind, "
                                         "start_hour, end_hour) VALUES (?,?,?,?,?,?)",
                                         &st, "closing the period: its gaps", err);
    for (size_t i = 0; !rc && i < set->ngaps; i++) {
        const struct gl_gap *g = &set->gaps[i];
        sqlite3_bind_text(st, 1, set->period.name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
        sqlite3_bind_text(st, 3, g->cluster, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, gl_gap_kind_name(g->kind), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, g->from);
        sqlite3_bind_int64(st, 6, g->to);
        rc = step_done(s, st, err);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The schema 011 settings of c (INSERT OR IGNORE: sealing a period closed
 * before schema 011 adds them, never replaces them). */
static enum gl_status write_settings(struct gl_store *s, const struct gl_config *c,
                                     const char *period, struct gl_error *err)
{
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_prepare(s,
                                         "INSERT OR IGNORE INTO frozen_setting (period, key, "
                                         "value) VALUES (?,?,?)",
                                         &st, "closing the period: its settings", err);
    const char *kv[][2] = {
        {SETTING_BASIS, c->basis->name},
        {SETTING_PLATFORM, c->platform_team ? c->platform_team : ""},
    };
    for (size_t i = 0; !rc && i < sizeof kv / sizeof *kv; i++) {
        sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, kv[i][0], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, kv[i][1], -1, SQLITE_STATIC);
        rc = step_done(s, st, err);
    }
    sqlite3_finalize(st);
    return rc;
}

enum gl_status gl_store_freeze_figures(struct gl_store *s, const struct gl_invoice_set *set,
                                       struct gl_error *err)
{
    const struct gl_config *c = set->cfg;
    const char *period = set->period.name;
    sqlite3_stmt *w[W_N] = {0};
    enum gl_status rc = GL_OK;
    for (int i = 0; !rc && i < W_N; i++)
        rc = gl_store_prepare(s, write_sql[i], &w[i], "closing the period: its figures", err);
    if (!rc) {
        sqlite3_stmt *st = w[W_PERIOD];
        sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, set->generator ? set->generator : gl_generator, -1,
                          SQLITE_STATIC);
        sqlite3_bind_text(st, 3, c->currency, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 4, c->minor_digits);
        sqlite3_bind_text(st, 5,
                          (unsigned)c->idle_policy < NPOLICIES ? policy_names[c->idle_policy]
                                                                : "?",
                          -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 6, c->focus_version);
        const char *strs[] = {c->account_id, c->account_name, c->provider, c->service_name};
        for (int k = 0; k < 4; k++)
            sqlite3_bind_text(st, 7 + k, strs[k] ? strs[k] : "", -1, SQLITE_STATIC);
        rc = step_done(s, st, err);
    }
    const struct gl_price_entry **seen = NULL;
    size_t nseen = 0;
    for (size_t i = 0; !rc && i < set->n; i++)
        rc = write_invoice(s, w, period, &set->invoices[i], &seen, &nseen, err);
    free(seen);
    for (int i = 0; i < W_N; i++)
        sqlite3_finalize(w[i]);
    if (!rc && set->ngaps)
        rc = write_gaps(s, set, err);
    if (!rc)
        rc = write_settings(s, c, period, err);
    /* last: the digest covers every row written for the period above */
    if (!rc)
        rc = gl_frozen_digest_store(s, period, set->closed_at, err);
    return rc;
}

/* ---- reading ---- */

struct loader {
    struct gl_store *s;
    struct gl_invoice_set *set;
    const char *period;
    struct gl_error *err;
};

static enum gl_status bad(struct loader *x, const char *team, const char *what)
{
    return gl_error_set(x->err, GL_ERR_STATE,
                        "%s: the frozen figures of closed period %s%s%.300s%s are damaged: %s; "
                        "the database was altered after the close (restore it from a backup)",
                        sqlite3_db_filename(gl_store_db(x->s), "main"), x->period,
                        team ? " (team \"" : "", team ? team : "", team ? "\")" : "", what);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

static bool col_i128(sqlite3_stmt *st, int i, gl_i128 *out)
{
    return sqlite3_column_type(st, i) == SQLITE_TEXT && parse_i128(col_text(st, i), out);
}

static bool col_int(sqlite3_stmt *st, int i, int64_t *out)
{
    if (sqlite3_column_type(st, i) != SQLITE_INTEGER)
        return false;
    *out = sqlite3_column_int64(st, i);
    return true;
}

static struct gl_invoice *find_team(struct gl_invoice_set *set, const char *team)
{
    size_t lo = 0, hi = set->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(set->invoices[mid].team, team);
        if (!c)
            return &set->invoices[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Prepares sql with ?1 = the period. */
static enum gl_status query(struct loader *x, const char *sql, sqlite3_stmt **st)
{
    enum gl_status rc = gl_store_prepare(x->s, sql, st, "reading the frozen figures", x->err);
    if (!rc)
        sqlite3_bind_text(*st, 1, x->period, -1, SQLITE_STATIC);
    return rc;
}

static enum gl_status finish(struct loader *x, sqlite3_stmt *st, int sr, enum gl_status rc)
{
    if (!rc && sr != SQLITE_DONE)
        rc = gl_store_fail(x->s, "reading the frozen figures", x->err);
    sqlite3_finalize(st);
    return rc;
}

/* Calls fn for each row of sql (?1 = the period). */
static enum gl_status each_row(struct loader *x, const char *sql,
                               enum gl_status (*fn)(struct loader *, sqlite3_stmt *))
{
    sqlite3_stmt *st;
    enum gl_status rc = query(x, sql, &st);
    if (rc)
        return rc;
    int sr;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW)
        rc = fn(x, st);
    return finish(x, st, sr, rc);
}

static enum gl_status load_config(struct loader *x, const struct gl_config *live, bool *have)
{
    sqlite3_stmt *st;
    enum gl_status rc = query(x, "SELECT generator, currency, minor_digits, idle_policy, "
                                 "focus_version, account_id, account_name, provider, "
                                 "service_name FROM frozen_period WHERE period = ?1",
                              &st);
    if (rc)
        return rc;
    int sr = sqlite3_step(st);
    *have = sr == SQLITE_ROW;
    if (*have) {
        struct gl_frozen_own *own = x->set->own = gl_xcalloc(1, sizeof *own);
        own->cfg = *live;
        x->set->cfg = &own->cfg;
        x->set->generator = gl_strdup(col_text(st, 0));
        own->cfg.currency = own->strs[0] = gl_strdup(col_text(st, 1));
        int64_t digits = 0, fv = 12;
        const char *policy = col_text(st, 3);
        int pol = -1;
        for (size_t k = 0; policy && k < NPOLICIES; k++)
            if (strcmp(policy, policy_names[k]) == 0)
                pol = (int)k;
        if (!col_int(st, 2, &digits) || digits < 0 || digits > 9 || !col_int(st, 4, &fv) ||
            (fv != 12 && fv != 13) || pol < 0)
            rc = bad(x, NULL, "frozen_period holds an unknown setting");
        own->cfg.minor_digits = (int)digits;
        own->cfg.focus_version = (int)fv;
        own->cfg.idle_policy = (enum gl_idle_policy)(pol < 0 ? 0 : pol);
        char **f[] = {&own->cfg.account_id, &own->cfg.account_name, &own->cfg.provider,
                      &own->cfg.service_name};
        for (int k = 0; k < 4; k++)
            *f[k] = own->strs[1 + k] = gl_strdup(col_text(st, 5 + k));
        sr = SQLITE_DONE;
    }
    return finish(x, st, sr, rc);
}

/* A setting over the live value the copy holds (a period closed before
 * schema 011 has none until it is sealed: gl_store_frozen_seal). */
static enum gl_status row_settings(struct loader *x, sqlite3_stmt *st)
{
    struct gl_frozen_own *own = x->set->own;
    const char *key = col_text(st, 0), *value = col_text(st, 1);
    const struct gl_basis *basis = gl_basis_find(value);
    if (key && strcmp(key, SETTING_BASIS) == 0 && basis) {
        own->cfg.basis = basis;
    } else if (key && value && strcmp(key, SETTING_PLATFORM) == 0) {
        free(own->strs[5]);
        own->cfg.platform_team = own->strs[5] = gl_strdup(value);
    } else {
        return bad(x, NULL, "frozen_setting holds an unknown setting");
    }
    return GL_OK;
}

static enum gl_status row_prices(struct loader *x, sqlite3_stmt *st)
{
    struct gl_frozen_own *own = x->set->own;
    int64_t seq, row, from, to = INT64_MAX, cap;
    own->prices = gl_xrealloc(own->prices, (own->nprices + 1) * sizeof *own->prices);
    struct gl_price_entry *e = &own->prices[own->nprices++];
    memset(e, 0, sizeof *e);
    e->id = gl_strdup(col_text(st, 2));
    e->pattern = gl_strdup(col_text(st, 3));
    e->currency = gl_strdup(col_text(st, 6));
    const char *unit = col_text(st, 4);
    bool ok = col_int(st, 0, &seq) && seq == (int64_t)own->nprices - 1 &&
              col_int(st, 1, &row) && row >= 0 && row <= INT32_MAX && unit &&
              (strcmp(unit, "GB-Hours") == 0 || strcmp(unit, "GPU-Hours") == 0) &&
              col_i128(st, 5, &e->price12) && col_int(st, 7, &from) &&
              (sqlite3_column_type(st, 8) == SQLITE_NULL || col_int(st, 8, &to)) &&
              col_int(st, 9, &cap) && col_i128(st, 10, &e->capacity_gb12) && e->id &&
              e->pattern && e->currency;
    if (!ok)
        return bad(x, NULL, "a frozen price entry is incomplete");
    e->row = (int)row;
    e->unit = strcmp(unit, "GPU-Hours") == 0 ? GL_PRICE_GPU_HOURS : GL_PRICE_GB_HOURS;
    e->valid_from = from;
    e->valid_to = to;
    e->has_capacity = cap != 0;
    return GL_OK;
}

static enum gl_status row_heads(struct loader *x, sqlite3_stmt *st)
{
    struct gl_invoice_set *set = x->set;
    set->invoices = gl_xrealloc(set->invoices, (set->n + 1) * sizeof *set->invoices);
    struct gl_invoice *inv = &set->invoices[set->n++];
    memset(inv, 0, sizeof *inv);
    inv->team = gl_strdup(col_text(st, 0));
    inv->team_name = inv->own_name = gl_strdup(col_text(st, 1));
    if (sqlite3_column_type(st, 2) != SQLITE_NULL)
        inv->cost_center = inv->own_cost_center = gl_strdup(col_text(st, 2));
    inv->invoice_id = gl_strdup(col_text(st, 3));
    if (!inv->team || !inv->own_name || !inv->invoice_id || !col_i128(st, 4, &inv->total))
        return bad(x, inv->team, "an invoice header is incomplete");
    return GL_OK;
}

static enum gl_status row_lines(struct loader *x, sqlite3_stmt *st)
{
    const char *team = col_text(st, 0);
    struct gl_invoice *inv = team ? find_team(x->set, team) : NULL;
    if (!inv)
        return bad(x, team, "a line has no invoice");
    int64_t seq, ps, est;
    enum gl_line_kind kind;
    const char *kname = col_text(st, 4), *cp = col_text(st, 5);
    inv->lines = gl_xrealloc(inv->lines, (inv->nlines + 1) * sizeof *inv->lines);
    struct gl_invoice_line *l = &inv->lines[inv->nlines++];
    memset(l, 0, sizeof *l);
    l->cluster = gl_strdup(col_text(st, 2));
    l->model = gl_strdup(col_text(st, 3));
    bool ok = col_int(st, 1, &seq) && seq == (int64_t)inv->nlines - 1 && l->cluster &&
              l->model && kname && gl_line_kind_parse(kname, &kind) && cp &&
              strlen(cp) < sizeof l->corrected_period && col_int(st, 6, &ps) && ps >= 0 &&
              (size_t)ps < x->set->own->nprices && col_i128(st, 7, &l->unit_price12) &&
              col_int(st, 8, &l->mib_s) && col_i128(st, 9, &l->amount) &&
              col_int(st, 10, &est) && col_i128(st, 11, &l->qty_nano) &&
              col_i128(st, 12, &l->capacity_gb12);
    if (!ok)
        return bad(x, team, "an invoice line is incomplete");
    l->kind = kind;
    l->price = &x->set->own->prices[ps];
    l->estimated = est != 0;
    snprintf(l->corrected_period, sizeof l->corrected_period, "%s", cp);
    return GL_OK;
}

static enum gl_status row_days(struct loader *x, sqlite3_stmt *st)
{
    const char *team = col_text(st, 0);
    struct gl_invoice *inv = team ? find_team(x->set, team) : NULL;
    int64_t line;
    if (!inv || !col_int(st, 1, &line) || line < 0 || (size_t)line >= inv->nlines)
        return bad(x, team, "a day has no invoice line");
    struct gl_invoice_line *l = &inv->lines[line];
    l->days = gl_xrealloc(l->days, (l->ndays + 1) * sizeof *l->days);
    struct gl_line_day *d = &l->days[l->ndays++];
    memset(d, 0, sizeof *d);
    if (!col_int(st, 2, &d->day) || !col_int(st, 3, &d->mib_s) ||
        !col_i128(st, 4, &d->billed) || !col_int(st, 5, &d->busy_ppm) ||
        !col_int(st, 6, &d->busy_steps) || !col_i128(st, 7, &d->qty_nano))
        return bad(x, team, "a day of an invoice line is incomplete");
    return GL_OK;
}

static enum gl_status row_info(struct loader *x, sqlite3_stmt *st)
{
    const char *team = col_text(st, 0), *what = col_text(st, 1);
    struct gl_invoice *inv = team ? find_team(x->set, team) : NULL;
    struct gl_info_row **rows = NULL;
    size_t *n = NULL;
    if (inv && what && strcmp(what, info_names[0]) == 0) {
        rows = &inv->allocated;
        n = &inv->nallocated;
    } else if (inv && what && strcmp(what, info_names[1]) == 0) {
        rows = &inv->compute;
        n = &inv->ncompute;
    } else if (inv && what && strcmp(what, info_names[2]) == 0) {
        rows = &inv->waste;
        n = &inv->nwaste;
    }
    int64_t seq, a, b;
    const char *cluster = col_text(st, 3), *model = col_text(st, 4);
    if (!rows || !col_int(st, 2, &seq) || seq != (int64_t)*n || !cluster || !model ||
        !col_int(st, 5, &a) || !col_int(st, 6, &b))
        return bad(x, team, "an information row is incomplete");
    *rows = gl_xrealloc(*rows, (*n + 1) * sizeof **rows);
    (*rows)[(*n)++] = (struct gl_info_row){gl_strdup(cluster), gl_strdup(model), a, b};
    return GL_OK;
}

static enum gl_status row_anomalies(struct loader *x, sqlite3_stmt *st)
{
    const char *team = col_text(st, 0), *kind = col_text(st, 2);
    struct gl_invoice *inv = team ? find_team(x->set, team) : NULL;
    int64_t seq;
    if (!inv || !col_int(st, 1, &seq) || seq != (int64_t)inv->anomalies.n || !kind ||
        (strcmp(kind, gl_anomaly_kind_name(GL_ANOMALY_EXCESS_DEVICES)) != 0 &&
         strcmp(kind, gl_anomaly_kind_name(GL_ANOMALY_UNALLOCATED_USE)) != 0))
        return bad(x, team, "an anomaly row is incomplete");
    struct gl_anomaly_list *al = &inv->anomalies;
    al->items = gl_xrealloc(al->items, (al->n + 1) * sizeof *al->items);
    struct gl_anomaly *a = &al->items[al->n++];
    memset(a, 0, sizeof *a);
    a->kind = strcmp(kind, gl_anomaly_kind_name(GL_ANOMALY_UNALLOCATED_USE)) == 0
                  ? GL_ANOMALY_UNALLOCATED_USE
                  : GL_ANOMALY_EXCESS_DEVICES;
    a->team = gl_strdup(inv->team);
    char **f[] = {&a->cluster, &a->ns, &a->pod, &a->node, &a->device, &a->model};
    bool ok = true;
    for (int k = 0; k < 6; k++)
        ok = (*f[k] = gl_strdup(col_text(st, 3 + k))) != NULL && ok;
    if (!ok || !col_int(st, 9, &a->first_seen) || !col_int(st, 10, &a->last_seen) ||
        !col_int(st, 11, &a->mib_s))
        return bad(x, team, "an anomaly row is incomplete");
    return GL_OK;
}

/* The figures add up: each line's days give its MiB·s, amount and (a
 * correction) GB-hours; the lines give the total. */
static enum gl_status check_sums(struct loader *x)
{
    for (size_t i = 0; i < x->set->n; i++) {
        const struct gl_invoice *inv = &x->set->invoices[i];
        gl_i128 total = 0;
        for (size_t j = 0; j < inv->nlines; j++) {
            const struct gl_invoice_line *l = &inv->lines[j];
            gl_i128 mib = 0, billed = 0, nano = 0;
            for (size_t d = 0; d < l->ndays; d++) {
                mib += l->days[d].mib_s; /* int64 terms: no 128-bit overflow */
                if (__builtin_add_overflow(billed, l->days[d].billed, &billed) ||
                    __builtin_add_overflow(nano, l->days[d].qty_nano, &nano))
                    return bad(x, inv->team, "a line's days overflow");
            }
            char what[160];
            snprintf(what, sizeof what, "line %zu (%s, %.40s) does not add up to its days", j,
                     gl_line_kind_name(l->kind), l->model);
            if (mib != l->mib_s || billed != l->amount || (l->corrected_period[0] && nano != l->qty_nano))
                return bad(x, inv->team, what);
            if (__builtin_add_overflow(total, l->amount, &total))
                return bad(x, inv->team, "the total overflows");
        }
        if (total != inv->total)
            return bad(x, inv->team, "the lines do not add up to the frozen total");
    }
    return GL_OK;
}

static enum gl_status row_gaps(struct loader *x, sqlite3_stmt *st)
{
    struct gl_invoice_set *set = x->set;
    const char *cluster = col_text(st, 1), *kind = col_text(st, 2);
    int64_t seq, from, to;
    int k = -1;
    for (int i = GL_GAP_MISSING; kind && i <= GL_GAP_UNSETTLED; i++)
        if (strcmp(kind, gl_gap_kind_name((enum gl_gap_kind)i)) == 0)
            k = i;
    if (!cluster || k < 0 || !col_int(st, 0, &seq) || seq != (int64_t)set->ngaps ||
        !col_int(st, 3, &from) || !col_int(st, 4, &to) || to <= from || from % 3600 ||
        to % 3600)
        return bad(x, NULL, "a closed_gap row is incomplete");
    set->gaps = gl_xrealloc(set->gaps, (set->ngaps + 1) * sizeof *set->gaps);
    set->gaps[set->ngaps++] =
        (struct gl_gap){gl_strdup(cluster), (enum gl_gap_kind)k, from, to};
    return GL_OK;
}

/* The frozen tables read back, in this order (a line's days after its
 * line): each one's rows of the period (?1) and what takes a row. */
static const struct {
    enum gl_status (*row)(struct loader *x, sqlite3_stmt *st);
    const char *sql;
} loads[] = {
    {row_settings, "SELECT key, value FROM frozen_setting WHERE period = ?1 ORDER BY key"},
    {row_prices, "SELECT seq, row, id, pattern, unit, price12, currency, valid_from, valid_to, "
                 "has_capacity, capacity_gb12 FROM frozen_price WHERE period = ?1 ORDER BY seq"},
    {row_heads, "SELECT team, team_name, cost_center, invoice_id, total FROM frozen_head WHERE "
                "period = ?1 ORDER BY team"},
    {row_lines, "SELECT team, seq, cluster, model, kind, corrected_period, price_seq, "
                "unit_price12, mib_seconds, amount, estimated, qty_nano, capacity_gb12 FROM "
                "frozen_line WHERE period = ?1 ORDER BY team, seq"},
    {row_days, "SELECT team, line, day, mib_seconds, billed, busy_ppm, busy_steps, qty_nano "
               "FROM frozen_line_day WHERE period = ?1 ORDER BY team, line, day"},
    {row_info, "SELECT team, what, seq, cluster, model, a, b FROM frozen_info WHERE period = ?1 "
               "ORDER BY team, what, seq"},
    {row_anomalies, "SELECT team, seq, kind, cluster, namespace, pod, node, device, model, "
                    "first_seen, last_seen, mib_seconds FROM frozen_anomaly WHERE period = ?1 "
                    "ORDER BY team, seq"},
    {row_gaps, "SELECT seq, cluster, kind, start_hour, end_hour FROM closed_gap WHERE period = "
               "?1 ORDER BY seq"},
};

enum gl_status gl_store_frozen_load(struct gl_store *s, const struct gl_config *live,
                                    const struct gl_period *p, int64_t closed_at,
                                    struct gl_invoice_set **out, bool *sealed,
                                    struct gl_error *err)
{
    *out = NULL;
    /* first the digests: a row altered after the close is named by its
     * table before anything is read from it */
    enum gl_status rc = gl_frozen_digest_check(s, p->name, sealed, err);
    if (rc)
        return rc;
    struct gl_invoice_set *set = gl_xcalloc(1, sizeof *set);
    set->cfg = live;
    set->period = *p;
    set->closed_at = closed_at;
    struct loader x = {s, set, p->name, err};
    bool have = false;
    rc = load_config(&x, live, &have);
    for (size_t i = 0; !rc && have && i < sizeof loads / sizeof *loads; i++)
        rc = each_row(&x, loads[i].sql, loads[i].row);
    if (!rc && have)
        rc = check_sums(&x);
    if (rc || !have) {
        gl_invoices_free(set);
        return rc;
    }
    *out = set;
    return GL_OK;
}

enum gl_status gl_store_frozen_seal(struct gl_store *s, const struct gl_config *live,
                                    const char *period, int64_t now, struct gl_error *err)
{
    enum gl_status rc = gl_store_begin(s, err);
    if (rc)
        return rc;
    bool have = false;
    /* a concurrent process may have sealed it meanwhile: then nothing to do */
    if (!(rc = gl_frozen_digest_check(s, period, &have, err)) && !have &&
        !(rc = write_settings(s, live, period, err)))
        rc = gl_frozen_digest_store(s, period, now, err);
    if (!rc)
        rc = gl_store_commit(s, err);
    if (rc)
        gl_store_rollback(s);
    return rc;
}

/* ---- the close's transaction (gl_store_freeze) ---- */

static enum gl_status step_reset(struct gl_store *s, sqlite3_stmt *st, struct gl_error *err)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? GL_OK : gl_store_fail(s, "closing the period", err);
}

enum gl_status gl_store_freeze(struct gl_store *s, const struct gl_freeze *f,
                               struct gl_error *err)
{
    enum gl_status rc = gl_store_begin(s, err);
    if (rc)
        return rc;
    sqlite3_stmt *cp = NULL, *fi = NULL, *fr = NULL;
    if ((rc = gl_store_prepare(s, "INSERT INTO closed_period (period, closed_at, focus_csv) "
                                  "VALUES (?,?,?)", &cp, "closing the period", err)) ||
        (rc = gl_store_prepare(s, "INSERT INTO frozen_invoice (period, team, json, md) "
                                  "VALUES (?,?,?,?)", &fi, "closing the period", err)) ||
        (rc = gl_store_prepare(s,
                               "INSERT INTO frozen_row (period, corrected_period, team, cluster, "
                               "model, kind, price_id, day, unit_price, mib_seconds, "
                               "billed_minor, gb_hours_nano, price_key) "
                               "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                               &fr, "closing the period", err)))
        goto out;
    sqlite3_bind_text(cp, 1, f->period, -1, SQLITE_STATIC);
    sqlite3_bind_int64(cp, 2, f->closed_at);
    sqlite3_bind_text(cp, 3, f->focus_csv, -1, SQLITE_STATIC);
    if ((rc = step_reset(s, cp, err)))
        goto out;
    for (size_t i = 0; i < f->ninvoices; i++) {
        const struct gl_frozen_text *t = &f->invoices[i];
        const char *v[] = {f->period, t->team, t->json, t->md};
        for (int k = 0; k < 4; k++)
            sqlite3_bind_text(fi, k + 1, v[k], -1, SQLITE_STATIC);
        if ((rc = step_reset(s, fi, err)))
            goto out;
    }
    for (size_t i = 0; i < f->nrows; i++) {
        const struct gl_frozen_row *r = &f->rows[i];
        sqlite3_bind_text(fr, 1, f->period, -1, SQLITE_STATIC);
        sqlite3_bind_text(fr, 2, r->corrected_period, -1, SQLITE_STATIC);
        sqlite3_bind_text(fr, 3, r->team, -1, SQLITE_STATIC);
        sqlite3_bind_text(fr, 4, r->cluster, -1, SQLITE_STATIC);
        sqlite3_bind_text(fr, 5, r->model, -1, SQLITE_STATIC);
        sqlite3_bind_text(fr, 6, gl_line_kind_name((enum gl_line_kind)r->kind), -1,
                          SQLITE_STATIC);
        sqlite3_bind_text(fr, 7, r->price_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(fr, 8, r->day);
        sqlite3_bind_text(fr, 9, r->unit_price, -1, SQLITE_STATIC);
        sqlite3_bind_int64(fr, 10, r->mib_s);
        sqlite3_bind_int64(fr, 11, r->billed_minor);
        sqlite3_bind_int64(fr, 12, r->gbh_nano);
        sqlite3_bind_text(fr, 13, r->price_key, -1, SQLITE_STATIC);
        if ((rc = step_reset(s, fr, err)))
            goto out;
    }
    if (f->figures && (rc = gl_store_freeze_figures(s, f->figures, err)))
        goto out;
    rc = gl_store_commit(s, err);
out:
    sqlite3_finalize(cp);
    sqlite3_finalize(fi);
    sqlite3_finalize(fr);
    if (rc)
        gl_store_rollback(s);
    return rc;
}
