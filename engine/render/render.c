/* render — the table of output formats and the helpers that write them. */
#include "render.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "export.h"
#include "invoice_codec.h"
#include "keepfile.h"
#include "gl_build.h"
#include "report.h"
#include "summary.h"
#include "unitcost.h"
#include "util.h"

/* ---- invoices: the statement's (a closed period's as frozen), or the
 * texts stored at close of a period closed before schema 007 ---- */

static enum gl_status r_invoice_json(const struct gl_statement *st, size_t i, FILE *out,
                                     struct gl_error *err)
{
    (void)err;
    if (st->from_texts) {
        fprintf(out, "%s\n", st->frozen[i].json);
        return GL_OK;
    }
    char *json = gl_invoice_json(st->set, &st->set->invoices[i]);
    fprintf(out, "%s\n", json);
    free(json);
    return GL_OK;
}

static enum gl_status r_invoice_md(const struct gl_statement *st, size_t i, FILE *out,
                                   struct gl_error *err)
{
    (void)err;
    if (st->from_texts)
        fputs(st->frozen[i].md, out);
    else
        gl_invoice_markdown(st->set, &st->set->invoices[i], out);
    return GL_OK;
}

/* ---- FOCUS ---- */

static enum gl_status r_focus_csv(const struct gl_statement *st, size_t i, FILE *out,
                                  struct gl_error *err)
{
    (void)i;
    if (st->from_texts) {
        fputs(st->frozen_focus, out);
        return GL_OK;
    }
    for (size_t k = 0; !st->closed && k < st->set->n; k++)
        if (!st->set->invoices[k].cost_center)
            gl_log(GL_LOG_WARN,
                   "team %s has no cost center: its FOCUS rows carry an empty x_CostCenter "
                   "(period %s; set teams.default_cost_center or the team's catalogue "
                   "cost_center)",
                   st->set->invoices[k].team, st->period.name);
    size_t rows;
    return gl_export_focus(st->set, out, &rows, err);
}

enum gl_status gl_render_focus_rows(const struct gl_statement *st, size_t *rows,
                                    struct gl_error *err)
{
    *rows = 0;
    if (st->from_texts) {
        for (const char *c = st->frozen_focus; *c; c++)
            *rows += *c == '\n';
        if (*rows)
            (*rows)--; /* the header */
        return GL_OK;
    }
    FILE *f = fopen("/dev/null", "w");
    if (!f)
        return gl_error_set(err, GL_ERR_RUNTIME, "/dev/null: %s", strerror(errno));
    enum gl_status rc = gl_export_focus(st->set, f, rows, err);
    fclose(f);
    return rc;
}

static enum gl_status r_focus_metadata(const struct gl_statement *st, size_t i, FILE *out,
                                       struct gl_error *err)
{
    (void)i;
    size_t rows;
    enum gl_status rc = gl_render_focus_rows(st, &rows, err);
    if (rc)
        return rc;
    gl_export_metadata(st->cfg, st->period.name, st->closed,
                       st->from_texts ? st->frozen_focus : NULL, rows,
                       st->set ? st->set->gaps : NULL, st->set ? st->set->ngaps : 0, out);
    return GL_OK;
}

/* ---- fleet summary and anomalies ---- */

static enum gl_status r_summary_json(const struct gl_statement *st, size_t i, FILE *out,
                                     struct gl_error *err)
{
    (void)i;
    return gl_summary_json(st, out, err);
}

static enum gl_status r_summary_md(const struct gl_statement *st, size_t i, FILE *out,
                                   struct gl_error *err)
{
    (void)i;
    return gl_summary_md(st, out, err);
}

enum gl_status gl_render_anomalies_json(const struct gl_statement *st, const char *team,
                                        FILE *out)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "period", st->period.name);
    cJSON *arr = cJSON_AddArrayToObject(root, "anomalies");
    for (size_t k = 0; k < st->anomalies.n; k++)
        if (!team || strcmp(team, st->anomalies.items[k].team) == 0)
            cJSON_AddItemToArray(arr, gl_anomaly_json(&st->anomalies.items[k]));
    char *text = cJSON_Print(root);
    fprintf(out, "%s\n", text);
    free(text);
    cJSON_Delete(root);
    return GL_OK;
}

