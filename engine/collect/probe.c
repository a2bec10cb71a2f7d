/* probe — `check`'s exporter schema test (see probe.h). */
#include "probe.h"

#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "preset.h"
#include "queryreg.h"

#define NQ 3                     /* the capacity queries: memory source, fb_free, fb_reserved */
#define PLAUSIBLE_MIN 256.0      /* MiB: below any GPU or MIG instance */
#define PLAUSIBLE_MAX 1048576.0  /* MiB: 1 TiB, beyond any GPU */

struct sdev {
    char *key;                   /* UUID[/GPU_I_ID] */
    char *model;
    bool mig;
    double raw[NQ];              /* max over the device's series, as served */
    bool has[NQ];
};

struct hostcount {
    long configured, lower, upper;
};

static const char *unit_name(enum gl_mem_unit u)
{
    return u == GL_UNIT_BYTES ? "bytes" : "MiB";
}

/* Files the series of one instant-query answer under their devices. */
static void take(const struct gl_query_schema *qs, int q, const struct gl_vector *vec,
                 double scale, struct sdev **devs, size_t *ndev, struct hostcount *hc)
{
    for (size_t i = 0; i < vec->n; i++) {
        const struct gl_sample *metric = &vec->samples[i];
        const char *uuid = gl_sample_label(metric, qs->uuid_label);
        if (!uuid)
            uuid = gl_sample_label(metric, "UUID");
        if (!uuid)
            continue;
        double v = metric->value * scale; /* finite (gl_vector_parse) */
        if (v < 0)
            continue;
        if (gl_sample_label(metric, qs->hostname_label))
            hc->configured++;
        else if (gl_sample_label(metric, "hostname"))
            hc->lower++;
        else if (gl_sample_label(metric, "Hostname"))
            hc->upper++;
        const char *gid = gl_sample_label(metric, qs->gpu_i_id_label);
        if (!gid)
            gid = gl_sample_label(metric, "GPU_I_ID");
        struct gl_buf key;
        gl_buf_init(&key);
        gl_buf_printf(&key, "%s%s%s", uuid, gid ? "/" : "", gid ? gid : "");
        size_t d = 0;
        while (d < *ndev && strcmp((*devs)[d].key, key.data) != 0)
            d++;
        if (d == *ndev) {
            *devs = gl_xrealloc(*devs, (*ndev + 1) * sizeof **devs);
            memset(&(*devs)[d], 0, sizeof **devs);
            (*devs)[d].key = gl_strdup(key.data);
            (*devs)[d].mig = gid != NULL;
            (*ndev)++;
        }
        gl_buf_free(&key);
        struct sdev *sd = &(*devs)[d];
        const char *model = gl_sample_label(metric, "modelName");
        if (model && !sd->model)
            sd->model = gl_strdup(model);
        if (!sd->has[q] || v > sd->raw[q])
            sd->raw[q] = v;
        sd->has[q] = true;
    }
}

/* The device's USED + FREE + RESERVED in MiB when the queries in flip read
 * in the other unit than declared. */
static double capacity_mib(const struct sdev *sd, const enum gl_mem_unit *unit, unsigned flip)
{
    double sum = 0;
    for (int q = 0; q < NQ; q++) {
        if (!sd->has[q])
            continue;
        bool bytes = (unit[q] == GL_UNIT_BYTES) != ((flip >> q & 1u) != 0);
        sum += bytes ? sd->raw[q] / 1048576.0 : sd->raw[q];
    }
    return sum;
}

/* Reads the memory queries at instant at and files their series under
 * their devices (*devs, take); hc[q] counts query q's hostname labels. */
