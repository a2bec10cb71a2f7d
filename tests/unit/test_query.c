/* Unit tests: the typed reads of the ledger (engine/ledger/query.c), on one
 * database written through the store API (store.h, store_owner.h) and closed
 * through close.h. What is stored, in MiB-hours (× 3600 = MiB·s):
 *
 *   2026-09-10 12:00  GPU-1 (M)  team a, pod pa        memory_used 100
 *   2026-10-02 05:00  GPU-1 (M)  team a, pod pa        memory_used 3,000
 *                                team a, pod pa3       memory_used 100
 *                                team b, pod pb        memory_used 1,000
 *                                team a, pod pa        reserved_unused 200,
 *                                                      reserved_unused_billed 200,
 *                                                      allocated 3,200
 *                                device                capacity 10,000, idle 4,000,
 *                                                      reserved 1,500, unattributed 500
 *   2026-10-04 10:00  GPU-2 (H)  team a, pod pa2       memory_used 500
 *
 * Pods pa and pa3 belong to Deployment "web"; pa2 has no owner. GPU-3 is a
 * MIG instance (of M, 40,000 MiB: never a full-GPU capacity) without usage.
 * Hours collected (collected_hour): Sep 10 12:00, Oct 2 05:00, Oct 4 10:00. */
#include <cjson/cJSON.h>
#include <unistd.h>

#include "close.h"
#include "config.h"
#include "invoice.h"
#include "price.h"
#include "query.h"
#include "store.h"
#include "store_owner.h"
#include "tap.h"
#include "util.h"

#define H 3600LL

static struct gl_config *cfg;
static struct gl_price_table *prices;
static struct gl_store *st;
static struct gl_period sep, oct, nov;
static int64_t h_sep, h1, h2;
static char db[512];

static bool use(int64_t hour, int64_t dev, const char *pod, const char *team, const char *kind,
                int64_t mib_h)
{
    struct gl_error err = {0};
    if (gl_store_add_usage(st, hour, "c1", pod[0] ? "ns" : "", pod, dev, team, kind, mib_h * H,
                           0, hour + 60, hour + 3540, &err)) {
        printf("# use: %s\n", err.msg);
        return false;
    }
    return true;
}

static int64_t device(const char *uuid, const char *gi, const char *model, const char *node,
                      int64_t cap)
{
    struct gl_device_info d = {"c1", uuid, gi, gi[0] ? "1g.40gb" : "", model, node, cap,
                               sep.start, oct.end - 1};
    int64_t id = -1;
    struct gl_error err = {0};
    if (gl_store_device(st, &d, &id, &err))
        printf("# device: %s\n", err.msg);
    return id;
}

