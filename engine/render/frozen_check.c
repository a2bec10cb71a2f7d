/* frozen_check — a month closed before digests existed, checked against
 * the texts stored at close by rendering its figures (frozen_check.h). */
#include "frozen_check.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "util.h"

/* The first line where a and b differ (1-based). */
static size_t first_diff_line(const char *a, const char *b)
{
    size_t line = 1;
    for (; *a && *a == *b; a++, b++)
        line += *a == '\n';
    return line;
}

/* Renders output i of renderer name and compares it with the stored text
 * want (plus the line break a JSON file gets). */
static enum gl_status verify_one(const struct gl_statement *st, const char *name, size_t i,
                                 const char *want, bool add_newline, const char *team,
                                 struct gl_error *err)
{
    char *got = gl_render_text(st, name, i, err);
    if (!got)
        return err->msg[0] ? err->code : gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    size_t n = strlen(want);
    bool same = strncmp(got, want, n) == 0 &&
                strcmp(got + n, add_newline ? "\n" : "") == 0;
    size_t line = same ? 0 : first_diff_line(got, want);
    free(got);
    if (same)
        return GL_OK;
    return gl_error_set(err, GL_ERR_STATE,
                        "period %s is closed and its %s%s%.300s%s rendered from the frozen "
                        "figures differs from the text stored at close (line %zu): the database "
                        "was altered after the close; nothing was printed (restore it from a "
                        "backup)",
                        st->period.name, name, team ? " of team \"" : "", team ? team : "",
                        team ? "\"" : "", line);
}

enum gl_status gl_frozen_verify(const struct gl_statement *st,
                                const struct gl_frozen_invoice *texts, size_t ntexts,
                                const char *focus_csv, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    for (size_t k = 0; !rc && k < ntexts; k++) {
        const struct gl_frozen_invoice *t = &texts[k];
        long i = gl_statement_team(st, t->team);
        if (i < 0) {
            rc = gl_error_set(err, GL_ERR_STATE,
                              "period %s is closed and team \"%.300s\" has an invoice text "
                              "stored at close but no frozen figures: the database was altered "
                              "after the close (restore it from a backup)",
                              st->period.name, t->team);
            break;
        }
        if (t->json[0])
            rc = verify_one(st, "invoice-json", (size_t)i, t->json, true, t->team, err);
        if (!rc && t->md[0])
            rc = verify_one(st, "invoice-md", (size_t)i, t->md, false, t->team, err);
    }
    if (!rc && focus_csv && focus_csv[0])
        rc = verify_one(st, "focus-csv", 0, focus_csv, false, NULL, err);
    return rc;
}
