/* error — formatting of struct gl_error messages. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum gl_status gl_error_set(struct gl_error *err, enum gl_status code,
                            const char *fmt, ...)
{
    if (err) {
        /* format into a copy first: callers may pass err->msg as an argument */
        char buf[sizeof err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        memcpy(err->msg, buf, sizeof buf);
        err->code = code;
    }
    return code;
}

enum gl_status gl_error_prefix(struct gl_error *err, const char *fmt, ...)
{
    if (!err)
        return GL_ERR_RUNTIME;
    char old[sizeof err->msg];
    char pre[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s: %s", pre, old);
    return err->code;
}