static bool setup(void)
{
    gl_period_parse("2026-09", &sep);
    gl_period_parse("2026-10", &oct);
    gl_period_parse("2026-11", &nov);
    gl_time_parse("2026-09-10T12:00:00Z", &h_sep);
    gl_time_parse("2026-10-02T05:00:00Z", &h1);
    gl_time_parse("2026-10-04T10:00:00Z", &h2);
    char pf[512], text[1024];
    snprintf(pf, sizeof pf, "%s",
             tap_tmpfile("q-prices.csv", "model_pattern,unit,price,currency,valid_from,valid_to\n"
                                         ".*,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,\n"));
    snprintf(text, sizeof text,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"}, \"prices\": {\"file\": \"%s\"},"
             " \"billing\": {\"currency\": \"USD\"}, \"teams\": {\"default_cost_center\": \"x\"}}",
             pf);
    snprintf(db, sizeof db, "%s", tap_tmpfile("query.db", ""));
    unlink(db);
    struct gl_error err = {0};
    if (gl_config_load(tap_tmpfile("q-cfg.json", text), &cfg, &err) ||
        gl_prices_load(cfg->prices_file, "USD", &prices, &err) ||
        gl_store_open(db, &st, &err) || gl_store_begin(st, &err)) {
        printf("# setup: %s\n", err.msg);
        return false;
    }
    int64_t g1 = device("GPU-1", "", "M", "node-a", 10000);
    int64_t g2 = device("GPU-2", "", "H", "node-b", 20000);
    device("GPU-3", "1", "M", "node-a", 40000);
    device("node:node-a", "", "M", "node-a", 0);
    bool ok = use(h_sep, g1, "pa", "a", "memory_used", 100) &&
              use(h1, g1, "pa", "a", "memory_used", 3000) &&
              use(h1, g1, "pa3", "a", "memory_used", 100) &&
              use(h1, g1, "pb", "b", "memory_used", 1000) &&
              use(h1, g1, "pa", "a", "reserved_unused", 200) &&
              use(h1, g1, "pa", "a", "reserved_unused_billed", 200) &&
              use(h1, g1, "pa", "a", "allocated", 3200) && use(h1, g1, "", "", "capacity", 10000) &&
              use(h1, g1, "", "", "idle", 4000) && use(h1, g1, "", "", "reserved", 1500) &&
              use(h1, g1, "", "", "unattributed", 500) &&
              use(h2, g2, "pa2", "a", "memory_used", 500);
    ok = ok && gl_store_mark_hour(st, "c1", h_sep, 60, 0, &err) == GL_OK &&
         gl_store_mark_hour(st, "c1", h1, 60, 0, &err) == GL_OK &&
         gl_store_mark_hour(st, "c1", h2, 60, 0, &err) == GL_OK &&
         gl_store_put_pod_owner(st, "c1", "ns", "pa", "Deployment", "web", h1, &err) == GL_OK &&
         gl_store_put_pod_owner(st, "c1", "ns", "pa3", "Deployment", "web", h1, &err) == GL_OK &&
         gl_store_commit(st, &err) == GL_OK;
    if (!ok)
        printf("# setup: %s\n", err.msg);
    return ok;
}

static void teardown(void)
{
    gl_store_close(st);
    gl_prices_free(prices);
    gl_config_free(cfg);
}

/* ---- rows collected from the callbacks ---- */

struct rows {
    struct gl_usage_row r[16];
    char text[16][3][32]; /* team, cluster, model (borrowed during the callback) */
    size_t n;
};

static enum gl_status collect(void *ctx, const struct gl_usage_row *r, struct gl_error *err)
{
    (void)err;
    struct rows *x = ctx;
    if (x->n == 16)
        return GL_ERR_RUNTIME;
    x->r[x->n] = *r;
    const char *s[3] = {r->team, r->cluster, r->model};
    for (int k = 0; k < 3; k++)
        snprintf(x->text[x->n][k], sizeof x->text[x->n][k], "%s", s[k] ? s[k] : "(null)");
    x->n++;
    return GL_OK;
}

static bool row_is(const struct rows *x, size_t i, const char *team, const char *model, int kind,
                   int64_t hour, int64_t a)
{
    bool ok = i < x->n && (!team || strcmp(x->text[i][0], team) == 0) &&
              strcmp(x->text[i][1], "c1") == 0 && strcmp(x->text[i][2], model) == 0 &&
              x->r[i].kind == kind && x->r[i].hour == hour && x->r[i].a == a;
    if (!ok && i < x->n)
        printf("# row %zu: %s %s %s kind %d hour %lld a %lld\n", i, x->text[i][0], x->text[i][1],
               x->text[i][2], x->r[i].kind, (long long)x->r[i].hour, (long long)x->r[i].a);
    return ok;
}

/* ---- tests ---- */

static void test_axis(void)
{
    struct gl_day_axis ax = {0};
    struct gl_error err = {0};
    /* Oct 2 05:00 to Oct 4 10:00: three UTC days from Oct 2 */
    CHECK(gl_query_axis(st, &oct, &ax, &err) == GL_OK);
    CHECK(ax.first == oct.start + 86400 && ax.n == 3);
    /* a month without hours: the whole month (30 days of November) */
    CHECK(gl_query_axis(st, &nov, &ax, &err) == GL_OK);
    CHECK(ax.first == nov.start && ax.n == 30);
}

