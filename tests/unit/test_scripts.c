/* Attribution scripts (tests/attribution/README.md): each *.test file holds
 * an engine config, a step grid, the series each query would return and
 * expected figures worked by hand; this runner builds the matrices through
 * the engine's own parser (gl_matrix_parse_opts on a JSON body), joins the
 * allocation (gl_allocation_join), runs gl_integrate and compares the
 * rollup; invoice and fleet figures come from the rollup stored through the
 * store API in a temporary database (gl_statement_build). TAP output: one
 * line per expect line.
 *
 * Usage: test_scripts [DIR | FILE.test]...   (default: the source tree's
 * tests/attribution, compiled in). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "integrate.h"
#include "invoice.h"
#include "parse.h"
#include "price.h"
#include "query.h"
#include "statement.h"
#include "store.h"
#include "timeutil.h"
#include "util.h"

#ifndef GL_ATTRIBUTION_DIR
#define GL_ATTRIBUTION_DIR "tests/attribution"
#endif

static int ntests, nfailed;

static void tap(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tap(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ntests++;
    if (!ok)
        nfailed++;
    printf("%s %d - ", ok ? "ok" : "not ok", ntests);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

/* ---- the script ---- */

#define MAX_LOADS 24

struct load {
    char *name;
    struct gl_buf body; /* the "result" array's items, comma-separated */
    size_t nseries;
    int line;
};

struct script {
    const char *file; /* base name, for messages */
    char cfg_path[512];
    bool have_cfg;
    int cfg_line;
    int64_t start, step;
    size_t nsteps;
    bool have_grid;
    struct load loads[MAX_LOADS];
    size_t nloads;
    /* the evaluation of the current state (lazy, redone after a change) */
    bool evaluated;
    enum gl_status rc;
    char msg[1100];
    struct gl_config *c;
    struct gl_rollup r;
    bool have_r;
    bool stored; /* st built (or failed: st NULL, stmsg) */
    char db_path[512];
    struct gl_store *s;
    struct gl_price_table *prices;
    struct gl_statement *st;
    char stmsg[1100];
    int nexpect;
};

static void eval_free(struct script *x)
{
    if (x->have_r)
        gl_rollup_free(&x->r);
    x->have_r = false;
    gl_statement_free(x->st);
    x->st = NULL;
    if (x->s)
        gl_store_close(x->s);
    x->s = NULL;
    if (x->db_path[0]) {
        char side[600];
        unlink(x->db_path);
        snprintf(side, sizeof side, "%s-wal", x->db_path);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", x->db_path);
        unlink(side);
        snprintf(side, sizeof side, "%s.lock", x->db_path);
        unlink(side);
    }
    gl_prices_free(x->prices);
    x->prices = NULL;
    gl_config_free(x->c);
    x->c = NULL;
    x->evaluated = false;
    x->stored = false;
    x->msg[0] = x->stmsg[0] = '\0';
}

static void loads_clear(struct script *x)
{
    for (size_t i = 0; i < x->nloads; i++) {
        free(x->loads[i].name);
        gl_buf_free(&x->loads[i].body);
    }
    x->nloads = 0;
}

static const char *tmpdir(void)
{
    const char *d = getenv("TMPDIR");
    return d && d[0] ? d : "/tmp";
}

/* ---- small text helpers (no JSON here: labels go to the engine's parser) ---- */

