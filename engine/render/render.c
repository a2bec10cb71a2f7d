/* render — the table of output formats and the helpers that write them. */
#include "render.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "export.h"
#include "invoice_codec.h"
#include "advise.h"
#include "keepfile.h"
#include "report.h"
#include "summary.h"
#include "unitcost.h"
#include "util.h"

/* ---- invoices: the statement's (a closed period's as frozen), or the
 * texts stored at close of a period closed before schema 007 ---- */

static enum gl_status r_invoice_json(const struct gl_renderer *r, const struct gl_statement *st,
                                     size_t i, FILE *out, struct gl_error *err)
{
    (void)r;
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

static enum gl_status r_invoice_md(const struct gl_renderer *r, const struct gl_statement *st,
                                   size_t i, FILE *out, struct gl_error *err)
{
    (void)r;
    (void)err;
    if (st->from_texts)
        fputs(st->frozen[i].md, out);
    else
        gl_invoice_markdown(st->set, &st->set->invoices[i], out);
    return GL_OK;
}

/* Prints {"period": st's, key: items} (items taken over). */
static void print_period_json(const struct gl_statement *st, const char *key, cJSON *items,
                              FILE *out)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "period", st->period.name);
    cJSON_AddItemToObject(root, key, items);
    char *text = cJSON_Print(root);
    fprintf(out, "%s\n", text);
    free(text);
    cJSON_Delete(root);
}

/* Whether invoice i of st is shown with a team filter (NULL: all). */
static bool invoice_shown(const struct gl_statement *st, size_t i, const char *team)
{
    return !team || strcmp(gl_render_team(st, GL_SCOPE_INVOICE, i), team) == 0;
}

/* The invoices as one JSON document, {"period", "invoices": [...]}: each
 * invoice's object from the figures, or of a period closed before schema
 * 007 the text stored at close, read back (a stored text that is no JSON
 * object is an error, never left out). */
static enum gl_status p_invoices_json(const struct gl_renderer *r, const struct gl_statement *st,
                                      const char *team, FILE *out, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    cJSON *all = cJSON_CreateArray();
    for (size_t i = 0; !rc && i < gl_render_count(st, r->scope); i++) {
        if (!invoice_shown(st, i, team))
            continue;
        cJSON *o = st->from_texts ? cJSON_Parse(st->frozen[i].json)
                                  : gl_invoice_object(st->set, &st->set->invoices[i]);
        if (!cJSON_IsObject(o))
            rc = gl_error_set(err, GL_ERR_STATE,
                              "period %s: the invoice of team \"%.300s\" stored at close is "
                              "not a JSON object",
                              st->period.name, gl_render_team(st, r->scope, i));
        if (!cJSON_AddItemToArray(all, o))
            cJSON_Delete(o);
    }
    if (rc) {
        cJSON_Delete(all);
        return rc;
    }
    print_period_json(st, "invoices", all, out);
    return GL_OK;
}

/* The invoices one after the other, a rule between two. */
static enum gl_status p_invoices_md(const struct gl_renderer *r, const struct gl_statement *st,
                                    const char *team, FILE *out, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    size_t shown = 0;
    for (size_t i = 0; !rc && i < gl_render_count(st, r->scope); i++) {
        if (!invoice_shown(st, i, team))
            continue;
        if (shown++)
            fputs("\n---\n\n", out);
        rc = r->fn(r, st, i, out, err);
    }
    return rc;
}

/* ---- FOCUS: one row per version and output ---- */

int gl_render_focus_version(const struct gl_statement *st)
{
    if (st->from_texts)
        return gl_focus_version_of_csv(st->frozen_focus ? st->frozen_focus : "");
    return st->cfg->focus_version;
}

/* A period closed before schema 007 has its CSV in one version only. */
static enum gl_status texts_in(const struct gl_renderer *r, const struct gl_statement *st,
                               struct gl_error *err)
{
    int v = gl_render_focus_version(st);
    if (v == r->focus)
        return GL_OK;
    return gl_error_set(err, GL_ERR_STATE,
                        "period %s was closed by an engine that stored only its FOCUS %d.%d "
                        "text, no figures: FOCUS %s cannot be rendered for it",
                        st->period.name, v / 10, v % 10, r->format);
}

