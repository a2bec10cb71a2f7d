/* teams — first-match team mapping with PCRE2 capture substitution. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "teams.h"

#include <pcre2.h>
#include <stdio.h>
#include <string.h>

/* Applies a namespace_regex rule; true when it matched and gave a name. */
static bool regex_team(const struct gl_team_rule *r, const char *ns, char *out, size_t n)
{
    pcre2_code *code = r->code;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    if (!md)
        return false;
    bool ok = false;
    int rc = pcre2_match(code, (PCRE2_SPTR)ns, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
    if (rc >= 0) {
        PCRE2_SIZE outlen = n;
        rc = pcre2_substitute(code, (PCRE2_SPTR)ns, PCRE2_ZERO_TERMINATED, 0,
                              PCRE2_SUBSTITUTE_MATCHED | PCRE2_SUBSTITUTE_REPLACEMENT_ONLY |
                                  PCRE2_SUBSTITUTE_UNSET_EMPTY,
                              md, NULL, (PCRE2_SPTR)r->team, PCRE2_ZERO_TERMINATED,
                              (PCRE2_UCHAR *)out, &outlen);
        ok = rc >= 0 && outlen > 0;
    }
    pcre2_match_data_free(md);
    return ok;
}

const char *gl_team_resolve(const struct gl_config *c, const struct gl_series *pod_labels,
                            const struct gl_series *ns_labels, const char *ns, char *out,
                            size_t n)
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
            if (regex_team(r, ns, out, n))
                return out;
            break;
        }
        if (v) {
            snprintf(out, n, "%s", v);
            return out;
        }
    }
    snprintf(out, n, "%s", c->default_team);
    return out;
}