static void test_team_usage(void)
{
    struct gl_day_axis ax;
    struct gl_team_usage u;
    struct gl_error err = {0};
    CHECK(gl_query_axis(st, &oct, &ax, &err) == GL_OK);
    CHECK(gl_query_team_usage(st, &oct, "a", &ax, 10, &u, &err) == GL_OK);
    /* Oct 2: 3,000 + 100 used, 3,200 allocated, 200 reserved-unused; Oct 4: 500 */
    CHECK(u.days[0].used == 3100 * H && u.days[0].allocated == 3200 * H &&
          u.days[0].waste == 200 * H);
    CHECK(u.days[1].used == 0 && u.days[2].used == 500 * H);
    CHECK(u.used == 3600 * H && u.allocated == 3200 * H && u.waste == 200 * H);
    /* pods by memory used: pa 3,000, pa2 500, pa3 100 */
    CHECK(u.npods == 3 && u.pods_total == 3);
    CHECK(u.npods == 3 && strcmp(u.pods[0].pod, "pa") == 0 && u.pods[0].used == 3000 * H &&
          u.pods[0].allocated == 3200 * H && u.pods[0].waste == 200 * H &&
          strcmp(u.pods[1].pod, "pa2") == 0 && strcmp(u.pods[2].pod, "pa3") == 0);
    gl_team_usage_free(&u);
    CHECK(u.pods == NULL && u.days == NULL);
    /* the top 1 of 3 */
    CHECK(gl_query_team_usage(st, &oct, "a", &ax, 1, &u, &err) == GL_OK);
    CHECK(u.npods == 1 && u.pods_total == 3 && strcmp(u.pods[0].pod, "pa") == 0);
    gl_team_usage_free(&u);
    /* a team without rows: zeros */
    CHECK(gl_query_team_usage(st, &oct, "nobody", &ax, 5, &u, &err) == GL_OK);
    CHECK(u.npods == 0 && u.used == 0 && u.days[0].used == 0);
    gl_team_usage_free(&u);
}

static void test_fleet(void)
{
    struct gl_fleet fl;
    struct gl_error err = {0};
    CHECK(gl_query_fleet(st, &oct, &fl, &err) == GL_OK);
    /* by cluster then model: H before M */
    CHECK(fl.n == 2 && strcmp(fl.m[0].model, "H") == 0 && strcmp(fl.m[1].model, "M") == 0);
    if (fl.n == 2) {
        const int64_t *v = fl.m[1].v;
        CHECK(v[GL_F_CAP] == 10000 * H && v[GL_F_USED] == 4100 * H && v[GL_F_RUB] == 200 * H &&
              v[GL_F_RESERVED] == 1500 * H && v[GL_F_UNATTR] == 500 * H &&
              v[GL_F_IDLE] == 4000 * H && v[GL_F_EXCESS] == 0);
        CHECK(fl.m[0].v[GL_F_USED] == 500 * H && fl.m[0].v[GL_F_CAP] == 0);
        /* billed memory per team on M: a 3,100 used + 200 billed reserved-unused; b 1,000 */
        CHECK(fl.nteams == 2 && strcmp(fl.teams[0], "a") == 0 && strcmp(fl.teams[1], "b") == 0);
        CHECK(fl.m[1].nteams == 2 && fl.m[1].teams[0].team == 0 &&
              fl.m[1].teams[0].q == 3300 * H && fl.m[1].teams[1].team == 1 &&
              fl.m[1].teams[1].q == 1000 * H);
        CHECK(fl.m[0].nteams == 1 && fl.m[0].teams[0].q == 500 * H);
    }
    /* devices by cluster, node, uuid, gpu_i_id; the node's pseudo-device left out */
    CHECK(fl.ndev == 3);
    if (fl.ndev == 3) {
        CHECK(strcmp(fl.dev[0].device, "GPU-1") == 0 && fl.dev[0].capacity == 10000 * H &&
              fl.dev[0].used == 4100 * H && fl.dev[0].idle == 4000 * H && !fl.dev[0].unknown);
        /* the MIG instance: uuid/gpu_i_id, no capacity stored: unknown */
        CHECK(strcmp(fl.dev[1].device, "GPU-3/1") == 0 && fl.dev[1].unknown &&
              strcmp(fl.dev[1].profile, "1g.40gb") == 0);
        CHECK(strcmp(fl.dev[2].device, "GPU-2") == 0 && strcmp(fl.dev[2].node, "node-b") == 0);
    }
    gl_fleet_free(&fl);
    CHECK(fl.n == 0 && fl.m == NULL);
}