enum gl_status gl_render_anomalies_md(const struct gl_statement *st, const char *team,
                                      FILE *out)
{
    fprintf(out, "# GPU anomalies %s\n\n", st->period.name);
    fprintf(out, "| Kind | Team | Namespace | Pod | Node | Device | GPU model | First seen | Last "
                 "seen | GB-hours |\n");
    fprintf(out, "|---|---|---|---|---|---|---|---|---|---:|\n");
    size_t shown = 0;
    for (size_t k = 0; k < st->anomalies.n; k++) {
        const struct gl_anomaly *a = &st->anomalies.items[k];
        if (team && strcmp(team, a->team) != 0)
            continue;
        shown++;
        char f[32], l[32], q[80];
        gl_time_format(a->first_seen, f, sizeof f);
        gl_time_format(a->last_seen, l, sizeof l);
        gl_dec_format(gl_gbh_nano(a->mib_s), GL_GBH_DECIMALS, q, sizeof q);
        const char *cells[] = {gl_anomaly_kind_name(a->kind), a->team, a->ns, a->pod, a->node,
                               a->device, a->model};
        for (size_t c = 0; c < sizeof cells / sizeof *cells; c++) {
            fputs(c ? " | " : "| ", out);
            gl_md_cell(out, cells[c]);
        }
        fprintf(out, " | %s | %s | %s |\n", f, l, q);
    }
    if (!shown)
        fprintf(out, "No anomalies.\n");
    return GL_OK;
}

static enum gl_status r_anomalies_json(const struct gl_statement *st, size_t i, FILE *out,
                                       struct gl_error *err)
{
    (void)i;
    (void)err;
    return gl_render_anomalies_json(st, NULL, out);
}

static enum gl_status r_anomalies_md(const struct gl_statement *st, size_t i, FILE *out,
                                     struct gl_error *err)
{
    (void)i;
    (void)err;
    return gl_render_anomalies_md(st, NULL, out);
}

/* ---- the table ---- */

const struct gl_renderer gl_renderers[] = {
    {"invoice-json", "invoice-%p-%t.json", "invoices", GL_SCOPE_INVOICE, GL_ST_INVOICES,
     r_invoice_json},
    {"invoice-md", "invoice-%p-%t.md", "invoices", GL_SCOPE_INVOICE, GL_ST_INVOICES,
     r_invoice_md},
    {"focus-csv", "focus-%p.csv", "", GL_SCOPE_PERIOD, GL_ST_INVOICES, r_focus_csv},
    {"focus-metadata", "focus-%p.csv.metadata.json", "", GL_SCOPE_PERIOD, GL_ST_INVOICES,
     r_focus_metadata},
    {"summary-json", "summary-%p.json", "", GL_SCOPE_PERIOD, GL_ST_FLEET, r_summary_json},
    {"summary-md", "summary-%p.md", "", GL_SCOPE_PERIOD, GL_ST_FLEET, r_summary_md},
    {"anomalies-json", "anomalies-%p.json", "", GL_SCOPE_PERIOD, GL_ST_ANOMALIES,
     r_anomalies_json},
    {"anomalies-md", "anomalies-%p.md", NULL, GL_SCOPE_PERIOD, GL_ST_ANOMALIES, r_anomalies_md},
    {"report-html", "report-%p-%t.html", "reports", GL_SCOPE_TEAM, GL_ST_PAGES,
     gl_report_team_html},
    {"report-md", "report-%p-%t.md", "reports", GL_SCOPE_TEAM, GL_ST_PAGES, gl_report_team_md},
    {"fleet-html", "fleet-%p.html", "reports", GL_SCOPE_PERIOD, GL_ST_PAGES,
     gl_report_fleet_html},
    {"fleet-md", "fleet-%p.md", "reports", GL_SCOPE_PERIOD, GL_ST_PAGES, gl_report_fleet_md},
    /* no folder: `unit-cost` prints them; run writes the CSV when work
     * counters are configured (run.c) */
    {"unit-cost-json", "unit-cost-%p.json", NULL, GL_SCOPE_PERIOD, GL_ST_UNIT_COST,
     gl_unit_cost_json},
    {"unit-cost-csv", "unit-cost-%p.csv", NULL, GL_SCOPE_PERIOD, GL_ST_UNIT_COST,
     gl_unit_cost_csv},
    {"unit-cost-md", "unit-cost-%p.md", NULL, GL_SCOPE_PERIOD, GL_ST_UNIT_COST, gl_unit_cost_md},
};
const size_t gl_nrenderers = sizeof gl_renderers / sizeof *gl_renderers;

