/*
 * fuzz_config — libFuzzer target of the config loader (engine/base/config.c).
 *
 * Input: the text of a gpuledger config file (read from a memfd path, as
 * gl_config_load reads a path). A config that loads is then used the way
 * collect and invoice start: every cluster's memory, compute and allocation
 * query is read from the source tree's queries/ (a fixed folder, whatever
 * collection.queries_dir says) with the variables substituted, and inline
 * prices.entries are turned into a price table and looked up. The loaded
 * values are checked against the documented limits.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "price.h"
#include "util.h"

#ifndef GL_FUZZ_QUERIES_DIR
#error "GL_FUZZ_QUERIES_DIR: the folder of the query files (meson sets it)"
#endif

static void check_config(const struct gl_config *c)
{
    FUZZ_CHECK(c->path && c->dir);
    FUZZ_CHECK(c->step >= 1 && c->step <= 3600 && 3600 % c->step == 0);
    FUZZ_CHECK(c->chunk_hours >= 1 && c->chunk_hours * 3600 / c->step <= 11000);
    FUZZ_CHECK(c->nclusters >= 1 && c->clusters);
    for (size_t i = 0; i < c->nclusters; i++) {
        const struct gl_cluster *cl = &c->clusters[i];
        FUZZ_CHECK(cl->name && cl->selector);
        FUZZ_CHECK(gl_config_cluster(c, cl->name) != NULL);
        FUZZ_CHECK(cl->prom.nheaders == 0 || cl->prom.headers);
        for (size_t h = 0; h < cl->prom.nheaders; h++)
            FUZZ_CHECK(cl->prom.headers[h].name && cl->prom.headers[h].value);
    }
    FUZZ_CHECK(c->cluster_label && c->hostname_label && c->queries_dir && c->mem_query);
    FUZZ_CHECK(c->uuid_label && c->gpu_i_id_label && c->namespace_label && c->pod_label);
    FUZZ_CHECK(c->ncompute_queries <= 8);
    for (size_t i = 0; i < c->ncompute_queries; i++)
        FUZZ_CHECK(c->compute_queries[i] != NULL);
    for (size_t i = 0; i < c->nrules; i++) {
        const struct gl_team_rule *r = &c->rules[i];
        FUZZ_CHECK(r->kind == GL_RULE_NAMESPACE_REGEX ? r->regex && r->code : r->label != NULL);
    }
    FUZZ_CHECK(c->default_team);
    for (size_t i = 0; i < c->nteams; i++) {
        FUZZ_CHECK(c->teams[i].id && c->teams[i].name);
        FUZZ_CHECK(gl_config_team(c, c->teams[i].id) != NULL);
    }
    FUZZ_CHECK(c->platform_team && c->platform_team[0] && gl_is_ascii(c->platform_team));
    FUZZ_CHECK(c->run_delay_s >= 0 && c->run_repull_s >= 0 && c->run_start % 3600 == 0);
    FUZZ_CHECK(c->prices_file || c->price_entries || c->nprice_entries == 0);
    FUZZ_CHECK(c->currency && c->minor_digits >= 0);
    FUZZ_CHECK(c->account_id && c->account_name && c->provider && c->service_name);
}

static void read_query(const struct gl_config *c, const struct gl_cluster *cl, const char *name)
{
    char *q = NULL;
    struct gl_error err;
    memset(&err, 0, sizeof err);
    if (gl_config_query(c, cl, name, &q, &err) == GL_OK)
        FUZZ_CHECK(q && q[0]);
    else
        FUZZ_CHECK(!q && err.msg[0]);
    free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gl_config *c = NULL;
    struct gl_error err;
    memset(&err, 0, sizeof err);
    if (gl_config_load(fuzz_input_path(data, size), &c, &err) != GL_OK) {
        gl_log(GL_LOG_INFO, "fuzz: rejected: %s", err.msg);
        FUZZ_CHECK(c == NULL && err.msg[0] && memchr(err.msg, '\0', sizeof err.msg));
        return 0;
    }
    check_config(c);
    /* the query files come from one fixed folder: a fuzzed queries_dir must
     * not make the target read arbitrary files */
    free(c->queries_dir);
    c->queries_dir = gl_strdup(GL_FUZZ_QUERIES_DIR);
    for (size_t i = 0; i < c->nclusters; i++) {
        read_query(c, &c->clusters[i], c->mem_query);
        read_query(c, &c->clusters[i], "allocation");
        for (size_t k = 0; k < c->ncompute_queries; k++)
            read_query(c, &c->clusters[i], c->compute_queries[k]);
    }
    /* inline prices only: prices.file names a path the fuzzer must not open */
    if (!c->prices_file) {
        struct gl_price_table *t = NULL;
        memset(&err, 0, sizeof err);
        if (gl_prices_load_config(c, &t, &err) == GL_OK)
            fuzz_use_prices(t);
        else
            FUZZ_CHECK(t == NULL && err.msg[0]);
        gl_prices_free(t);
    }
    gl_config_free(c);
    return 0;
}
