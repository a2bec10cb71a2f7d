/*
 * upload — delivering the period trees (and backups) to S3-compatible
 * object storage (outputs.s3; README "Delivery, retention and
 * conventions"). Amazon S3, and GCS, MinIO or Ceph through their S3 API.
 *
 * Requests are signed by libcurl (CURLOPT_AWS_SIGV4, service s3) with the
 * credentials auth.c discovers (environment, shared credentials file, IRSA
 * web identity, EKS Pod Identity), never here. Every PUT carries the body's
 * SHA-256 as x-amz-content-sha256 (a signed payload) and as the object's
 * metadata x-amz-meta-sha256; an object whose HEAD shows the same hash and
 * the file's size (Content-Length) is not sent again, so an upload is
 * idempotent (same key, same bytes) and a run after a failed one sends what
 * is still missing or different. Every PUT is checked by a HEAD the same
 * way: a store that answers 200 but keeps other bytes fails the file.
 */
#ifndef GL_UPLOAD_H
#define GL_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "error.h"

struct gl_uploader;

/* A client for s3 (borrowed: it must outlive the result). Fails
 * (GL_ERR_CONFIG) when no credentials can be found. */
enum gl_status gl_uploader_new(const struct gl_s3_cfg *s3, struct gl_uploader **out,
                               struct gl_error *err);
void gl_uploader_free(struct gl_uploader *u);

/* The file at path as object <prefix>/<key> unless the object holds the
 * same bytes already (size and stored hash); *sent says whether it was
 * sent. */
enum gl_status gl_upload_file(struct gl_uploader *u, const char *path, const char *key,
                              bool *sent, struct gl_error *err);

struct gl_upload_stats {
    size_t files, sent, unchanged, failed;
};

/* Every file of every period folder (YYYY-MM) of out_dir as
 * <prefix>/<period>/<path in the folder>. A file that fails does not stop
 * the others: GL_ERR_PARTIAL, err naming the first failure and the count. */
enum gl_status gl_upload_outputs(const struct gl_s3_cfg *s3, const char *out_dir,
                                 struct gl_upload_stats *st, struct gl_error *err);

#endif