static enum gl_status hours_fn(void *ctx, const char *model, int64_t hour, struct gl_error *err)
{
    (void)err;
    struct rows *x = ctx;
    if (x->n == 16)
        return GL_ERR_RUNTIME;
    snprintf(x->text[x->n][2], sizeof x->text[x->n][2], "%s", model);
    x->r[x->n++].hour = hour;
    return GL_OK;
}

static enum gl_status stop_fn(void *ctx, const char *model, int64_t hour, struct gl_error *err)
{
    (void)model;
    (void)hour;
    ++*(int *)ctx;
    return gl_error_set(err, GL_ERR_STATE, "stop");
}

static void test_billable_hours(void)
{
    struct rows x = {0};
    struct gl_error err = {0};
    /* every stored period: (H, Oct 4 10:00), (M, Sep 10 12:00), (M, Oct 2 05:00) */
    CHECK(gl_query_billable_hours(st, hours_fn, &x, &err) == GL_OK);
    CHECK(x.n == 3 && strcmp(x.text[0][2], "H") == 0 && x.r[0].hour == h2 &&
          strcmp(x.text[1][2], "M") == 0 && x.r[1].hour == h_sep && x.r[2].hour == h1);
    /* a non-zero status stops the read and is returned */
    int calls = 0;
    CHECK(gl_query_billable_hours(st, stop_fn, &calls, &err) == GL_ERR_STATE && calls == 1);
}

static void test_billed(void)
{
    struct rows x = {0};
    struct gl_error err = {0};
    CHECK(gl_query_billed(st, &oct, "ops", collect, &x, &err) == GL_OK);
    /* by team, cluster, model, kind (enum order), hour; the platform's
     * overhead = reserved 1,500 + unattributed 500 */
    CHECK(x.n == 6);
    CHECK(row_is(&x, 0, "a", "H", GL_LINE_MEMORY_USED, h2, 500 * H));
    CHECK(row_is(&x, 1, "a", "M", GL_LINE_MEMORY_USED, h1, 3100 * H));
    CHECK(row_is(&x, 2, "a", "M", GL_LINE_RESERVED_UNUSED, h1, 200 * H));
    CHECK(row_is(&x, 3, "b", "M", GL_LINE_MEMORY_USED, h1, 1000 * H));
    CHECK(row_is(&x, 4, "ops", "M", GL_LINE_IDLE_SHARE, h1, 4000 * H));
    CHECK(row_is(&x, 5, "ops", "M", GL_LINE_OVERHEAD_SHARE, h1, 2000 * H));
    /* no platform team: the teams' rows only; September's row is not October's */
    memset(&x, 0, sizeof x);
    CHECK(gl_query_billed(st, &oct, NULL, collect, &x, &err) == GL_OK);
    CHECK(x.n == 4);
    memset(&x, 0, sizeof x);
    CHECK(gl_query_billed(st, &sep, NULL, collect, &x, &err) == GL_OK);
    CHECK(x.n == 1 && row_is(&x, 0, "a", "M", GL_LINE_MEMORY_USED, h_sep, 100 * H));
}

