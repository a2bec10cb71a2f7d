/* cli — option parsing and error printing shared by the subcommands. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gl_cli_fail(const struct gl_error *err)
{
    /* one line, whatever the message quotes (label values, server text) */
    fputs("gpuledger: ", stderr);
    for (const char *p = err->msg; *p; p++)
        fputc((unsigned char)*p < 0x20 ? ' ' : *p, stderr);
    fputc('\n', stderr);
    return err->code ? (int)err->code : 1;
}

int gl_cli_usage(const char *cmd_usage, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gpuledger: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fputs(cmd_usage, stderr);
    return GL_ERR_USAGE;
}

int gl_cli_parse(int argc, char **argv, const struct gl_cli_opt *specs, size_t nspecs,
                 const char **vals, const char *cmd_usage, bool *help)
{
    *help = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            *help = true;
            return 0;
        }
        if (strncmp(a, "--", 2) != 0)
            return gl_cli_usage(cmd_usage, "unexpected argument \"%s\"", a);
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        size_t k;
        for (k = 0; k < nspecs; k++)
            if (strlen(specs[k].name) == nlen && strncmp(specs[k].name, name, nlen) == 0)
                break;
        if (k == nspecs)
            return gl_cli_usage(cmd_usage, "unknown option \"%s\"", a);
        if (!specs[k].has_arg) {
            vals[k] = "1";
            continue;
        }
        if (eq) {
            vals[k] = eq + 1;
        } else {
            if (i + 1 >= argc)
                return gl_cli_usage(cmd_usage, "option \"%s\" needs a value", a);
            vals[k] = argv[++i];
        }
    }
    return 0;
}