const struct gl_renderer *gl_renderer_find(const char *name)
{
    for (size_t i = 0; i < gl_nrenderers; i++)
        if (strcmp(gl_renderers[i].name, name) == 0)
            return &gl_renderers[i];
    return NULL;
}

size_t gl_render_count(const struct gl_statement *st, enum gl_render_scope scope)
{
    switch (scope) {
    case GL_SCOPE_PERIOD: return 1;
    case GL_SCOPE_INVOICE: return st->from_texts ? st->nfrozen : st->set ? st->set->n : 0;
    case GL_SCOPE_TEAM: return st->set ? st->set->n : 0;
    }
    return 0;
}

const char *gl_render_team(const struct gl_statement *st, enum gl_render_scope scope, size_t i)
{
    if (scope == GL_SCOPE_PERIOD)
        return NULL;
    if (scope == GL_SCOPE_INVOICE && st->from_texts)
        return st->frozen[i].team;
    return st->set->invoices[i].team;
}

char *gl_render_file_name(const struct gl_renderer *r, const struct gl_statement *st, size_t i)
{
    const char *team = gl_render_team(st, r->scope, i);
    struct gl_buf b;
    gl_buf_init(&b);
    for (const char *c = r->file; *c; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            gl_buf_puts(&b, st->period.name);
            c++;
        } else if (c[0] == '%' && c[1] == 't' && team) {
            char *safe = gl_safe_name(team); /* bounded: see util.h */
            gl_buf_puts(&b, safe);
            free(safe);
            c++;
        } else {
            gl_buf_append(&b, c, 1);
        }
    }
    return b.data ? b.data : gl_strdup("");
}

/* Output i of r into path: written, or taken from prev (keepfile.h) when
 * keep is given and its file there holds the same bytes. */
static enum gl_status render_to(const struct gl_renderer *r, const struct gl_statement *st,
                                size_t i, const char *path, const char *prev,
                                struct gl_render_keep *keep, struct gl_error *err)
{
    char *data = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&data, &len);
    if (!f)
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: out of memory", path);
    enum gl_status rc = r->fn(st, i, f, err);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!rc && !ok)
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: out of memory", path);
    bool linked = false;
    if (!rc && keep)
        rc = gl_keep_or_write(path, prev, data ? data : "", len, &linked, err);
    else if (!rc)
        rc = gl_write_atomic(path, data ? data : "", len, err);
    if (!rc && keep)
        (*(linked ? &keep->unchanged : &keep->written))++;
    free(data);
    return rc;
}

enum gl_status gl_render_to_file(const struct gl_renderer *r, const struct gl_statement *st,
                                 size_t i, const char *path, struct gl_error *err)
{
    return render_to(r, st, i, path, NULL, NULL, err);
}

/* gl_render_all, each file also looked for under prev_dir (keep given). */
static enum gl_status render_all(const struct gl_renderer *r, const struct gl_statement *st,
                                 const char *team, const char *dir, const char *prev_dir,
                                 struct gl_render_keep *keep, size_t *count,
                                 struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    size_t n = gl_render_count(st, r->scope);
    *count = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const char *t = gl_render_team(st, r->scope, i);
        if (team && t && strcmp(team, t) != 0)
            continue;
        char *name = gl_render_file_name(r, st, i);
        struct gl_buf path, prev;
        gl_buf_init(&path);
        gl_buf_init(&prev);
        if (!gl_buf_printf(&path, "%s/%s", dir, name) ||
            (prev_dir && !gl_buf_printf(&prev, "%s/%s", prev_dir, name)))
            rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
        else if (!(rc = render_to(r, st, i, path.data, prev.data, keep, err)))
            (*count)++;
        gl_buf_free(&path);
        gl_buf_free(&prev);
        free(name);
    }
    return rc;
}