static void test_idle_and_info(void)
{
    struct rows x = {0};
    struct gl_error err = {0};
    CHECK(gl_query_idle(st, &oct, collect, &x, &err) == GL_OK);
    CHECK(x.n == 1 && row_is(&x, 0, NULL, "M", 0, h1, 4000 * H) && x.r[0].b == 2000 * H);
    memset(&x, 0, sizeof x);
    CHECK(gl_query_team_info(st, &oct, collect, &x, &err) == GL_OK);
    /* per team, cluster, model, kind, UTC day: a's allocated 3,200 and waste 200 */
    CHECK(x.n == 2);
    CHECK(row_is(&x, 0, "a", "M", GL_INFO_ALLOCATED, oct.start + 86400, 3200 * H));
    CHECK(row_is(&x, 1, "a", "M", GL_INFO_WASTE, oct.start + 86400, 200 * H));
    memset(&x, 0, sizeof x);
    CHECK(gl_query_team_waste_hours(st, &oct, "a", collect, &x, &err) == GL_OK);
    CHECK(x.n == 1 && row_is(&x, 0, "a", "M", 0, h1, 200 * H));
    memset(&x, 0, sizeof x);
    CHECK(gl_query_team_waste_hours(st, &oct, "b", collect, &x, &err) == GL_OK && x.n == 0);
}

static void test_capacity_and_samples(void)
{
    /* the full GPU's 10,000 MiB; the MIG instance's 40,000 does not count */
    CHECK(gl_query_model_capacity(st, "M") == 10000);
    CHECK(gl_query_model_capacity(st, "H") == 20000);
    CHECK(gl_query_model_capacity(st, "nope") == 0);
    bool had = true;
    struct gl_error err = {0};
    CHECK(gl_query_cluster_had_samples(st, "c1", h_sep, &had, &err) == GL_OK && !had);
    CHECK(gl_query_cluster_had_samples(st, "c1", h_sep + 1, &had, &err) == GL_OK && had);
    CHECK(gl_query_cluster_had_samples(st, "c2", h2 + H, &had, &err) == GL_OK && !had);
}

/* A capacity read in a read snapshot is remembered there (a statement
 * asks it for every advice row) and read again in the next one: a device
 * stored in between, with more memory, is seen. */
static void test_capacity_per_snapshot(void)
{
    struct gl_error err = {0};
    CHECK(gl_store_read_begin(st, &err) == GL_OK);
    CHECK(gl_query_model_capacity(st, "H") == 20000);
    CHECK(gl_query_model_capacity(st, "H") == 20000);
    gl_store_read_end(st);
    CHECK(gl_store_begin(st, &err) == GL_OK);
    int64_t g = device("GPU-9", "", "H", "node-c", 30000);
    CHECK(g > 0 && gl_store_commit(st, &err) == GL_OK);
    CHECK(gl_query_model_capacity(st, "H") == 30000); /* outside a snapshot: read */
    CHECK(gl_store_read_begin(st, &err) == GL_OK);
    CHECK(gl_query_model_capacity(st, "H") == 30000);
    gl_store_read_end(st);
}

static void test_workloads(void)
{
    struct gl_team_workloads w;
    struct gl_error err = {0};
    CHECK(gl_query_team_workloads(st, &oct, "a", 10, &w, &err) == GL_OK);
    /* web = pa 3,000 + pa3 100 (two pods), then pa2 as its own Pod */
    CHECK(w.n == 2 && w.total == 2);
    if (w.n == 2) {
        CHECK(strcmp(w.w[0].kind, "Deployment") == 0 && strcmp(w.w[0].name, "web") == 0 &&
              w.w[0].used == 3100 * H && w.w[0].allocated == 3200 * H &&
              w.w[0].waste == 200 * H && w.w[0].pods == 2);
        CHECK(strcmp(w.w[1].kind, "Pod") == 0 && strcmp(w.w[1].name, "pa2") == 0 &&
              w.w[1].used == 500 * H && w.w[1].pods == 1);
    }
    gl_team_workloads_free(&w);
    CHECK(gl_query_team_workloads(st, &oct, "a", 1, &w, &err) == GL_OK);
    CHECK(w.n == 1 && w.total == 2);
    gl_team_workloads_free(&w);
}