static enum gl_status read_devices(const struct gl_config *c, const struct gl_cluster *cl,
                                   struct gl_prom *prom, int64_t at, const char *const *names,
                                   const enum gl_mq *which, struct sdev **devs, size_t *ndev,
                                   struct hostcount *hc, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    for (int q = 0; q < NQ && !rc; q++) {
        const struct gl_query_schema *qs = &c->mq[which[q]];
        /* the memory source, then the device series read beside it (in the
         * memory source's unit, as the collection takes them) */
        const bool beside = q == 0 && c->mem_device_query;
        const enum gl_mem_unit du = c->mq[GL_MQ_FREE].unit;
        for (int k = 0; k < (beside ? 2 : 1) && !rc; k++) {
            char *text = NULL;
            struct gl_vector vec;
            if ((rc = gl_config_query(c, cl, k ? c->mem_device_query : names[q], &text, err)) ||
                (rc = gl_prom_vector(prom, text, at, &vec, err))) {
                free(text);
                break;
            }
            free(text);
            double scale = !k || du == qs->unit ? 1 : qs->unit == GL_UNIT_BYTES ? 1048576.0
                                                                               : 1 / 1048576.0;
            take(qs, q, &vec, scale, devs, ndev, &hc[q]);
            gl_vector_free(&vec);
        }
    }
    return rc;
}

/* The registry's capacity queries, in its order (the memory source first:
 * the device series beside it are read with it). */
static void capacity_queries(const struct gl_config *c, const char *names[NQ],
                             enum gl_mq which[NQ])
{
    struct gl_qslot list[GL_QR_MAX];
    int nq = gl_qr_list(c, list), ncap = 0;
    for (int i = 0; i < nq; i++)
        if (list[i].row->capacity) {
            if (ncap == NQ)
                abort(); /* the registry has grown past this test's sums */
            names[ncap] = list[i].name;
            which[ncap++] = list[i].row->schema;
        }
    if (ncap != NQ || which[0] != GL_MQ_MEMORY)
        abort();
}

