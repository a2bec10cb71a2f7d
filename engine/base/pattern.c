/* pattern — compiling configured regular expressions (see pattern.h). */
#include "pattern.h"

pcre2_code *gl_pattern_compile(const char *pattern, char *why, size_t n, size_t *offset)
{
    int errcode;
    PCRE2_SIZE off;
    pcre2_code *code =
        pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &errcode, &off, NULL);
    if (!code) {
        pcre2_get_error_message(errcode, (PCRE2_UCHAR *)why, n);
        *offset = (size_t)off;
    }
    return code;
}