static enum gl_status r_focus_csv(const struct gl_renderer *r, const struct gl_statement *st,
                                  size_t i, FILE *out, struct gl_error *err)
{
    (void)i;
    if (st->from_texts) {
        enum gl_status rc = texts_in(r, st, err);
        if (!rc)
            fputs(st->frozen_focus, out);
        return rc;
    }
    for (size_t k = 0; !st->closed && k < st->set->n; k++)
        if (!st->set->invoices[k].cost_center)
            gl_log(GL_LOG_WARN,
                   "team %s has no cost center: its FOCUS rows carry an empty x_CostCenter "
                   "(period %s; set teams.default_cost_center or the team's catalogue "
                   "cost_center)",
                   st->set->invoices[k].team, st->period.name);
    size_t rows;
    return gl_export_focus(st->set, r->focus, out, &rows, err);
}

enum gl_status gl_render_focus_rows(const struct gl_statement *st, int version, size_t *rows,
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
    enum gl_status rc = gl_export_focus(st->set, version, f, rows, err);
    fclose(f);
    return rc;
}

static enum gl_status r_focus_metadata(const struct gl_renderer *r,
                                       const struct gl_statement *st, size_t i, FILE *out,
                                       struct gl_error *err)
{
    (void)i;
    size_t rows;
    enum gl_status rc = st->from_texts ? texts_in(r, st, err) : GL_OK;
    if (!rc)
        rc = gl_render_focus_rows(st, r->focus, &rows, err);
    if (!rc)
        rc = gl_export_metadata(r->focus, st->cfg, st->period.name, st->closed,
                                st->from_texts ? st->frozen_focus : NULL, rows,
                                st->set ? st->set->gaps : NULL, st->set ? st->set->ngaps : 0,
                                out, err);
    return rc;
}

/* ---- fleet summary, anomalies, advice ---- */

static enum gl_status r_summary_json(const struct gl_renderer *r, const struct gl_statement *st,
                                     size_t i, FILE *out, struct gl_error *err)
{
    (void)r;
    (void)i;
    return gl_summary_json(st, out, err);
}

static enum gl_status r_summary_md(const struct gl_renderer *r, const struct gl_statement *st,
                                   size_t i, FILE *out, struct gl_error *err)
{
    (void)r;
    (void)i;
    return gl_summary_md(st, out, err);
}

static enum gl_status p_anomalies_json(const struct gl_renderer *r, const struct gl_statement *st,
                                       const char *team, FILE *out, struct gl_error *err)
{
    (void)r;
    (void)err;
    cJSON *arr = cJSON_CreateArray();
    for (size_t k = 0; k < st->anomalies.n; k++)
        if (!team || strcmp(team, st->anomalies.items[k].team) == 0)
            cJSON_AddItemToArray(arr, gl_anomaly_json(&st->anomalies.items[k]));
    print_period_json(st, "anomalies", arr, out);
    return GL_OK;
}