enum gl_status gl_schema_check(const struct gl_config *c, const struct gl_cluster *cl,
                               struct gl_prom *prom, int64_t at, struct gl_buf *notes,
                               struct gl_error *err)
{
    const char *names[NQ];
    enum gl_mq which[NQ];
    capacity_queries(c, names, which);
    enum gl_mem_unit unit[NQ];
    struct sdev *devs = NULL;
    size_t ndev = 0;
    struct hostcount hc[NQ];
    memset(hc, 0, sizeof hc);
    for (int q = 0; q < NQ; q++)
        unit[q] = c->mq[which[q]].unit;
    enum gl_status rc = read_devices(c, cl, prom, at, names, which, &devs, &ndev, hc, err);
    /* units: the fewest queries read in the other unit that make every
     * implausible device a GPU */
    unsigned need = 0;
    const struct sdev *first = NULL;
    double first_cap = 0, first_fixed = 0;
    for (size_t d = 0; !rc && d < ndev; d++) {
        const struct sdev *sd = &devs[d];
        double lo = PLAUSIBLE_MIN, hi = PLAUSIBLE_MAX;
        const struct gl_kv *kv =
            sd->model && !sd->mig ? gl_kv_find(c->model_capacity, c->nmodel_capacity, sd->model)
                                  : NULL;
        if (kv)
            lo = (double)kv->num * 0.5, hi = (double)kv->num * 1.5;
        double cap = capacity_mib(sd, unit, 0);
        if (cap >= lo && cap <= hi)
            continue;
        unsigned best = 0;
        int best_n = NQ + 1;
        for (unsigned flip = 1; flip < 1u << NQ; flip++) {
            double f = capacity_mib(sd, unit, flip);
            int n = __builtin_popcount(flip);
            bool real = true; /* flipping a query the device lacks changes nothing */
            for (int q = 0; q < NQ; q++)
                if ((flip >> q & 1u) && !sd->has[q])
                    real = false;
            if (real && f >= lo && f <= hi && n < best_n)
                best = flip, best_n = n;
        }
        if (!best)
            continue; /* not a unit question (an idle GPU without FB_FREE, ...) */
        gl_buf_printf(notes, "  unit mismatch: device %s (%s): %s = %.0f MiB read as declared "
                      "(", sd->key, sd->model ? sd->model : "model unknown",
                      "USED + FREE + RESERVED", cap);
        for (int q = 0; q < NQ; q++)
            if (sd->has[q])
                gl_buf_printf(notes, "%s%s %s", q ? ", " : "", names[q], unit_name(unit[q]));
        gl_buf_printf(notes, "), not a GPU's (%.0f to %.0f MiB%s); read as ", lo, hi,
                      kv ? ", around the configured model capacity" : "");
        for (int q = 0, k = 0; q < NQ; q++)
            if (best >> q & 1u)
                gl_buf_printf(notes, "%s%s %s", k++ ? ", " : "", names[q],
                              unit_name(unit[q] == GL_UNIT_BYTES ? GL_UNIT_MIB : GL_UNIT_BYTES));
        gl_buf_printf(notes, " it is %.0f MiB\n", capacity_mib(sd, unit, best));
        if (!first)
            first = sd, first_cap = cap, first_fixed = capacity_mib(sd, unit, best);
        need |= best;
    }
    /* the hostname label: a configured name no series carries */
    const char *seen_host = NULL;
    long nconf = 0, nlower = 0, nupper = 0;
    for (int q = 0; q < NQ; q++)
        nconf += hc[q].configured, nlower += hc[q].lower, nupper += hc[q].upper;
    if (!rc && nconf == 0 && (nlower || nupper)) {
        seen_host = nlower >= nupper ? "hostname" : "Hostname";
        gl_buf_printf(notes, "  hostname label: no series of %s, fb_free or fb_reserved carries "
                      "\"%s\" (the configured hostname label); %ld carry \"%s\"\n",
                      c->mem_query, c->mq[GL_MQ_MEMORY].hostname_label,
                      nlower >= nupper ? nlower : nupper, seen_host);
    }
    if (!rc && (need || seen_host)) {
        /* the preset that fits what the series show */
        enum gl_mem_unit fb = unit[1];
        if (need & 2u)
            fb = fb == GL_UNIT_BYTES ? GL_UNIT_MIB : GL_UNIT_BYTES;
        const char *host = seen_host ? seen_host : c->mq[GL_MQ_FREE].hostname_label;
        const struct gl_preset *fit = gl_preset_fit(fb, host);
        struct gl_buf fix;
        gl_buf_init(&fix);
        if (fit)
            gl_buf_printf(&fix, "use exporter.preset \"%s\" (dcgm-exporter %s)", fit->name,
                          fit->versions);
        else
            gl_buf_printf(&fix, "no preset fits (FB fields in %s, label \"%s\")",
                          unit_name(fb), host);
        for (int q = 0; q < NQ; q++)
            if (need >> q & 1u)
                gl_buf_printf(&fix, "%s exporter.queries.%s.unit \"%s\"", fit ? "; or set" : ";",
                              names[q],
                              unit_name(unit[q] == GL_UNIT_BYTES ? GL_UNIT_MIB : GL_UNIT_BYTES));
        if (seen_host)
            gl_buf_printf(&fix, "%s collection.hostname_label \"%s\"",
                          fit || need ? "; or set" : ";", seen_host);
        gl_buf_printf(notes, "  fix: %s\n", fix.data);
        if (first)
            rc = gl_error_set(err, GL_ERR_CONFIG,
                              "cluster %s: unit mismatch: device %s reads %.0f MiB (USED + FREE "
                              "+ RESERVED in the declared units), %.0f MiB in the other unit: "
                              "%s",
                              cl->name, first->key, first_cap, first_fixed, fix.data);
        else
            rc = gl_error_set(err, GL_ERR_CONFIG,
                              "cluster %s: the hostname label \"%s\" is on no dcgm-exporter "
                              "series, \"%s\" is: %s",
                              cl->name, c->mq[GL_MQ_MEMORY].hostname_label, seen_host, fix.data);
        gl_buf_free(&fix);
    }
    for (size_t d = 0; d < ndev; d++) {
        free(devs[d].key);
        free(devs[d].model);
    }
    free(devs);
    return rc;
}