static void frozen_inv(void *ctx, const char *team, const char *json, const char *md)
{
    (void)md;
    cJSON **out = ctx;
    if (!*out && strcmp(team, "a") == 0)
        *out = cJSON_Parse(json);
}

static enum gl_status frozen_row(void *ctx, const struct gl_frozen_row *r, struct gl_error *err)
{
    (void)err;
    struct gl_frozen_row *out = ctx;
    if (strcmp(r->team, "a") == 0) {
        *out = *r;
        out->team = out->cluster = out->model = out->price_id = out->price_key = NULL;
        out->unit_price = out->corrected_period = NULL;
    }
    return GL_OK;
}

/* Closed months: state, frozen texts and rows, and the trend. */
static void test_closed_and_trend(void)
{
    struct gl_error err = {0};
    bool closed = true;
    int64_t at = -1;
    CHECK(gl_query_is_closed(st, "2026-09", &closed, &err) == GL_OK && !closed);
    CHECK(gl_query_closed_at(st, "2026-09", &at, &err) == GL_OK && at == 0);
    /* the trend of October before September is closed: Sep's 100 MiB-h */
    struct gl_trend_row tr[3];
    size_t n = 9;
    CHECK(gl_query_team_trend(st, &oct, "a", 3, tr, &n, &err) == GL_OK);
    CHECK(n == 1 && strcmp(tr[0].period, "2026-09") == 0 && tr[0].used == 100 * H &&
          !tr[0].closed && tr[0].total_minor == 0);
    int64_t now;
    gl_time_parse("2026-10-05T00:00:00Z", &now);
    CHECK(gl_period_close_force(cfg, st, prices, &sep, now, true, &err) == GL_OK);
    CHECK(gl_query_is_closed(st, "2026-09", &closed, &err) == GL_OK && closed);
    CHECK(gl_query_closed_at(st, "2026-09", &at, &err) == GL_OK && at == now);
    /* closed: 100 MiB-h × 1.048576 / 1000 = 0.1048576 GB-h at 1.00 → 0.10 */
    CHECK(gl_query_team_trend(st, &oct, "a", 3, tr, &n, &err) == GL_OK);
    CHECK(n == 1 && tr[0].closed && tr[0].total_minor == 10 && tr[0].used == 100 * H);
    /* two teams at once: b has no month before October */
    const char *teams[2] = {"b", "a"};
    struct gl_trend_row both[4];
    size_t nn[2] = {9, 9};
    CHECK(gl_query_trends(st, &oct, teams, 2, 2, both, nn, &err) == GL_OK);
    CHECK(nn[0] == 0 && nn[1] == 1 && both[2].total_minor == 10);
    /* the frozen texts and rows */
    char *csv = NULL;
    CHECK(gl_query_frozen_focus(st, "2026-09", &csv, &err) == GL_OK && csv &&
          strncmp(csv, "BilledCost,", 11) == 0);
    free(csv);
    csv = NULL;
    CHECK(gl_query_frozen_focus(st, "2026-10", &csv, &err) == GL_ERR_STATE && !csv);
    cJSON *inv = NULL;
    CHECK(gl_query_frozen_invoices(st, "2026-09", NULL, frozen_inv, &inv, &err) == GL_OK);
    CHECK(inv && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(inv, "total")), "0.10") == 0 &&
          strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(inv, "status")), "final") == 0);
    cJSON_Delete(inv);
    struct gl_frozen_row fr = {0};
    CHECK(gl_query_frozen_rows(st, "2026-09", NULL, frozen_row, &fr, &err) == GL_OK);
    /* Sep 10 00:00 UTC; 360,000 MiB·s; 104,857,600 GB-h × 10^-9 */
    CHECK(fr.day == sep.start + 9 * 86400 && fr.mib_s == 100 * H && fr.billed_minor == 10 &&
          fr.gbh_nano == 104857600 && fr.kind == GL_LINE_MEMORY_USED);
}

