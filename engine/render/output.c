/* output — invoices and FOCUS files, live or frozen, through their renderer
 * rows; whole trees swapped in. */
#define _GNU_SOURCE /* renameat2 and RENAME_EXCHANGE (glibc 2.28, Linux 3.15) */
#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "render.h"
#include "util.h"

enum gl_status gl_output_invoices(const struct gl_statement *st, const struct gl_renderer *r,
                                  const char *team, const char *dir, size_t *count,
                                  struct gl_error *err)
{
    *count = 0;
    if (team) {
        bool found = false;
        for (size_t i = 0; !found && i < gl_render_count(st, r->scope); i++)
            found = strcmp(gl_render_team(st, r->scope, i), team) == 0;
        if (!found)
            return gl_error_set(err, GL_ERR_USAGE, "team \"%s\" has no invoice in %s", team,
                                st->period.name);
    }
    if (!dir)
        return gl_render_print(r, st, team, stdout, err);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot create: %s", dir, strerror(errno));
    return gl_render_all(r, st, team, dir, count, err);
}

enum gl_status gl_output_focus(const struct gl_statement *st, const struct gl_renderer *csv,
                               const char *path, size_t *rows, struct gl_error *err)
{
    /* counted first: a CSV that cannot be written fails before a byte of it */
    enum gl_status rc = gl_render_focus_rows(st, csv->focus, rows, err);
    if (rc)
        return rc;
    if (!path) {
        rc = gl_render_output(csv, st, 0, stdout, err);
        if (!rc && fflush(stdout) != 0)
            rc = gl_error_set(err, GL_ERR_RUNTIME, "stdout: write failed");
        return rc;
    }
    rc = gl_render_to_file(csv, st, 0, path, err);
    struct gl_buf meta;
    gl_buf_init(&meta);
    if (!rc && !gl_buf_printf(&meta, "%s.metadata.json", path))
        rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    if (!rc)
        rc = gl_render_to_file(gl_renderer_focus("focus-metadata", csv->focus), st, 0, meta.data,
                               err);
    gl_buf_free(&meta);
    return rc;
}

/* ---- whole trees ---- */

static char *join2(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = gl_xcalloc(n, 1);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

enum gl_status gl_output_remove_entries(const char *dir, bool (*match)(const char *name),
                                        const char *verb, struct gl_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: %s: %s", dir, verb, strerror(errno));
    enum gl_status rc = GL_OK;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            (match && !match(e->d_name)))
            continue;
        char *sub = join2(dir, e->d_name);
        if (!(rc = gl_output_tree_remove(sub, err)) && match)
            gl_log(GL_LOG_INFO, "removed the temporary folder of an interrupted run path=%s",
                   sub);
        free(sub);
    }
    closedir(d);
    return rc;
}

enum gl_status gl_output_tree_remove(const char *path, struct gl_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? GL_OK
                               : gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot remove: %s", path,
                                              strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        enum gl_status rc = gl_output_remove_entries(path, NULL, "cannot remove", err);
        if (rc)
            return rc;
        if (rmdir(path) != 0)
            return gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot remove: %s", path,
                                strerror(errno));
        return GL_OK;
    }
    if (unlink(path) != 0)
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot remove: %s", path, strerror(errno));
    return GL_OK;
}

/* A folder's entries (renames into it) on disk. */
static enum gl_status sync_dir(const char *dir, struct gl_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    enum gl_status rc = GL_OK;
    if (fd < 0 || fsync(fd) != 0)
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot sync: %s", dir, strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

struct tree_entry {
    char *rel;
    long long size;
};

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct tree_entry *)a)->rel, ((const struct tree_entry *)b)->rel);
}

struct tree_list {
    struct tree_entry *e;
    size_t n, cap;
};

/* Regular files under root/rel (rel "" = root), fsyncing each directory so
 * that the files' renames inside it are on disk before the tree is swapped. */
static enum gl_status tree_walk(const char *root, const char *rel, struct tree_list *l,
                                struct gl_error *err)
{
    char *dir = *rel ? join2(root, rel) : gl_strdup(root);
    DIR *d = opendir(dir);
    enum gl_status rc = GL_OK;
    if (!d) {
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot list: %s", dir, strerror(errno));
        free(dir);
        return rc;
    }
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *r = *rel ? join2(rel, e->d_name) : gl_strdup(e->d_name);
        char *full = join2(root, r);
        struct stat st;
        if (lstat(full, &st) != 0) {
            rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: %s", full, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            rc = tree_walk(root, r, l, err);
        } else if (strchr(r, '\t') || strchr(r, '\n')) {
            /* gl_safe_name never makes one; the list's format could not hold it */
            rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: a tab or line break in a file name",
                              full);
        } else {
            if (l->n == l->cap) {
                l->cap = l->cap ? l->cap * 2 : 32;
                l->e = gl_xrealloc(l->e, l->cap * sizeof *l->e);
            }
            l->e[l->n++] = (struct tree_entry){r, (long long)st.st_size};
            r = NULL;
        }
        free(r);
        free(full);
    }
    closedir(d);
    if (!rc)
        rc = sync_dir(dir, err);
    free(dir);
    return rc;
}

enum gl_status gl_output_tree_files(const char *dir, struct gl_buf *out, struct gl_error *err)
{
    struct tree_list l = {0};
    enum gl_status rc = tree_walk(dir, "", &l, err);
    gl_sort(l.e, l.n, sizeof *l.e, entry_cmp);
    for (size_t i = 0; i < l.n; i++) {
        if (!rc && !gl_buf_printf(out, "%s\t%lld\n", l.e[i].rel, l.e[i].size))
            rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
        free(l.e[i].rel);
    }
    free(l.e);
    if (!rc && !out->data && !gl_buf_append(out, "", 0))
        rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    return rc;
}

static enum gl_status sync_parent(const char *path, struct gl_error *err)
{
    char *parent = gl_path_dir(path);
    enum gl_status rc = sync_dir(parent, err);
    free(parent);
    return rc;
}

enum gl_status gl_output_tree_swap(const char *tmp, const char *final, struct gl_error *err)
{
    struct stat st;
    if (lstat(final, &st) != 0) {
        if (errno != ENOENT)
            return gl_error_set(err, GL_ERR_RUNTIME, "%s: %s", final, strerror(errno));
        if (rename(tmp, final) != 0)
            return gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot rename %s into place: %s",
                                final, tmp, strerror(errno));
        return sync_parent(final, err);
    }
    /* one step: a reader sees the old tree or the new, never neither */
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) == 0) {
        enum gl_status rc = sync_parent(final, err);
        if (!rc)
            rc = gl_output_tree_remove(tmp, err); /* now the old tree */
        return rc;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot exchange with %s: %s", final, tmp,
                            strerror(errno));
    /* a file system without RENAME_EXCHANGE: two renames, the old tree
     * parked beside (a reader may find the folder missing for an instant) */
    size_t n = strlen(final) + 32;
    char *old = gl_xcalloc(n, 1);
    char *base = strrchr(final, '/');
    snprintf(old, n, "%.*s.%s.old-%ld", base ? (int)(base - final + 1) : 0, final,
             base ? base + 1 : final, (long)getpid());
    enum gl_status rc = GL_OK;
    if (rename(final, old) != 0)
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot move aside: %s", final,
                          strerror(errno));
    else if (rename(tmp, final) != 0)
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot rename %s into place: %s", final, tmp,
                          strerror(errno));
    if (!rc)
        rc = sync_parent(final, err);
    if (!rc)
        rc = gl_output_tree_remove(old, err);
    free(old);
    return rc;
}
