/* teams — first-match team mapping with PCRE2 capture substitution. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "teams.h"

#include <pcre2.h>
#include <stdbool.h>
#include <string.h>

/* Applies a namespace_regex rule into out (replacing its content); true
 * when it matched and gave a non-empty name. The substitution is sized by
 * PCRE2 (PCRE2_SUBSTITUTE_OVERFLOW_LENGTH), so a long capture is never cut. */
static bool regex_team(const struct gl_team_rule *r, const char *ns, struct gl_buf *out)
{
    pcre2_code *code = r->code;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    if (!md)
        return false;
    bool ok = false;
    int rc = pcre2_match(code, (PCRE2_SPTR)ns, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
    size_t want = 256;
    for (int attempt = 0; rc >= 0 && attempt < 2; attempt++) {
        gl_buf_reset(out);
        if (!gl_buf_reserve(out, want))
            break;
        PCRE2_SIZE outlen = out->cap;
        rc = pcre2_substitute(code, (PCRE2_SPTR)ns, PCRE2_ZERO_TERMINATED, 0,
                              PCRE2_SUBSTITUTE_MATCHED | PCRE2_SUBSTITUTE_REPLACEMENT_ONLY |
                                  PCRE2_SUBSTITUTE_UNSET_EMPTY | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH,
                              md, NULL, (PCRE2_SPTR)r->team, PCRE2_ZERO_TERMINATED,
                              (PCRE2_UCHAR *)out->data, &outlen);
        if (rc >= 0) {
            out->len = outlen;
            ok = outlen > 0;
            break;
        }
        if (rc != PCRE2_ERROR_NOMEMORY)
            break;
        want = outlen; /* the length needed, terminator included */
        rc = 0;
    }
    pcre2_match_data_free(md);
    return ok;
}

const char *gl_team_resolve(const struct gl_config *c, const struct gl_series *pod_labels,
                            const struct gl_series *ns_labels, const char *ns,
                            struct gl_buf *out)
{
    for (size_t i = 0; i < c->nrules; i++) {
        const struct gl_team_rule *r = &c->rules[i];
        const char *v = NULL;
        switch (r->kind) {
        case GL_RULE_POD_LABEL:
            v = pod_labels ? gl_series_label(pod_labels, r->label) : NULL;
            break;
        case GL_RULE_NAMESPACE_LABEL:
            v = ns_labels ? gl_series_label(ns_labels, r->label) : NULL;
            break;
        case GL_RULE_NAMESPACE_REGEX:
            if (regex_team(r, ns, out))
                return out->data;
            break;
        }
        if (v) {
            gl_buf_reset(out);
            return gl_buf_puts(out, v) ? out->data : NULL;
        }
    }
    gl_buf_reset(out);
    return gl_buf_puts(out, c->default_team) ? out->data : NULL;
}

