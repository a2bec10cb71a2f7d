/* Unit tests: the server-mode decision rules (engine/collect/server.c) on
 * hand-made units and matrices. The unit of most checks covers 2026-10-02
 * 00:00 to 02:00 (2 hours) at a 300 s step: 12 steps an hour, 24 in all;
 * step t lies in hour t / 12. Its hosts, in u->hosts order:
 *
 *   h1 (id 0)  plain in hour 0, raw in hour 1
 *   h2 (id 1)  plain in both hours
 *
 * Any other host name (h3) is unknown to the unit: never plain. */
#include <math.h>
#include <unistd.h>

#include "config.h"
#include "mig.h"
#include "parse.h"
#include "server.h"
#include "tap.h"
#include "util.h"

#define STEP 300
#define PER 12 /* 3600 / 300 */
#define NH 2
#define NSTEPS (PER * NH)
#define CS 1790899200LL /* 2026-10-02T00:00:00Z */

/* A matrix on the grid start + k*step (k < nsteps) from "labels|ranges"
 * lines: labels as JSON members ("" for none), ranges "a-b=v;c-d=w" (steps
 * a to b inclusive hold v; every other step has no sample). */
static bool matrix(struct gl_matrix *m, int64_t start, int64_t step, size_t nsteps,
                   const char *const *series, size_t n)
{
    struct gl_buf json;
    gl_buf_init(&json);
    gl_buf_puts(&json, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[");
    for (size_t i = 0; i < n; i++) {
        const char *bar = strchr(series[i], '|');
        gl_buf_printf(&json, "%s{\"metric\":{%.*s},\"values\":[", i ? "," : "",
                      (int)(bar - series[i]), series[i]);
        int first = 1;
        for (const char *r = bar + 1; *r;) {
            long a = 0, b = 0;
            char v[64] = "";
            int used = 0;
            if (sscanf(r, "%ld-%ld=%63[^;]%n", &a, &b, v, &used) != 3)
                break;
            for (long t = a; t <= b; t++, first = 0)
                gl_buf_printf(&json, "%s[%lld,\"%s\"]", first ? "" : ",",
                              (long long)(start + t * step), v);
            r += used;
            if (*r == ';')
                r++;
        }
        gl_buf_puts(&json, "]}");
    }
    gl_buf_puts(&json, "]}}");
    struct gl_error err = {0};
    enum gl_status rc = gl_matrix_parse(json.data, json.len, start, step, nsteps, "test", m, &err);
    if (rc)
        printf("# matrix: %s\n", err.msg);
    gl_buf_free(&json);
    return rc == GL_OK;
}

/* The hand-made unit above (ok[host * nhours + hour]). */
static void unit_init(struct gl_srv_unit *u, const unsigned char *ok, size_t nhosts,
                      size_t nhours)
{
    memset(u, 0, sizeof *u);
    u->cs = CS;
    u->ce = CS + (int64_t)nhours * 3600;
    u->step = STEP;
    u->nhours = nhours;
    u->hosts = gl_intern_new();
    for (size_t i = 0; i < nhosts; i++) {
        char name[16];
        snprintf(name, sizeof name, "h%zu", i + 1);
        gl_intern_get(u->hosts, name);
    }
    u->nhosts = nhosts;
    u->ok = gl_xcalloc(nhosts * nhours + 1, 1);
    memcpy(u->ok, ok, nhosts * nhours);
}

static const unsigned char ok_2x2[] = {1, 0, /* h1 */ 1, 1 /* h2 */};

static const struct gl_series *find(const struct gl_matrix *m, const char *host)
{
    for (size_t i = 0; i < m->nseries; i++) {
        const char *h = gl_series_label(&m->series[i], "Hostname");
        if (h ? host && strcmp(h, host) == 0 : !host)
            return &m->series[i];
    }
    return NULL;
}

/* Samples of s in steps a..b (inclusive) all equal to v; NAN: all absent. */
static bool steps_are(const struct gl_series *s, size_t a, size_t b, double v)
{
    for (size_t t = a; s && t <= b; t++)
        if (isnan(v) ? !isnan(s->values[t]) : s->values[t] != v)
            return false;
    return s != NULL;
}

static void test_changes(void)
{
    struct gl_srv_unit u = {0};
    CHECK_STR(gl_srv_changes(&u), "changes");
    u.metricsql = true; /* VictoriaMetrics */
    CHECK_STR(gl_srv_changes(&u), "changes_prometheus");
}

static void test_same_hours(void)
{
    struct gl_srv_unit u;
    unit_init(&u, ok_2x2, 2, NH);
    /* hour 0: {h1, h2}; hour 1: {h2} */
    CHECK(gl_srv_same_hours(&u, 0, 0) && gl_srv_same_hours(&u, 1, 1));
    CHECK(!gl_srv_same_hours(&u, 0, 1) && !gl_srv_same_hours(&u, 1, 0));
    gl_srv_unit_free(&u);
    /* three hours: h1 plain at 0 only, h2 at all: hours 1 and 2 alike ({h2}) */
    static const unsigned char ok3[] = {1, 0, 0, 1, 1, 1};
    unit_init(&u, ok3, 2, 3);
    CHECK(gl_srv_same_hours(&u, 1, 2) && !gl_srv_same_hours(&u, 0, 2));
    gl_srv_unit_free(&u);
    /* no host: every hour alike (nothing plain anywhere) */
    unit_init(&u, ok3, 0, 3);
    CHECK(gl_srv_same_hours(&u, 0, 2));
    gl_srv_unit_free(&u);
}

/* Whose samples count as a plain host's (the lookup gl_srv_split moves
 * samples by): the host named by the label asked for, at the hours it is
 * plain. Each series holds its number at every step. */
static void test_plain_at(void)
{
    struct gl_srv_unit u;
    unit_init(&u, ok_2x2, 2, NH);
    struct gl_matrix m, out;
    static const char *const s[] = {
        "\"Hostname\":\"h1\"|0-23=1", "\"Hostname\":\"h2\"|0-23=2", "\"Hostname\":\"h3\"|0-23=3",
        "\"node\":\"h1\"|0-23=4",     "\"Hostname\":\"\"|0-23=5",
    };
    CHECK(matrix(&m, CS, STEP, NSTEPS, s, 5));
    gl_srv_split(&u, &m, "Hostname", &out);
    /* h1 plain at hour 0 only, h2 at both; h3 a host the figures never
     * named, the "node" series looked up by "Hostname" (it has none) and
     * an empty host label: never plain */
    CHECK(out.nseries == 2);
    const struct gl_series *o1 = out.nseries > 0 ? &out.series[0] : NULL,
                           *o2 = out.nseries > 1 ? &out.series[1] : NULL;
    CHECK(steps_are(o1, 0, 11, 1) && steps_are(o1, 12, 23, NAN));
    CHECK(steps_are(o2, 0, 23, 2));
    gl_matrix_free(&out);
    gl_matrix_free(&m);
    /* the allocation's "node" label names the same host; h1's series,
     * looked up by "node", is on no host */
    CHECK(matrix(&m, CS, STEP, NSTEPS, s, 5));
    gl_srv_split(&u, &m, "node", &out);
    CHECK(out.nseries == 1);
    const struct gl_series *on = out.nseries == 1 ? &out.series[0] : NULL;
    CHECK(steps_are(on, 0, 11, 4) && steps_are(on, 12, 23, NAN));
    gl_matrix_free(&out);
    gl_matrix_free(&m);
    gl_srv_unit_free(&u);
}

/* Split by host and hour, then merged back: the matrix as it was. */
static void test_split_merge(void)
{
    struct gl_srv_unit u;
    unit_init(&u, ok_2x2, 2, NH);
    struct gl_matrix m, out;
    static const char *const s[] = {
        "\"Hostname\":\"h1\",\"x\":\"a\"|0-23=5", /* A: plain hour 0, raw hour 1: cut in two */
        "\"Hostname\":\"h2\",\"x\":\"b\"|0-23=6", /* B: plain throughout: moved */
        "\"Hostname\":\"h3\",\"x\":\"c\"|0-23=7", /* C: unknown host: stays */
        "\"Hostname\":\"h1\",\"x\":\"d\"|12-23=8", /* D: h1 only in its raw hour: stays */
        "\"x\":\"e\"|3-4=9",                       /* E: no host: stays */
    };
    CHECK(matrix(&m, CS, STEP, NSTEPS, s, 5));
    /* samples: 24 + 24 + 24 + 12 + 2 = 86 */
    CHECK(m.nseries == 5 && m.samples == 86);
    gl_srv_split(&u, &m, "Hostname", &out);
    CHECK(out.start == CS && out.step == STEP && out.nsteps == NSTEPS);
    /* out: A's hour 0 and all of B; m: A's hour 1, C, D, E (their order kept) */
    CHECK(out.nseries == 2 && m.nseries == 4);
    const struct gl_series *oa = out.nseries > 0 ? &out.series[0] : NULL,
                           *ob = out.nseries > 1 ? &out.series[1] : NULL;
    CHECK(oa && strcmp(gl_series_label(oa, "x"), "a") == 0 && steps_are(oa, 0, 11, 5) &&
          steps_are(oa, 12, 23, NAN) && oa->first_step == 0);
    CHECK(ob && strcmp(gl_series_label(ob, "x"), "b") == 0 && steps_are(ob, 0, 23, 6) &&
          ob->first_step == 0);
    const char *order[] = {"a", "c", "d", "e"};
    for (size_t i = 0; i < 4 && i < m.nseries; i++)
        CHECK_STR(gl_series_label(&m.series[i], "x"), order[i]);
    if (m.nseries == 4) {
        /* A keeps hour 1 only: its first sample now step 12 */
        CHECK(steps_are(&m.series[0], 0, 11, NAN) && steps_are(&m.series[0], 12, 23, 5) &&
              m.series[0].first_step == 12);
        CHECK(steps_are(&m.series[1], 0, 23, 7));
        CHECK(steps_are(&m.series[2], 0, 11, NAN) && steps_are(&m.series[2], 12, 23, 8));
        CHECK(steps_are(&m.series[3], 3, 4, 9) && m.series[3].first_step == 3);
    }
    /* merged back (series by label set): A whole again, B appended */
    gl_srv_merge(&m, &out);
    CHECK(m.nseries == 5);
    const struct gl_series *a = NULL, *b = NULL;
    for (size_t i = 0; i < m.nseries; i++) {
        const char *x = gl_series_label(&m.series[i], "x");
        if (x && !strcmp(x, "a"))
            a = &m.series[i];
        if (x && !strcmp(x, "b"))
            b = &m.series[i];
    }
    CHECK(a && steps_are(a, 0, 23, 5) && a->first_step == 0 && a->first_seen == CS);
    CHECK(b && steps_are(b, 0, 23, 6) && b->first_step == 0 && b->first_seen == CS);
    gl_matrix_free(&out);
    gl_matrix_free(&m);
    gl_srv_unit_free(&u);
}

/* A part of one hour merged at its offset, with its sample counts and the
 * description of its skipped sample. */
static void test_merge_offset(void)
{
    struct gl_matrix m, part;
    static const char *const s[] = {"\"Hostname\":\"h1\"|0-11=5"};
    /* hour 1 (starts at step 12): h1 at 7, a new series h2 at 9 with a
     * negative sample (skipped) at the hour's last step */
    static const char *const p[] = {"\"Hostname\":\"h1\"|0-11=7",
                                    "\"Hostname\":\"h2\"|0-10=9;11-11=-1"};
    CHECK(matrix(&m, CS, STEP, NSTEPS, s, 1));
    CHECK(matrix(&part, CS + 3600, STEP, PER, p, 2));
    /* the part: 12 + 11 kept, 1 negative skipped */
    CHECK(part.samples == 23 && part.bad_samples == 1 && part.skipped[GL_SKIP_NEGATIVE] == 1);
    gl_srv_merge(&m, &part);
    CHECK(m.nseries == 2);
    const struct gl_series *h1 = find(&m, "h1"), *h2 = find(&m, "h2");
    /* h1: 5 in hour 0, 7 in hour 1 */
    CHECK(h1 && steps_are(h1, 0, 11, 5) && steps_are(h1, 12, 23, 7) && h1->first_step == 0);
    /* h2: nothing in hour 0, 9 at steps 12..22, nothing at 23; first sample
     * at step 12 = CS + 12 × 300 = CS + 3600 */
    CHECK(h2 && steps_are(h2, 0, 11, NAN) && steps_are(h2, 12, 22, 9) &&
          steps_are(h2, 23, 23, NAN) && h2->first_step == 12 && h2->first_seen == CS + 3600);
    /* counts: 12 + 23 kept, 0 + 1 skipped */
    CHECK(m.samples == 35 && m.bad_samples == 1 && m.skipped[GL_SKIP_NEGATIVE] == 1);
    CHECK(m.bad[0][0] && strcmp(m.bad[0], part.bad[0]) == 0);
    gl_matrix_free(&part);
    gl_matrix_free(&m);
}

/* ---- gl_srv_decide: the probes of the backend's subquery alignment ---- */

struct decide_fx {
    struct gl_config *c;
    struct gl_srv_unit u;
    struct gl_range_query *figs;
};

/* A unit of NH hours with a memory and an FB_FREE query; its probe
 * figures answer count (samples per hour), tsum (Σ of their instants, the
 * text of a number per hour) and changes; every other figure is empty. */
static bool decide_setup(struct decide_fx *f, const char *billing, bool metricsql, int count,
                         const char *const tsum[NH], int changes)
{
    memset(f, 0, sizeof *f);
    char text[1024];
    snprintf(text, sizeof text,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"},"
             " \"prices\": {\"file\": \"p.csv\"}, \"billing\": {%s}}",
             billing);
    struct gl_error err = {0};
    if (gl_config_load(tap_tmpfile("srv-cfg.json", text), &f->c, &err)) {
        printf("# config: %s\n", err.msg);
        return false;
    }
    if (f->c->nclusters < 1)
        return false;
    struct gl_srv_unit *u = &f->u;
    u->c = f->c;
    u->cluster = &f->c->clusters[0];
    u->nq = 2;
    u->role[0] = GL_SRV_MEMORY;
    u->role[1] = GL_SRV_FREE;
    u->queries[0] = "mem_q";
    u->queries[1] = "free_q";
    u->query_names[0] = "memory";
    u->query_names[1] = "fb_free";
    u->alloc_q = u->phase_q = u->pod_labels_q = u->ns_labels_q = u->node_labels_q = -1;
    u->cs = CS;
    u->ce = CS + NH * 3600;
    u->step = STEP;
    u->nhours = NH;
    u->metricsql = metricsql;
    gl_srv_figures(u);
    f->figs = gl_xcalloc(u->nfig + 1, sizeof *f->figs);
    /* figures: one point per hour, at the hour's last step (T = hour + 3300) */
    const int64_t start = CS + 3600 - STEP;
    bool ok = u->nfig > 3;
    for (size_t i = 0; ok && i < u->nfig; i++) {
        char a[64], b[64];
        const char *one[1] = {a};
        size_t n = 0;
        switch (u->fig_q[i]) {
        case -1:
            snprintf(a, sizeof a, "|0-1=%d", count);
            n = 1;
            break;
        case -2:
            snprintf(a, sizeof a, "|0-0=%s", tsum[0]);
            snprintf(b, sizeof b, "|1-1=%s", tsum[1]);
            /* two ranges of one series */
            snprintf(a + strlen(a), sizeof a - strlen(a), ";%s", b + 1);
            n = 1;
            break;
        case -3:
            snprintf(a, sizeof a, "|0-1=%d", changes);
            n = 1;
            break;
        default:
            break;
        }
        ok = matrix(&f->figs[i].m, start, 3600, NH, one, n);
        f->figs[i].rc = GL_OK;
    }
    return ok;
}

static void decide_teardown(struct decide_fx *f)
{
    for (size_t i = 0; f->figs && i < f->u.nfig; i++)
        gl_matrix_free(&f->figs[i].m);
    free(f->figs);
    gl_srv_unit_free(&f->u);
    gl_config_free(f->c);
}

/* Σ of the 12 step instants of hour h, T, T-300, ..., T-3300 with
 * T = CS + 3600h + 3300: 12T - 300 × (0 + 1 + ... + 11) = 12T - 19,800.
 *   hour 0: 12 × 1,790,902,500 - 19,800 = 21,490,810,200
 *   hour 1: that + 12 × 3,600 = 21,490,853,400 */
static const char *const tsum_ok[NH] = {"21490810200", "21490853400"};

static void test_decide_probes(void)
{
    struct decide_fx f;
    struct gl_error err = {0};
    /* aligned as Prometheus (12 samples, their instants, 11 changes) but
     * billing basis max: no host plain, the reason kept */
    CHECK(decide_setup(&f, "\"currency\": \"USD\", \"basis\": \"max\"", false, PER, tsum_ok,
                       PER - 1));
    CHECK(gl_srv_decide(&f.u, f.figs, NULL, NULL, &err) == GL_OK);
    CHECK(!f.u.enabled && strcmp(f.u.why, "billing basis max") == 0);
    decide_teardown(&f);

    /* 13 samples in an hour (a subquery closed at both ends) */
    CHECK(decide_setup(&f, "\"currency\": \"USD\"", false, PER + 1, tsum_ok, PER - 1));
    CHECK(gl_srv_decide(&f.u, f.figs, NULL, NULL, &err) == GL_ERR_PROM);
    CHECK(strstr(err.msg, "subquery alignment differs") && strstr(err.msg, "gave 13 samples"));
    CHECK(!f.u.enabled);
    decide_teardown(&f);

    /* the right count at instants shifted by one step in hour 1: Σ + 12 × 300 */
    static const char *const shifted[NH] = {"21490810200", "21490857000"};
    err = (struct gl_error){0};
    CHECK(decide_setup(&f, "\"currency\": \"USD\"", false, PER, shifted, PER - 1));
    CHECK(gl_srv_decide(&f.u, f.figs, NULL, NULL, &err) == GL_ERR_PROM);
    CHECK(strstr(err.msg, "2026-10-02T01:00:00Z") && strstr(err.msg, "subquery alignment"));
    decide_teardown(&f);

    /* changes counting the step before the window (VictoriaMetrics's
     * changes()): 12 where Prometheus gives 11; the message names the
     * function the unit uses */
    err = (struct gl_error){0};
    CHECK(decide_setup(&f, "\"currency\": \"USD\"", true, PER, tsum_ok, PER));
    CHECK(gl_srv_decide(&f.u, f.figs, NULL, NULL, &err) == GL_ERR_PROM);
    CHECK(strstr(err.msg, "changes_prometheus(timestamp(vector(1))") &&
          strstr(err.msg, "gave 12 where"));
    decide_teardown(&f);

    /* aligned, basis used, every other figure empty: enabled, no host */
    err = (struct gl_error){0};
    CHECK(decide_setup(&f, "\"currency\": \"USD\"", false, PER, tsum_ok, PER - 1));
    enum gl_status rc = gl_srv_decide(&f.u, f.figs, NULL, NULL, &err);
    if (rc)
        printf("# decide: %s\n", err.msg);
    CHECK(rc == GL_OK && f.u.enabled && f.u.nhosts == 0 && f.u.why[0] == '\0');
    decide_teardown(&f);
}

/* Server mode reads a request's MIG resource as attribution does (one
 * reader): the instance count g, the memory and the profile the hours are
 * keyed by; a name that only starts like one is not MIG. */
static void test_mig_resource(void)
{
    struct gl_buf p;
    gl_buf_init(&p);
    int64_t g = 0, gb = 0;
    CHECK(gl_mig_resource("nvidia_com_mig_3g_40gb", &g, &gb, &p) && g == 3 && gb == 40);
    CHECK_STR(p.data, "3g.40gb");
    CHECK(gl_mig_resource("nvidia_com_mig_1g_5gb_me", &g, &gb, &p) && g == 1 && gb == 5);
    CHECK_STR(p.data, "1g.5gb+me");
    CHECK(!gl_mig_resource("nvidia_com_mig_1g", &g, &gb, &p));
    CHECK(!gl_mig_resource("nvidia_com_mig_xg_5gb", &g, &gb, &p));
    CHECK(!gl_mig_resource("nvidia_com_gpu", &g, &gb, &p));
    gl_buf_free(&p);
}

int main(void)
{
    gl_log_threshold = GL_LOG_ERROR;
    if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0)
        setenv("TMPDIR", "/dev/shm", 1);
    RUN(test_changes);
    RUN(test_same_hours);
    RUN(test_plain_at);
    RUN(test_split_merge);
    RUN(test_merge_offset);
    RUN(test_decide_probes);
    RUN(test_mig_resource);
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s", tap_tmpfile("srv-cfg.json", ""));
    unlink(cfg);
    return TAP_END();
}
