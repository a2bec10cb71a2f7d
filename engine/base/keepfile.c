/* keepfile — unchanged outputs hard-linked, changed ones written (keepfile.h). */
#include "keepfile.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* Whether the regular file at path holds exactly data: its size first,
 * then its bytes a block at a time. */
static bool same_bytes(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    struct stat st;
    bool same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == len;
    char buf[65536];
    size_t off = 0;
    while (same && off < len) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0 || (size_t)n > len - off || memcmp(buf, data + off, (size_t)n) != 0)
            same = false;
        else
            off += (size_t)n;
    }
    /* nothing past len: the file did not grow while it was read */
    same = same && read(fd, buf, 1) == 0;
    close(fd);
    return same;
}

enum gl_status gl_keep_or_write(const char *path, const char *prev, const char *data, size_t len,
                                bool *linked, struct gl_error *err)
{
    *linked = prev && same_bytes(prev, data, len) && link(prev, path) == 0;
    return *linked ? GL_OK : gl_write_atomic(path, data, len, err);
}