static enum gl_status p_anomalies_md(const struct gl_renderer *r, const struct gl_statement *st,
                                     const char *team, FILE *out, struct gl_error *err)
{
    (void)r;
    (void)err;
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

/* Every team's anomalies: the file a period's tree holds. */
static enum gl_status r_anomalies(const struct gl_renderer *r, const struct gl_statement *st,
                                  size_t i, FILE *out, struct gl_error *err)
{
    (void)i;
    return r->print(r, st, NULL, out, err);
}

static enum gl_status r_advise_json(const struct gl_renderer *r, const struct gl_statement *st,
                                    size_t i, FILE *out, struct gl_error *err)
{
    (void)r;
    (void)i;
    (void)err;
    gl_advise_json(&st->advice, out);
    return GL_OK;
}

static enum gl_status r_advise_md(const struct gl_renderer *r, const struct gl_statement *st,
                                  size_t i, FILE *out, struct gl_error *err)
{
    (void)r;
    (void)i;
    (void)err;
    gl_advise_md(&st->advice, NULL, out);
    return GL_OK;
}

/* ---- the renderers of other files, which read the statement only ---- */

#define STATEMENT_ONLY(name, fn)                                                               \
    static enum gl_status name(const struct gl_renderer *r, const struct gl_statement *st,     \
                               size_t i, FILE *out, struct gl_error *err)                      \
    {                                                                                          \
        (void)r;                                                                               \
        return fn(st, i, out, err);                                                            \
    }
STATEMENT_ONLY(r_report_team_html, gl_report_team_html)
STATEMENT_ONLY(r_report_team_md, gl_report_team_md)
STATEMENT_ONLY(r_report_fleet_html, gl_report_fleet_html)
STATEMENT_ONLY(r_report_fleet_md, gl_report_fleet_md)
STATEMENT_ONLY(r_unit_cost_json, gl_unit_cost_json)
STATEMENT_ONLY(r_unit_cost_csv, gl_unit_cost_csv)
STATEMENT_ONLY(r_unit_cost_md, gl_unit_cost_md)
#undef STATEMENT_ONLY

/* ---- the table ---- */

#define INV GL_SCOPE_INVOICE
#define TEAM GL_SCOPE_TEAM
#define PERIOD GL_SCOPE_PERIOD

const struct gl_renderer gl_renderers[] = {
    /* name, command, --format, FOCUS version, file, folder, scope, parts,
     * function, the command's stdout */
    {"invoice-json", "invoice", "json", 0, "invoice-%p-%t.json", "invoices", INV, GL_ST_INVOICES,
     r_invoice_json, p_invoices_json},
    {"invoice-md", "invoice", "md", 0, "invoice-%p-%t.md", "invoices", INV, GL_ST_INVOICES,
     r_invoice_md, p_invoices_md},
    /* the tree holds the version its statement is in */
    {"focus-csv", "export", "1.2", 12, "focus-%p.csv", "", PERIOD, GL_ST_INVOICES, r_focus_csv,
     NULL},
    {"focus-csv", "export", "1.3", 13, "focus-%p.csv", "", PERIOD, GL_ST_INVOICES, r_focus_csv,
     NULL},
    {"focus-metadata", NULL, "1.2", 12, "focus-%p.csv.metadata.json", "", PERIOD,
     GL_ST_INVOICES, r_focus_metadata, NULL},
    {"focus-metadata", NULL, "1.3", 13, "focus-%p.csv.metadata.json", "", PERIOD,
     GL_ST_INVOICES, r_focus_metadata, NULL},
    {"summary-json", "summary", "json", 0, "summary-%p.json", "", PERIOD, GL_ST_FLEET,
     r_summary_json, NULL},
    {"summary-md", "summary", "md", 0, "summary-%p.md", "", PERIOD, GL_ST_FLEET, r_summary_md,
     NULL},
    {"anomalies-json", "anomalies", "json", 0, "anomalies-%p.json", "", PERIOD, GL_ST_ANOMALIES,
     r_anomalies, p_anomalies_json},
    {"anomalies-md", "anomalies", "md", 0, "anomalies-%p.md", NULL, PERIOD, GL_ST_ANOMALIES,
     r_anomalies, p_anomalies_md},
    {"report-html", NULL, NULL, 0, "report-%p-%t.html", "reports", TEAM, GL_ST_PAGES,
     r_report_team_html, NULL},
    {"report-md", NULL, NULL, 0, "report-%p-%t.md", "reports", TEAM, GL_ST_PAGES,
     r_report_team_md, NULL},
    {"fleet-html", NULL, NULL, 0, "fleet-%p.html", "reports", PERIOD, GL_ST_PAGES,
     r_report_fleet_html, NULL},
    {"fleet-md", NULL, NULL, 0, "fleet-%p.md", "reports", PERIOD, GL_ST_PAGES,
     r_report_fleet_md, NULL},
    /* no folder: `unit-cost` prints them; run writes the CSV when work
     * counters are configured (run.c) */
    {"unit-cost-json", "unit-cost", "json", 0, "unit-cost-%p.json", NULL, PERIOD,
     GL_ST_UNIT_COST | GL_ST_INVOICES, r_unit_cost_json, NULL},
    {"unit-cost-csv", "unit-cost", "csv", 0, "unit-cost-%p.csv", NULL, PERIOD,
     GL_ST_UNIT_COST | GL_ST_INVOICES, r_unit_cost_csv, NULL},
    {"unit-cost-md", "unit-cost", "md", 0, "unit-cost-%p.md", NULL, PERIOD,
     GL_ST_UNIT_COST | GL_ST_INVOICES, r_unit_cost_md, NULL},
    /* no folder: `advise` prints them (the pages show open months' advice) */
    {"advise-json", "advise", "json", 0, "advise-%p.json", NULL, PERIOD, GL_ST_ADVICE,
     r_advise_json, NULL},
    {"advise-md", "advise", "md", 0, "advise-%p.md", NULL, PERIOD, GL_ST_ADVICE, r_advise_md,
     NULL},
};
const size_t gl_nrenderers = sizeof gl_renderers / sizeof *gl_renderers;

#undef INV
#undef TEAM
#undef PERIOD

const struct gl_renderer *gl_renderer_find(const char *name)
{
    for (size_t i = 0; i < gl_nrenderers; i++)
        if (strcmp(gl_renderers[i].name, name) == 0)
            return &gl_renderers[i];
    return NULL;
}

const struct gl_renderer *gl_renderer_focus(const char *name, int version)
{
    for (size_t i = 0; i < gl_nrenderers; i++)
        if (gl_renderers[i].focus == version && strcmp(gl_renderers[i].name, name) == 0)
            return &gl_renderers[i];
    return NULL;
}

const struct gl_renderer *gl_renderer_of(const char *command, const char *format)
{
    for (size_t i = 0; i < gl_nrenderers; i++) {
        const struct gl_renderer *r = &gl_renderers[i];
        if (r->command && strcmp(r->command, command) == 0 && strcmp(r->format, format) == 0)
            return r;
    }
    return NULL;
}

bool gl_renderer_formats(const char *command, struct gl_buf *out)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < gl_nrenderers; i++)
        n += gl_renderers[i].command && strcmp(gl_renderers[i].command, command) == 0;
    bool ok = true;
    for (size_t i = 0; ok && i < gl_nrenderers; i++) {
        const struct gl_renderer *r = &gl_renderers[i];
        if (!r->command || strcmp(r->command, command) != 0)
            continue;
        k++;
        ok = gl_buf_printf(out, "%s%s", k == 1 ? "" : k == n ? " or " : ", ", r->format);
    }
    return ok;
}

enum gl_status gl_render_output(const struct gl_renderer *r, const struct gl_statement *st,
                                size_t i, FILE *out, struct gl_error *err)
{
    return r->fn(r, st, i, out, err);
}

enum gl_status gl_render_print(const struct gl_renderer *r, const struct gl_statement *st,
                               const char *team, FILE *out, struct gl_error *err)
{
    return r->print ? r->print(r, st, team, out, err) : r->fn(r, st, 0, out, err);
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
    enum gl_status rc = r->fn(r, st, i, f, err);
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
        if (!r->folder || (r->focus && r->focus != gl_render_focus_version(st)))
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
    const struct gl_renderer *r = gl_renderer_find(name);
    if (r && r->focus)
        r = gl_renderer_focus(name, gl_render_focus_version(st));
    if (!r) {
        mem_close(&m);
        free(m.data);
        gl_error_set(err, GL_ERR_RUNTIME, "no renderer %s", name);
        return NULL;
    }
    enum gl_status rc = r->fn(r, st, i, m.f, err);
    mem_close(&m);
    if (rc) {
        free(m.data);
        return NULL;
    }
    return m.data ? m.data : gl_strdup("");
}
