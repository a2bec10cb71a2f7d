/* report — placeholder until the report stage lands (see report.h). */
#include "report.h"

#include "cli.h"
#include <stdio.h>

enum gl_status gl_report_write(const struct gl_config *c, struct gl_store *s,
                               const struct gl_invoice_set *set, const char *team,
                               const char *dir, struct gl_error *err)
{
    (void)c;
    (void)s;
    (void)set;
    (void)team;
    (void)dir;
    return gl_error_set(err, GL_ERR_RUNTIME, "reports are not implemented yet");
}

int gl_cmd_report(const struct gl_cli *g, int argc, char **argv)
{
    (void)g;
    (void)argc;
    (void)argv;
    fputs("gpuledger: reports are not implemented yet\n", stderr);
    return 1;
}