static char *skip_ws(char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static void rstrip(char *p)
{
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\n' || p[n - 1] == '\r'))
        p[--n] = '\0';
}

/* The next whitespace-separated token of *p (NUL-terminated in place), or NULL. */
static char *token(char **p)
{
    char *s = skip_ws(*p);
    if (!*s)
        return NULL;
    char *e = s;
    while (*e && *e != ' ' && *e != '\t')
        e++;
    if (*e)
        *e++ = '\0';
    *p = e;
    return s;
}

/* A value token is passed to the parser inside a JSON string: only the
 * characters a Prometheus float can have. */
static bool value_chars(const char *v)
{
    if (!*v)
        return false;
    for (; *v; v++)
        if (!((*v >= '0' && *v <= '9') || (*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') ||
              *v == '.' || *v == '+' || *v == '-'))
            return false;
    return true;
}

static bool parse_i64(const char *s, int64_t *out)
{
    if (!*s)
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* EXPR: integers joined by + - * (usual precedence, no parentheses),
 * checked for overflow. */
static bool parse_expr(const char *s, int64_t *out)
{
    int64_t total = 0, term = 0;
    int sign = 1;
    bool have_term = false;
    const char *p = s;
    while (1) {
        while (*p == ' ')
            p++;
        char *end;
        errno = 0;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        long long v = strtoll(p, &end, 10);
        if (errno)
            return false;
        p = end;
        if (!have_term)
            term = v;
        else if (__builtin_mul_overflow(term, (int64_t)v, &term))
            return false;
        have_term = true;
        while (*p == ' ')
            p++;
        if (*p == '*') {
            p++;
            continue;
        }
        if (__builtin_add_overflow(total, sign * term, &total))
            return false;
        have_term = false;
        if (*p == '+' || *p == '-') {
            sign = *p == '+' ? 1 : -1;
            p++;
            continue;
        }
        if (*p)
            return false;
        *out = total;
        return true;
    }
}

/* ---- the matrices ---- */

static struct load *find_load(struct script *x, const char *name)
{
    for (size_t i = 0; i < x->nloads; i++)
        if (strcmp(x->loads[i].name, name) == 0)
            return &x->loads[i];
    return NULL;
}

/* One series line "LABELS V0 V1 ... [# comment]" into l's body; LABELS is
 * everything up to the line's last '}' (a JSON object the engine's parser
 * reads); values: a number, _ (no sample), or VxN (N times V). */
static bool add_series(struct script *x, struct load *l, char *line, char *why, size_t nwhy)
{
    char *close = strrchr(line, '}');
    if (line[0] != '{' || !close) {
        snprintf(why, nwhy, "a series line is {LABELS} VALUES...");
        return false;
    }
    char *vals = close + 1;
    char *hash = strchr(vals, '#');
    if (hash)
        *hash = '\0';
    struct gl_buf *b = &l->body;
    gl_buf_printf(b, "%s{\"metric\":%.*s,\"values\":[", l->nseries ? "," : "",
                  (int)(close - line + 1), line);
    size_t t = 0;
    bool first = true;
    char *p = vals, *tok;
    while ((tok = token(&p))) {
        int64_t rep = 1;
        char *xpos = strrchr(tok, 'x');
        if (xpos && xpos[1] && strspn(xpos + 1, "0123456789") == strlen(xpos + 1)) {
            *xpos = '\0';
            if (!parse_i64(xpos + 1, &rep) || rep < 1) {
                snprintf(why, nwhy, "bad repeat count in \"%s\"", tok);
                return false;
            }
        }
        bool missing = strcmp(tok, "_") == 0;
        if (!missing && !value_chars(tok)) {
            snprintf(why, nwhy, "bad value \"%s\"", tok);
            return false;
        }
        for (int64_t k = 0; k < rep; k++, t++) {
            if (t >= x->nsteps) {
                snprintf(why, nwhy, "more values than the grid's %zu steps", x->nsteps);
                return false;
            }
            if (!missing) {
                gl_buf_printf(b, "%s[%" PRId64 ",\"%s\"]", first ? "" : ",",
                              x->start + (int64_t)t * x->step, tok);
                first = false;
            }
        }
    }
    if (t != x->nsteps) {
        snprintf(why, nwhy, "%zu values for the grid's %zu steps", t, x->nsteps);
        return false;
    }
    gl_buf_puts(b, "]}");
    l->nseries++;
    return true;
}

/* The parse options of a query, as collection sets them (collect.c
 * query_opts): memory queries bounded by 2^20 MiB or 2^40 bytes, label and
 * request series any finite value, a joined allocation 1024 units, compute
 * ratios 1 (GPU_UTIL 100). */
static struct gl_parse_opts opts_for(const struct gl_config *c, const char *name)
{
    struct gl_parse_opts po = {.max = 1048576.0};
    enum gl_mq mq = GL_MQ_COUNT;
    if (strcmp(name, c->mem_query) == 0)
        mq = GL_MQ_MEMORY;
    else if (strcmp(name, "fb_free") == 0)
        mq = GL_MQ_FREE;
    else if (strcmp(name, "fb_reserved") == 0)
        mq = GL_MQ_RESERVED;
    else if (c->mem_limit_query && strcmp(name, c->mem_limit_query) == 0)
        mq = GL_MQ_LIMIT;
    if (mq != GL_MQ_COUNT)
        po.max = c->mq[mq].unit == GL_UNIT_BYTES ? 1099511627776.0 : 1048576.0;
    else if (strcmp(name, "allocation") == 0)
        po.max = 1024;
    else if (strcmp(name, "alloc_requests") == 0 || strcmp(name, "pod_labels") == 0 ||
             strcmp(name, "namespace_labels") == 0 || strcmp(name, "node_labels") == 0 ||
             strcmp(name, "pod_phase") == 0)
        po.any_finite = true;
    else
        po.max = 1, po.max_name = "DCGM_FI_DEV_GPU_UTIL", po.named_max = 100;
    return po;
}

static bool known_load(const struct gl_config *c, const char *name)
{
    static const char *const fixed[] = {"fb_free",       "fb_reserved", "pod_labels",
                                        "namespace_labels", "node_labels", "allocation",
                                        "alloc_requests", "pod_phase"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (strcmp(name, fixed[i]) == 0)
            return true;
    if (strcmp(name, c->mem_query) == 0 ||
        (c->mem_limit_query && strcmp(name, c->mem_limit_query) == 0))
        return true;
    for (size_t i = 0; i < c->ncompute_queries; i++)
        if (strcmp(name, c->compute_queries[i]) == 0)
            return true;
    return false;
}

#define NQ 16

/* The parsed matrix of a loaded query, or NULL. */
static struct gl_matrix *matrix_of(struct script *x, struct gl_matrix *m, const char *name)
{
    struct load *l = find_load(x, name);
    return l ? &m[l - x->loads] : NULL;
}

/* Integrates the current state into x->r; false with x->msg on an error. */
static bool evaluate(struct script *x)
{
    if (x->evaluated)
        return x->rc == GL_OK;
    x->evaluated = true;
    x->rc = GL_ERR_USAGE;
    struct gl_error err = {0};
    if (!x->have_cfg || !x->have_grid) {
        snprintf(x->msg, sizeof x->msg, "no %s before the first expect",
                 x->have_cfg ? "grid" : "config");
        return false;
    }
    if (gl_config_load(x->cfg_path, &x->c, &err)) {
        snprintf(x->msg, sizeof x->msg, "config (line %d): %s", x->cfg_line, err.msg);
        x->c = NULL;
        return false;
    }
    const struct gl_config *c = x->c;
    struct gl_matrix m[MAX_LOADS];
    memset(m, 0, sizeof m);
    bool ok = true;
    for (size_t i = 0; ok && i < x->nloads; i++) {
        struct load *l = &x->loads[i];
        if (!known_load(c, l->name)) {
            snprintf(x->msg, sizeof x->msg, "load %s (line %d): no such query in this config",
                     l->name, l->line);
            ok = false;
            break;
        }
        struct gl_buf json;
        gl_buf_init(&json);
        gl_buf_puts(&json, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[");
        if (l->body.len)
            gl_buf_append(&json, l->body.data, l->body.len);
        gl_buf_puts(&json, "]}}");
        struct gl_parse_opts po = opts_for(c, l->name);
        if (gl_matrix_parse_opts(json.data, json.len, x->start, x->step, x->nsteps, l->name, &po,
                                 &m[i], &err)) {
            snprintf(x->msg, sizeof x->msg, "load %s (line %d): %s", l->name, l->line, err.msg);
            ok = false;
        }
        gl_buf_free(&json);
    }
    struct gl_matrix joined = {0};
    bool have_joined = false;
    const struct gl_matrix *alloc = ok ? matrix_of(x, m, "allocation") : NULL;
    if (ok && (matrix_of(x, m, "alloc_requests") || matrix_of(x, m, "pod_phase"))) {
        if (alloc) {
            snprintf(x->msg, sizeof x->msg,
                     "load either allocation (joined) or alloc_requests and pod_phase");
            ok = false;
        } else if (!matrix_of(x, m, "alloc_requests") || !matrix_of(x, m, "pod_phase")) {
            snprintf(x->msg, sizeof x->msg, "alloc_requests and pod_phase go together");
            ok = false;
        } else if (gl_allocation_join(c, matrix_of(x, m, "alloc_requests"), matrix_of(x, m, "pod_phase"), 1024, &joined,
                                      &err)) {
            snprintf(x->msg, sizeof x->msg, "allocation join: %s", err.msg);
            ok = false;
        } else {
            have_joined = true;
            alloc = &joined;
        }
    }
    if (ok && !matrix_of(x, m, c->mem_query)) {
        snprintf(x->msg, sizeof x->msg, "no load %s (the memory source)", c->mem_query);
        ok = false;
    }
    if (ok) {
        const struct gl_matrix *compute[NQ];
        size_t ncompute = 0;
        for (size_t i = 0; i < c->ncompute_queries && ncompute < NQ; i++)
            if (matrix_of(x, m, c->compute_queries[i]))
                compute[ncompute++] = matrix_of(x, m, c->compute_queries[i]);
        struct gl_chunk_input in = {
            .cluster = &c->clusters[0],
            .memory = matrix_of(x, m, c->mem_query),
            .fb_free = matrix_of(x, m, "fb_free"),
            .fb_reserved = matrix_of(x, m, "fb_reserved"),
            .pod_labels = matrix_of(x, m, "pod_labels"),
            .ns_labels = matrix_of(x, m, "namespace_labels"),
            .allocation = alloc,
            .node_labels = matrix_of(x, m, "node_labels"),
            .compute = compute,
            .ncompute = ncompute,
            .mem_limit = c->mem_limit_query ? matrix_of(x, m, c->mem_limit_query) : NULL,
        };
        enum gl_status rc = gl_integrate(c, &in, &x->r, &err);
        x->have_r = true;
        if (rc) {
            snprintf(x->msg, sizeof x->msg, "integrate: %s", err.msg);
            ok = false;
        } else {
            x->rc = GL_OK;
        }
    }
    if (have_joined)
        gl_matrix_free(&joined);
    for (size_t i = 0; i < x->nloads; i++)
        gl_matrix_free(&m[i]);
    return ok;
}

/* Stores the rollup (as collection does: devices, then every entry, the
 * hours marked) in a fresh database and builds the period's statement
 * (invoices and fleet) under the config's policy. */
static bool store_and_state(struct script *x)
{
    if (x->stored)
        return x->st != NULL;
    x->stored = true;
    struct gl_error err = {0};
    const struct gl_rollup *r = &x->r;
    snprintf(x->db_path, sizeof x->db_path, "%s/gl-scripts-%d.db", tmpdir(), (int)getpid());
    unlink(x->db_path);
    int64_t *ids = NULL;
    bool ok = gl_store_open(x->db_path, &x->s, &err) == GL_OK &&
              gl_prices_load_config(x->c, &x->prices, &err) == GL_OK &&
              gl_store_begin(x->s, &err) == GL_OK;
    if (ok)
        ids = gl_xcalloc(r->ndevices + 1, sizeof *ids);
    for (size_t d = 0; ok && d < r->ndevices; d++) {
        const struct gl_chunk_device *cd = &r->devices[d];
        struct gl_device_info info = {
            .cluster = gl_intern_str(r->strings, cd->cluster),
            .uuid = gl_intern_str(r->strings, cd->uuid),
            .gpu_i_id = gl_intern_str(r->strings, cd->gpu_i_id),
            .gpu_i_profile = gl_intern_str(r->strings, cd->profile),
            .model = gl_intern_str(r->strings, cd->model),
            .hostname = gl_intern_str(r->strings, cd->hostname),
            .max_capacity_mib = cd->max_capacity_mib,
            .first_seen = cd->first_seen < 0 ? r->start : cd->first_seen,
            .last_seen = cd->first_seen < 0 ? r->start : cd->last_seen,
        };
        ok = gl_store_device(x->s, &info, &ids[d], &err) == GL_OK;
    }
    for (size_t i = 0; ok && i < r->nslots; i++) {
        const struct gl_rollup_entry *e = &r->slots[i];
        if (!e->used)
            continue;
        const struct gl_chunk_device *cd = &r->devices[e->device];
        ok = gl_store_add_usage(x->s, r->start + (int64_t)e->hour * 3600,
                                gl_intern_str(r->strings, cd->cluster),
                                gl_intern_str(r->strings, e->ns), gl_intern_str(r->strings, e->pod),
                                ids[e->device], gl_intern_str(r->strings, e->team),
                                gl_kind_names[e->kind], e->quantity, e->estimated, e->first_t,
                                e->last_t, &err) == GL_OK;
    }
    for (size_t h = 0; ok && h < r->nhours; h++)
        ok = gl_store_mark_hour(x->s, x->c->clusters[0].name, r->start + (int64_t)h * 3600,
                                r->samples_per_hour[h], 0, &err) == GL_OK;
    ok = ok && gl_store_commit(x->s, &err) == GL_OK;
    free(ids);
    char month[8];
    char ts[32];
    gl_time_format(x->start, ts, sizeof ts);
    snprintf(month, sizeof month, "%.7s", ts);
    struct gl_period p;
    if (ok && !gl_period_parse(month, &p)) {
        snprintf(err.msg, sizeof err.msg, "no period %s", month);
        ok = false;
    }
    if (ok && x->start + (int64_t)x->nsteps * x->step > p.end) {
        snprintf(err.msg, sizeof err.msg, "the grid must stay within one month");
        ok = false;
    }
    ok = ok && gl_statement_build(x->c, x->s, x->prices, &p, GL_ST_INVOICES | GL_ST_FLEET,
                                  &x->st, &err) == GL_OK;
    if (!ok) {
        gl_statement_free(x->st);
        x->st = NULL;
        snprintf(x->stmsg, sizeof x->stmsg, "store/statement: %s", err.msg);
    }
    return ok;
}

/* ---- expectations ---- */

enum filter_key { F_POD, F_NS, F_TEAM, F_DEVICE, F_HOUR, F_MODEL, F_NODE, F_EST, F_N };
static const char *const filter_names[F_N] = {"pod",   "ns",   "team", "device",
                                              "hour",  "model", "node", "estimated"};

struct filters {
    const char *v[F_N]; /* NULL: any */
};

static bool fmatch(const struct filters *f, int k, const char *value)
{
    return !f->v[k] || strcmp(f->v[k], value ? value : "") == 0;
}

static const char *device_key(const struct gl_rollup *r, const struct gl_chunk_device *d,
                              char *buf, size_t n)
{
    const char *gid = gl_intern_str(r->strings, d->gpu_i_id);
    snprintf(buf, n, "%s%s%s", gl_intern_str(r->strings, d->uuid), gid[0] ? "/" : "", gid);
    return buf;
}

static bool rollup_sum(const struct gl_rollup *r, int kind, const struct filters *f,
                       int64_t *out)
{
    int64_t total = 0;
    char dk[600], hour[32], est[4];
    for (size_t i = 0; i < r->nslots; i++) {
        const struct gl_rollup_entry *e = &r->slots[i];
        if (!e->used || e->kind != kind)
            continue;
        const struct gl_chunk_device *d = &r->devices[e->device];
        snprintf(hour, sizeof hour, "%d", e->hour);
        snprintf(est, sizeof est, "%d", e->estimated ? 1 : 0);
        if (!fmatch(f, F_POD, gl_intern_str(r->strings, e->pod)) ||
            !fmatch(f, F_NS, gl_intern_str(r->strings, e->ns)) ||
            !fmatch(f, F_TEAM, gl_intern_str(r->strings, e->team)) ||
            !fmatch(f, F_DEVICE, device_key(r, d, dk, sizeof dk)) ||
            !fmatch(f, F_HOUR, hour) || !fmatch(f, F_MODEL, gl_intern_str(r->strings, d->model)) ||
            !fmatch(f, F_NODE, gl_intern_str(r->strings, d->hostname)) || !fmatch(f, F_EST, est))
            continue;
        if (__builtin_add_overflow(total, e->quantity, &total))
            return false;
    }
    *out = total;
    return true;
}

static int kind_of(const char *name)
{
    for (int k = 0; k < GL_KIND_COUNT; k++)
        if (strcmp(gl_kind_names[k], name) == 0)
            return k;
    return -1;
}

static const char *const fleet_names[GL_F_N] = {"capacity", "used",         "reserved_unused",
                                                 "reserved", "unattributed", "idle",
                                                 "excess"};

/* "expect WHAT [key=value]... == EXPR" (the comment already cut off). */
static void run_expect(struct script *x, int lineno, char *rest, const char *shown)
{
    char *eq = strstr(rest, "==");
    char why[1200] = "";
    struct filters f = {{0}};
    char *what = NULL;
    int64_t want = 0, got = 0;
    bool syntax = false;
    if (!eq) {
        syntax = true;
        snprintf(why, sizeof why, "expect WHAT [key=value]... == FIGURE");
    } else {
        *eq = '\0';
        char *rhs = skip_ws(eq + 2);
        rstrip(rhs);
        char *p = rest;
        what = token(&p);
        char *tok;
        while (!syntax && (tok = token(&p))) {
            char *e = strchr(tok, '=');
            int k = -1;
            if (e) {
                *e = '\0';
                for (int i = 0; i < F_N; i++)
                    if (strcmp(tok, filter_names[i]) == 0)
                        k = i;
            }
            if (k < 0) {
                syntax = true;
                snprintf(why, sizeof why, "unknown filter \"%s\"", tok);
            } else {
                f.v[k] = e + 1;
            }
        }
        if (!what) {
            syntax = true;
            snprintf(why, sizeof why, "expect needs what to sum");
        } else if (!syntax && strcmp(what, "teams") != 0 && !parse_expr(rhs, &want)) {
            syntax = true;
            snprintf(why, sizeof why, "the figure \"%s\" is not an integer expression", rhs);
        }
        for (int k = 0; !syntax && what && strcmp(what, "teams") == 0 && k < F_N; k++)
            if (f.v[k]) {
                syntax = true;
                snprintf(why, sizeof why, "teams takes no filter");
            }
        if (!syntax && strcmp(what, "teams") == 0) {
            /* the invoice set's team ids, in order */
            if (!evaluate(x) || !store_and_state(x)) {
                tap(false, "%s:%d %s", x->file, lineno, shown);
                printf("#   %s\n", x->msg[0] ? x->msg : x->stmsg);
                return;
            }
            struct gl_buf ids;
            gl_buf_init(&ids);
            for (size_t i = 0; x->st->set && i < x->st->set->n; i++)
                gl_buf_printf(&ids, "%s%s", i ? " " : "", x->st->set->invoices[i].team);
            char *norm = gl_xcalloc(strlen(rhs) + 1, 1);
            char *q = rhs, *t2;
            while ((t2 = token(&q)))
                sprintf(norm + strlen(norm), "%s%s", norm[0] ? " " : "", t2);
            bool ok = strcmp(norm, ids.data ? ids.data : "") == 0;
            tap(ok, "%s:%d %s", x->file, lineno, shown);
            if (!ok)
                printf("#   expected teams \"%s\", got \"%s\"\n", norm, ids.data ? ids.data : "");
            free(norm);
            gl_buf_free(&ids);
            return;
        }
    }
    if (syntax) {
        tap(false, "%s:%d %s", x->file, lineno, shown);
        printf("#   syntax: %s\n", why);
        return;
    }
    if (!evaluate(x)) {
        tap(false, "%s:%d %s", x->file, lineno, shown);
        printf("#   %s\n", x->msg);
        return;
    }
    bool counted = false;
    int kind = kind_of(what);
    if (kind >= 0) {
        counted = rollup_sum(&x->r, kind, &f, &got);
    } else if (strncmp(what, "invoice.", 8) == 0 || strncmp(what, "fleet.", 6) == 0) {
        bool inv = what[0] == 'i';
        const char *sub = what + (inv ? 8 : 6);
        enum gl_line_kind lk = GL_LINE_NKINDS;
        int fk = -1;
        if (inv && !gl_line_kind_parse(sub, &lk)) {
            tap(false, "%s:%d %s", x->file, lineno, shown);
            printf("#   syntax: no invoice line kind \"%s\"\n", sub);
            return;
        }
        for (int i = 0; !inv && i < GL_F_N; i++)
            if (strcmp(sub, fleet_names[i]) == 0)
                fk = i;
        if (!inv && fk < 0) {
            tap(false, "%s:%d %s", x->file, lineno, shown);
            printf("#   syntax: no fleet figure \"%s\"\n", sub);
            return;
        }
        for (int k = 0; k < F_N; k++)
            if (f.v[k] && k != F_MODEL && !(inv && k == F_TEAM)) {
                tap(false, "%s:%d %s", x->file, lineno, shown);
                printf("#   syntax: %s filters by %s only\n", what, inv ? "team and model" : "model");
                return;
            }
        if (!store_and_state(x)) {
            tap(false, "%s:%d %s", x->file, lineno, shown);
            printf("#   %s\n", x->stmsg);
            return;
        }
        counted = true;
        got = 0;
        if (inv) {
            for (size_t i = 0; x->st->set && i < x->st->set->n; i++) {
                const struct gl_invoice *v = &x->st->set->invoices[i];
                if (!fmatch(&f, F_TEAM, v->team))
                    continue;
                for (size_t j = 0; j < v->nlines; j++)
                    if (v->lines[j].kind == lk && fmatch(&f, F_MODEL, v->lines[j].model))
                        counted &= !__builtin_add_overflow(got, v->lines[j].mib_s, &got);
            }
        } else {
            for (size_t i = 0; i < x->st->fleet.n; i++)
                if (fmatch(&f, F_MODEL, x->st->fleet.m[i].model))
                    counted &= !__builtin_add_overflow(got, x->st->fleet.m[i].v[fk], &got);
        }
    } else {
        tap(false, "%s:%d %s", x->file, lineno, shown);
        printf("#   syntax: \"%s\" is no rollup kind, invoice.KIND, fleet.FIGURE or teams\n", what);
        return;
    }
    bool ok = counted && got == want;
    tap(ok, "%s:%d %s", x->file, lineno, shown);
    if (!ok)
        printf("#   expected %" PRId64 ", got %" PRId64 "%s\n", want, got,
               counted ? "" : " (overflow)");
}

/* ---- the file ---- */

struct lines {
    char **v;
    size_t n;
};

static bool read_lines(const char *path, struct lines *out)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    out->v = NULL;
    out->n = 0;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        out->v = gl_xrealloc(out->v, (out->n + 1) * sizeof *out->v);
        rstrip(line);
        out->v[out->n++] = gl_strdup(line);
    }
    free(line);
    fclose(fp);
    return true;
}

static bool indented(const char *l)
{
    return (l[0] == ' ' || l[0] == '\t') && *skip_ws((char *)l) != '\0';
}

static bool is_comment(const char *l)
{
    return *skip_ws((char *)l) == '#';
}

static void script_fail(struct script *x, int lineno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void script_fail(struct script *x, int lineno, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tap(false, "%s:%d script error", x->file, lineno);
    printf("#   %s\n", msg);
}

static void run_file(const char *path)
{
    struct lines L;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    struct script x;
    memset(&x, 0, sizeof x);
    x.file = base;
    if (!read_lines(path, &L)) {
        script_fail(&x, 0, "cannot read %s: %s", path, strerror(errno));
        return;
    }
    snprintf(x.cfg_path, sizeof x.cfg_path, "%s/gl-scripts-%d-cfg.json", tmpdir(), (int)getpid());
    bool failed = false;
    for (size_t i = 0; i < L.n && !failed; i++) {
        int lineno = (int)i + 1;
        char *l = L.v[i];
        if (!l[0] || is_comment(l))
            continue;
        if (indented(l)) {
            script_fail(&x, lineno, "an indented line outside a config or load block");
            failed = true;
            break;
        }
        char *p = l;
        char *cmd = token(&p);
        /* the block under a header: indented lines (comments skipped) */
        size_t b0 = i + 1, b1 = b0;
        while (b1 < L.n && (indented(L.v[b1]) || is_comment(L.v[b1])))
            b1++;
        if (strcmp(cmd, "config") == 0) {
            struct gl_buf text;
            gl_buf_init(&text);
            for (size_t k = b0; k < b1; k++)
                if (!is_comment(L.v[k]))
                    gl_buf_printf(&text, "%s\n", L.v[k]);
            FILE *fp = fopen(x.cfg_path, "w");
            if (fp) {
                fputs(text.data ? text.data : "", fp);
                fclose(fp);
            }
            gl_buf_free(&text);
            x.have_cfg = true;
            x.cfg_line = lineno;
            eval_free(&x);
            i = b1 - 1;
        } else if (strcmp(cmd, "grid") == 0) {
            char *s = token(&p), *st = token(&p), *n = token(&p);
            int64_t nsteps;
            if (!s || !st || !n || token(&p) || !gl_time_parse(s, &x.start) ||
                !parse_i64(st, &x.step) || x.step <= 0 || !parse_i64(n, &nsteps) || nsteps <= 0) {
                script_fail(&x, lineno, "grid START(RFC 3339) STEP_SECONDS STEPS");
                failed = true;
                break;
            }
            x.nsteps = (size_t)nsteps;
            x.have_grid = true;
            loads_clear(&x);
            eval_free(&x);
        } else if (strcmp(cmd, "load") == 0) {
            char *name = token(&p);
            if (!name || token(&p) || !x.have_grid) {
                script_fail(&x, lineno, !x.have_grid ? "load before grid" : "load QUERY");
                failed = true;
                break;
            }
            struct load *ld = find_load(&x, name);
            if (ld) { /* a second load of a query replaces it */
                gl_buf_free(&ld->body);
            } else {
                if (x.nloads == MAX_LOADS) {
                    script_fail(&x, lineno, "too many loads");
                    failed = true;
                    break;
                }
                ld = &x.loads[x.nloads++];
                ld->name = gl_strdup(name);
            }
            gl_buf_init(&ld->body);
            ld->nseries = 0;
            ld->line = lineno;
            for (size_t k = b0; k < b1 && !failed; k++) {
                if (is_comment(L.v[k]))
                    continue;
                char why[256];
                if (!add_series(&x, ld, skip_ws(L.v[k]), why, sizeof why)) {
                    script_fail(&x, (int)k + 1, "%s", why);
                    failed = true;
                }
            }
            eval_free(&x);
            i = b1 - 1;
        } else if (strcmp(cmd, "unload") == 0) {
            char *name = token(&p);
            struct load *ld = name ? find_load(&x, name) : NULL;
            if (!ld || token(&p)) {
                script_fail(&x, lineno, "unload QUERY (a loaded query)");
                failed = true;
                break;
            }
            free(ld->name);
            gl_buf_free(&ld->body);
            *ld = x.loads[--x.nloads];
            eval_free(&x);
        } else if (strcmp(cmd, "clear") == 0) {
            loads_clear(&x);
            eval_free(&x);
        } else if (strcmp(cmd, "expect") == 0) {
            /* the hand calculation: a comment on the line, or above the
             * group of expect lines it is in */
            char *hash = strchr(p, '#');
            size_t up = i;
            while (up > 0 && strncmp(L.v[up - 1], "expect", 6) == 0)
                up--;
            bool commented = hash || (up > 0 && is_comment(L.v[up - 1]));
            if (hash)
                *hash = '\0';
            rstrip(p);
            char shown[600];
            snprintf(shown, sizeof shown, "%s", skip_ws(p));
            if (!commented) {
                script_fail(&x, lineno, "an expect line needs its hand calculation in a comment");
                failed = true;
                break;
            }
            x.nexpect++;
            run_expect(&x, lineno, p, shown);
        } else {
            script_fail(&x, lineno, "unknown command \"%s\" (config, grid, load, unload, clear, expect)",
                        cmd);
            failed = true;
        }
    }
    if (!failed && x.nexpect == 0)
        script_fail(&x, 0, "no expect line");
    eval_free(&x);
    loads_clear(&x);
    unlink(x.cfg_path);
    for (size_t i = 0; i < L.n; i++)
        free(L.v[i]);
    free(L.v);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.test files of dir (not its subfolders), in name order. */
static void run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        tap(false, "%s: cannot open: %s", dir, strerror(errno));
        return;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".test") == 0) {
            names = gl_xrealloc(names, (n + 1) * sizeof *names);
            names[n++] = gl_strdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    if (n == 0)
        tap(false, "%s: no *.test file", dir);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        run_file(path);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    gl_log_threshold = GL_LOG_ERROR;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int nargs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        nargs++;
        if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode))
            run_dir(argv[i]);
        else
            run_file(argv[i]);
    }
    if (!nargs)
        run_dir(GL_ATTRIBUTION_DIR);
    printf("1..%d\n", ntests);
    printf("# %d passed, %d failed\n", ntests - nfailed, nfailed);
    return nfailed ? 1 : 0;
}
