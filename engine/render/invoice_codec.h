/*
 * invoice_codec — an invoice set as text: each invoice's JSON object and
 * Markdown page, an anomaly's JSON object, the correction lines of a set.
 *
 * Reads: an invoice set as bill/invoice.c computed it or the ledger froze
 * it (invoice_model.h). Writes text only; the figures are never recomputed
 * here, only formatted (exact decimals, gl_dec_format). The renderer table
 * (render.c) and the commands print through these.
 */
#ifndef GL_INVOICE_CODEC_H
#define GL_INVOICE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "invoice.h"

/* The JSON object of one invoice, and of one anomaly (cJSON *, as void *
 * to keep cJSON out of the header; the caller deletes it). */
void *gl_invoice_object(const struct gl_invoice_set *set, const struct gl_invoice *inv);
void *gl_anomaly_json(const struct gl_anomaly *a);

/* JSON text of one invoice (cJSON_Print; free()). */
char *gl_invoice_json(const struct gl_invoice_set *set, const struct gl_invoice *inv);

/* The Markdown table of an invoice's lines (header included), or of its
 * correction lines only; returns how many lines it printed. */
size_t gl_invoice_md_lines(const struct gl_invoice_set *set, const struct gl_invoice *inv,
                           bool corrections_only, FILE *out);
/* Markdown of one invoice. */
void gl_invoice_markdown(const struct gl_invoice_set *set, const struct gl_invoice *inv,
                         FILE *out);

/* The correction lines of set per team, each team's under a heading, in
 * the invoice's Markdown line format (gl_invoice_md_lines); *nlines
 * receives how many. */
void gl_invoice_md_corrections(const struct gl_invoice_set *set, FILE *out, size_t *nlines);

#endif