enum gl_status gl_render_all(const struct gl_renderer *r, const struct gl_statement *st,
                             const char *team, const char *dir, size_t *count,
                             struct gl_error *err)
{
    return render_all(r, st, team, dir, NULL, NULL, count, err);
}

enum gl_status gl_render_all_kept(const struct gl_renderer *r, const struct gl_statement *st,
                                  const char *dir, struct gl_render_keep *keep,
                                  struct gl_error *err)
{
    size_t n;
    return render_all(r, st, NULL, dir, keep->prev, keep, &n, err);
}

enum gl_status gl_render_tree(const struct gl_statement *st, const char *dir,
                              struct gl_render_keep *keep, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    for (size_t k = 0; !rc && k < gl_nrenderers; k++) {
        const struct gl_renderer *r = &gl_renderers[k];
        if (!r->folder)
            continue;
        struct gl_buf sub, prev;
        gl_buf_init(&sub);
        gl_buf_init(&prev);
        const char *slash = r->folder[0] ? "/" : "";
        if (!gl_buf_printf(&sub, "%s%s%s", dir, slash, r->folder) ||
            (keep && keep->prev &&
             !gl_buf_printf(&prev, "%s%s%s", keep->prev, slash, r->folder)))
            rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
        else if (mkdir(sub.data, 0777) != 0 && errno != EEXIST)
            rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot create: %s", sub.data,
                              strerror(errno));
        size_t n;
        if (!rc)
            rc = render_all(r, st, NULL, sub.data, prev.data, keep, &n, err);
        gl_buf_free(&sub);
        gl_buf_free(&prev);
    }
    return rc;
}

enum gl_status gl_report_write(const struct gl_statement *st, const char *team, const char *dir,
                               struct gl_error *err)
{
    const struct gl_period *p = &st->period;
    if (team && gl_statement_team(st, team) < 0)
        return gl_error_set(err, GL_ERR_USAGE, "team \"%s\" has no usage in %s", team, p->name);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot create: %s", dir, strerror(errno));
    enum gl_status rc = GL_OK;
    size_t written = 0;
    /* the table's pages, in its order: team pages, then the fleet page */
    for (size_t k = 0; !rc && k < gl_nrenderers; k++) {
        const struct gl_renderer *r = &gl_renderers[k];
        if (!r->folder || strcmp(r->folder, "reports") != 0)
            continue;
        size_t n = 0;
        rc = gl_render_all(r, st, team, dir, &n, err);
        if (r->scope == GL_SCOPE_TEAM && n > written)
            written = n;
    }
    if (!rc)
        gl_log(GL_LOG_INFO, "wrote reports period=%s teams=%zu dir=%s", p->name, written, dir);
    return rc;
}

/* Text written to a FILE, collected in memory (open_memstream). */
struct memfile {
    char *data;
    size_t len;
    FILE *f;
};

static bool mem_open(struct memfile *m)
{
    m->data = NULL;
    m->len = 0;
    m->f = open_memstream(&m->data, &m->len);
    return m->f != NULL;
}

static void mem_close(struct memfile *m)
{
    if (m->f)
        fclose(m->f);
    m->f = NULL;
}

char *gl_render_text(const struct gl_statement *st, const char *name, size_t i,
                         struct gl_error *err)
{
    struct memfile m;
    if (!mem_open(&m))
        return NULL;
    enum gl_status rc = gl_renderer_find(name)->fn(st, i, m.f, err);
    mem_close(&m);
    if (rc) {
        free(m.data);
        return NULL;
    }
    return m.data ? m.data : gl_strdup("");
}
