/*
 * cli — the command table and what the dispatcher gives each command.
 * Only main.c and the commands (commands.c) print errors and choose exit
 * codes.
 *
 * Adding a command (git's builtin.h "Adding a new built-in" is the model):
 *   1. write `static int cmd_<name>(struct gl_cmd_env *e)` in commands.c:
 *      it finds its options in e->o (named fields), the period in
 *      e->period, and whatever it declared in e->cfg, e->store, e->prices;
 *      it returns the exit status (gl_cli_fail(&err) for an error). It
 *      frees only what it allocates itself: the dispatcher opens and
 *      closes the rest, in one place (gl_cli_run);
 *   2. add its usage text and one row to gl_commands[] in commands.c: the
 *      name, its synopsis and one-line summary (the listing of `gpuledger
 *      --help` prints them, in table order), the usage (its values of
 *      --format written GL_USAGE_FORMATS: they come from its rows of the
 *      renderer table), what it needs (GL_NEED_* below), its options
 *      (GL_OPT(field, "name", has_arg), or GL_REQ(field, "name", "VALUE")
 *      for one it cannot run without; a new option is a new field of
 *      struct gl_cmd_opts) and, when some option needs checking before
 *      anything is opened, a check function returning 0 or a usage status;
 *   3. describe it in README.md and docs/interfaces.md, regenerate the man
 *      page (docs/gen-man.py) and the completion file (examples/completion,
 *      `gpuledger --completion bash`), and test it (tests/integration, a
 *      golden file when it prints a format).
 */
#ifndef GL_CLI_H
#define GL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "error.h"
#include "price.h"
#include "store.h"
#include "timeutil.h"

struct gl_cli {
    const char *config; /* --config */
    const char *db;     /* --db */
};

/* Every subcommand option, by name (NULL when not given; flags get "1"). */
struct gl_cmd_opts {
    const char *period, *team, *format, *out, *from, *to, *cluster, *now, *at, *file;
    const char *allow_shrink;
    const char *before, *dry_run, *upload; /* prune, backup */
    const char *focus_version, *reprice_closed; /* export, prices import */
    const char *force;                          /* close */
    const char *word; /* the subcommand word given (e.g. "import"), or NULL */
};

/* A subcommand's long option: "--name value", "--name=value", or a flag;
 * offset = the struct gl_cmd_opts field it fills; required = the value's
 * placeholder of an option the command cannot run without ("DIR": a usage
 * error "--name DIR is required" when it is missing or empty), else NULL. */
struct gl_cli_opt {
    const char *name;
    bool has_arg;
    size_t offset;
    const char *required;
};
#define GL_OPT(field, name, has_arg) {name, has_arg, offsetof(struct gl_cmd_opts, field), NULL}
#define GL_REQ(field, name, value) {name, true, offsetof(struct gl_cmd_opts, field), value}
#define GL_MAX_OPTS 6

/* What a command needs before it runs, provided in this order. */
enum gl_need {
    GL_NEED_PERIOD = 1 << 0,      /* --period YYYY-MM, required (e->period) */
    GL_NEED_LOCK_FIRST = 1 << 1,  /* the database lock before anything else is opened */
    GL_NEED_CONFIG = 1 << 2,      /* e->cfg */
    GL_NEED_LOCK = 1 << 3,        /* the database lock, once the config is loaded */
    GL_NEED_DB = 1 << 4,          /* an existing database (never created by a reader) */
    GL_NEED_STORE = 1 << 5,       /* the database, created when missing */
    GL_NEED_PRICES = 1 << 6,      /* e->prices (the configured table) */
};

struct gl_command;

struct gl_cmd_env {
    const struct gl_cli *g;
    const struct gl_command *cmd;
    struct gl_cmd_opts o;
    struct gl_period period;
    int64_t now; /* --now, else the clock (commands with a "now" option) */
    struct gl_config *cfg;
    struct gl_store *store;
    struct gl_price_table *prices;
    struct gl_lock *lock;
};

struct gl_command {
    const char *name;
    const char *synopsis;                  /* its options in short, for the listing */
    const char *summary;                   /* what it does, in one line of the listing */
    const char *usage;                     /* `gpuledger NAME --help` (gl_cli_usage_print) */
    unsigned needs;                        /* enum gl_need */
    struct gl_cli_opt opts[GL_MAX_OPTS];   /* ends at the first without a name */
    const char *words;                     /* accepted subcommand words ("import"), or NULL */
    int (*check)(struct gl_cmd_env *e);    /* option checks before any setup, or NULL */
    int (*fn)(struct gl_cmd_env *e);
};

extern const struct gl_command gl_commands[];
extern const size_t gl_ncommands;

/* The command named name, or NULL. */
const struct gl_command *gl_command_find(const char *name);

/* Parses argv (argv[0] = the command's name), provides what cmd needs,
 * runs it and cleans up; returns the exit status. */
int gl_cli_run(const struct gl_command *cmd, const struct gl_cli *g, int argc, char **argv);

/* Where a usage names the values of the command's --format (export:
 * --focus-version): replaced by its rows' values in the renderer table,
 * "json|md". */
#define GL_USAGE_FORMATS "{formats}"

/* The usage of c (its text, GL_USAGE_FORMATS replaced), or with c NULL
 * the program's: the global options and the listing of gl_commands[]. */
void gl_cli_usage_print(const struct gl_command *c, FILE *f);

/* The bash completion script, from gl_commands (--completion bash). */
void gl_cli_completion_bash(FILE *f);

/* A global option at argv[*i] (--config, --db, --quiet/-q, --verbose/-v,
 * --log-format): applied to g (or the log settings), *i advanced past its
 * value, *matched set; accepted before the command (main.c) and after it.
 * Returns 0, or the usage status after printing why (a missing or bad
 * value, with usage_of's usage: NULL, the program's). log_format_given
 * (may be NULL) is set by --log-format. */
int gl_cli_global(struct gl_cli *g, int argc, char **argv, int *i, bool *matched,
                  bool *log_format_given, const struct gl_command *usage_of);

/* Edit distance (optimal string alignment) between word[0..n) and name;
 * SIZE_MAX for words over 64 bytes. */
size_t gl_cli_distance(const char *word, size_t n, const char *name);

/* The name of names nearest to word[0..n) when it looks like a typo of it
 * (distance 1, or 2 for words over 4 bytes), else NULL. */
const char *gl_cli_suggest(const char *word, size_t n, const char *const *names, size_t count);

/* The first command of gl_commands with an option named word[0..n), else
 * NULL (an option given to the wrong command, or before it). */
const char *gl_cli_option_owner(const char *word, size_t n);

/* Prints "gpuledger: <message>" and returns err's exit status. */
int gl_cli_fail(const struct gl_error *err);

/* Prints "gpuledger: <message>" and the usage of cmd (NULL: the
 * program's) on stderr; returns 2. */
int gl_cli_usage(const struct gl_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
