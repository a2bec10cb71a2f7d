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

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Prints "gpuledger: <message>" and returns err's exit status. */
int gl_cli_fail(const struct gl_error *err);

/* Prints "gpuledger: <message>" and the command's usage; returns 2. */
int gl_cli_usage(const char *cmd_usage, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A subcommand's long option: "--name value", "--name=value", or a flag. */
struct gl_cli_opt {
    const char *name;
    bool has_arg;
};

/* Parses argv[1..] into vals (vals[i] for specs[i]; flags get "1").
 * Returns 0, or the usage exit status after printing why; *help is set
 * for --help/-h. */
int gl_cli_parse(int argc, char **argv, const struct gl_cli_opt *specs, size_t nspecs,
                 const char **vals, const char *cmd_usage, bool *help);

#endif