struct periods {
    char names[8][8];
    size_t n;
};

static void period_fn(void *ctx, const char *period)
{
    struct periods *p = ctx;
    if (p->n < 8)
        snprintf(p->names[p->n++], 8, "%s", period);
}

static void device_fn(void *ctx, const char *const cols[8])
{
    struct periods *p = ctx; /* "<uuid>=<seen>" */
    if (p->n < 8)
        snprintf(p->names[p->n++], 8, "%.5s%s", cols[1], cols[7]);
}

/* The output state's reads: data versions, periods, devices, the record. */
static void test_output_state(void)
{
    struct gl_error err = {0};
    int64_t v = -1;
    /* one collected hour marked in October... twice (h1, h2) */
    CHECK(gl_query_data_version(st, "2026-10", &v, &err) == GL_OK && v == 2);
    CHECK(gl_query_data_version(st, "2026-09", &v, &err) == GL_OK && v == 1);
    CHECK(gl_query_data_version(st, "2027-01", &v, &err) == GL_OK && v == 0);
    struct periods p = {0};
    CHECK(gl_query_known_periods(st, period_fn, &p, &err) == GL_OK);
    CHECK(p.n == 2 && strcmp(p.names[0], "2026-09") == 0 && strcmp(p.names[1], "2026-10") == 0);
    /* devices by uuid: seen in October, the pseudo-device never */
    memset(&p, 0, sizeof p);
    CHECK(gl_query_devices_seen(st, &oct, device_fn, &p, &err) == GL_OK);
    CHECK(p.n == 4 && strcmp(p.names[0], "GPU-11") == 0 && strcmp(p.names[1], "GPU-21") == 0 &&
          strcmp(p.names[2], "GPU-31") == 0 && strcmp(p.names[3], "node:0") == 0);
    memset(&p, 0, sizeof p);
    CHECK(gl_query_devices_seen(st, &nov, device_fn, &p, &err) == GL_OK);
    CHECK(p.n == 4 && strcmp(p.names[0], "GPU-10") == 0);
    /* the record round-trips; another folder has none */
    char c[] = "c", d[] = "d", pr[] = "p", k[] = "k", files[] = "a.json\t12\n";
    struct gl_output_state o = {.data_version = 7, .closed = c, .devices = d, .prices = pr,
                                .config = k, .files = files};
    CHECK(gl_store_output_state(st, "/out", "2026-10", &o, &err) == GL_OK);
    struct gl_output_state back;
    bool found = false;
    CHECK(gl_query_output_state(st, "/out", "2026-10", &back, &found, &err) == GL_OK && found);
    CHECK(found && back.data_version == 7 && strcmp(back.closed, "c") == 0 &&
          strcmp(back.devices, "d") == 0 && strcmp(back.prices, "p") == 0 &&
          strcmp(back.config, "k") == 0 && strcmp(back.files, "a.json\t12\n") == 0);
    gl_output_state_clear(&back);
    CHECK(back.files == NULL);
    CHECK(gl_query_output_state(st, "/other", "2026-10", &back, &found, &err) == GL_OK &&
          !found && back.files == NULL);
}

int main(void)
{
    gl_log_threshold = GL_LOG_ERROR;
    tap_tmp_begin();
    if (!setup()) {
        printf("not ok - setup\n");
        return 1;
    }
    RUN(test_axis);
    RUN(test_team_usage);
    RUN(test_fleet);
    RUN(test_billable_hours);
    RUN(test_billed);
    RUN(test_idle_and_info);
    RUN(test_capacity_and_samples);
    RUN(test_workloads);
    RUN(test_output_state);
    RUN(test_closed_and_trend);
    RUN(test_capacity_per_snapshot); /* last: it stores a device */
    teardown();
    tap_tmp_end();
    return TAP_END();
}
