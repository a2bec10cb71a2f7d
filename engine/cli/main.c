/*
 * gpuledger — command line entry point: the global options, then the
 * command from the table (commands.c, cli.h), which sets up what the
 * command needs, runs it and cleans up. The usage texts are composed from
 * the tables (usage.c). Errors are printed and exit statuses chosen only
 * here and in the commands.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gl_build.h"
#include "gl_vcs.h"
#include "util.h"

/* An unknown option before the command: the nearest global option, or
 * where a command's option goes. */
static int unknown_global(const char *a)
{
    static const char *const globals[] = {"config", "db", "quiet", "verbose", "log-format",
                                          "completion", "version", "help"};
    const char *name = a + (a[0] == '-') + (a[0] == '-' && a[1] == '-');
    size_t n = strcspn(name, "=");
    const char *near = gl_cli_suggest(name, n, globals, sizeof globals / sizeof *globals);
    if (near)
        return gl_cli_usage(NULL, "unknown or incomplete option \"%s\" (did you mean "
                                        "--%s?)", a, near);
    const char *owner = gl_cli_option_owner(name, n);
    if (owner)
        return gl_cli_usage(NULL,
                            "option \"%s\" goes after the command (e.g. 'gpuledger %s "
                            "--%.*s ...'); only global options come before it",
                            a, owner, (int)n, name);
    return gl_cli_usage(NULL, "unknown or incomplete option \"%s\"", a);
}

int main(int argc, char **argv)
{
    gl_build_commit = GL_COMMIT;
    struct gl_cli g = {"gpuledger.json", "gpuledger.db"};
    int i = 1;
    bool log_format_given = false;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            gl_cli_usage_print(NULL, stdout);
            return 0;
        } else if (strcmp(a, "--completion") == 0) {
            if (i + 1 >= argc || strcmp(argv[i + 1], "bash") != 0)
                return gl_cli_usage(NULL, "%s", "--completion takes bash");
            gl_cli_completion_bash(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            puts("gpuledger " GL_VERSION " (commit " GL_COMMIT ")");
            return 0;
        } else {
            bool matched;
            int rc = gl_cli_global(&g, argc, argv, &i, &matched, &log_format_given, NULL);
            if (rc)
                return rc;
            if (!matched)
                return unknown_global(a);
        }
    }
    /* the flag wins over GPULEDGER_LOG_FORMAT */
    const char *lf = getenv("GPULEDGER_LOG_FORMAT");
    if (!log_format_given && lf && *lf && !gl_log_format_parse(lf, &gl_log_format))
        return gl_cli_usage(NULL, "GPULEDGER_LOG_FORMAT \"%s\" is not logfmt, json or text",
                            lf);
    if (i >= argc)
        return gl_cli_usage(NULL, "%s", "a command is required");
    const char *cmd = argv[i];
    int sub_argc = argc - i;
    char **sub_argv = argv + i;
    const struct gl_command *c = gl_command_find(cmd);
    if (!c) {
        const char *names[64];
        size_t n = 0;
        for (size_t k = 0; k < gl_ncommands && n < 64; k++)
            names[n++] = gl_commands[k].name;
        const char *near = gl_cli_suggest(cmd, strlen(cmd), names, n);
        if (near)
            return gl_cli_usage(NULL, "unknown command \"%s\" (did you mean %s?)", cmd,
                                near);
        return gl_cli_usage(NULL, "unknown command \"%s\"", cmd);
    }
    return gl_cli_run(c, &g, sub_argc, sub_argv);
}
