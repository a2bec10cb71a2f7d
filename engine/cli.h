/*
 * cli — what every subcommand receives from the global options. Only
 * main.c and the gl_cmd_* functions print errors and choose exit codes.
 */
#ifndef GL_CLI_H
#define GL_CLI_H

struct gl_cli {
    const char *config; /* --config */
    const char *db;     /* --db */
};

/* `gpuledger report`: argv[0] is "report". Returns the exit status. */
int gl_cmd_report(const struct gl_cli *g, int argc, char **argv);

#endif
