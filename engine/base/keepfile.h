/*
 * keepfile — a file of a new output tree taken from the tree it replaces
 * when its bytes did not change: hard-linked, so its inode and mtime stay
 * and nothing is written (a reader, rsync or an upload sees it unchanged);
 * written atomically otherwise (gl_write_atomic).
 */
#ifndef GL_KEEPFILE_H
#define GL_KEEPFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* data (len bytes) as path, a name not yet taken: a hard link to prev when
 * prev (NULL: none) is a regular file holding exactly data, else written.
 * *linked says which. A prev that cannot be read or linked is written over
 * (the output is still right), never an error. */
enum gl_status gl_keep_or_write(const char *path, const char *prev, const char *data, size_t len,
                                bool *linked, struct gl_error *err);

#endif
