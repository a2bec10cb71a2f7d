/* cli — option parsing, the setup every command declares, error printing. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "util.h"

int gl_cli_fail(const struct gl_error *err)
{
    /* one line, whatever the message quotes (label values, server text) */
    fputs("gpuledger: ", stderr);
    for (const char *p = err->msg; *p; p++)
        fputc((unsigned char)*p < 0x20 ? ' ' : *p, stderr);
    fputc('\n', stderr);
    return err->code ? (int)err->code : 1;
}

int gl_cli_usage(const struct gl_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gpuledger: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    gl_cli_usage_print(cmd, stderr);
    return GL_ERR_USAGE;
}

const struct gl_command *gl_command_find(const char *name)
{
    for (size_t i = 0; i < gl_ncommands; i++)
        if (strcmp(gl_commands[i].name, name) == 0)
            return &gl_commands[i];
    return NULL;
}

size_t gl_cli_distance(const char *a, size_t n, const char *b)
{
    /* optimal string alignment: insertions, deletions, substitutions and
     * transpositions of neighbours each cost 1 */
    size_t m = strlen(b);
    if (n > 64 || m > 64)
        return SIZE_MAX;
    size_t d[65][65];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

/* Whether a name at distance d from a word of length n is a likely typo. */
static bool close_enough(size_t d, size_t n)
{
    return d > 0 && d <= (n <= 4 ? 1 : 2);
}

const char *gl_cli_option_owner(const char *word, size_t n)
{
    for (size_t c = 0; c < gl_ncommands; c++)
        for (size_t k = 0; k < GL_MAX_OPTS && gl_commands[c].opts[k].name; k++)
            if (strlen(gl_commands[c].opts[k].name) == n &&
                strncmp(gl_commands[c].opts[k].name, word, n) == 0)
                return gl_commands[c].name;
    return NULL;
}

const char *gl_cli_suggest(const char *word, size_t n, const char *const *names, size_t count)
{
    const char *best = NULL;
    size_t bd = SIZE_MAX;
    for (size_t i = 0; i < count; i++) {
        size_t d = names[i] ? gl_cli_distance(word, n, names[i]) : SIZE_MAX;
        if (d < bd) {
            bd = d;
            best = names[i];
        }
    }
    return best && close_enough(bd, n) ? best : NULL;
}

/* The global options (main.c), also accepted after the command. */
static const char *const global_names[] = {"config", "db", "quiet", "verbose", "log-format"};
#define NGLOBAL (sizeof global_names / sizeof *global_names)

int gl_cli_global(struct gl_cli *g, int argc, char **argv, int *i, bool *matched,
                  bool *log_format_given, const struct gl_command *usage_of)
{
    const char *a = argv[*i];
    *matched = true;
    if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
        gl_log_threshold = GL_LOG_ERROR;
    } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
        gl_log_threshold = GL_LOG_DEBUG;
    } else if (strcmp(a, "--log-format") == 0 || strncmp(a, "--log-format=", 13) == 0) {
        const char *v = a[12] == '=' ? a + 13 : *i + 1 < argc ? argv[++*i] : "";
        if (!gl_log_format_parse(v, &gl_log_format))
            return gl_cli_usage(usage_of, "--log-format \"%s\" is not logfmt, json or text", v);
        if (log_format_given)
            *log_format_given = true;
    } else if (strcmp(a, "--config") == 0 || strcmp(a, "--db") == 0) {
        if (*i + 1 >= argc)
            return gl_cli_usage(usage_of, "option \"%s\" needs a value", a);
        *(a[2] == 'c' ? &g->config : &g->db) = argv[++*i];
    } else if (strncmp(a, "--config=", 9) == 0) {
        g->config = a + 9;
    } else if (strncmp(a, "--db=", 5) == 0) {
        g->db = a + 5;
    } else {
        *matched = false;
    }
    return 0;
}

/* "unknown option" for --name (n bytes) of cmd: with the nearest option
 * name when it looks like a typo, or the command it belongs to. */
static int unknown_option(const struct gl_command *cmd, const char *arg, const char *name,
                          size_t n)
{
    const char *names[GL_MAX_OPTS + NGLOBAL];
    size_t count = 0;
    for (size_t k = 0; k < GL_MAX_OPTS && cmd->opts[k].name; k++)
        names[count++] = cmd->opts[k].name;
    for (size_t k = 0; k < NGLOBAL; k++)
        names[count++] = global_names[k];
    const char *near = gl_cli_suggest(name, n, names, count);
    if (near)
        return gl_cli_usage(cmd, "unknown option \"%s\" for %s (did you mean --%s?)", arg,
                            cmd->name, near);
    const char *owner = gl_cli_option_owner(name, n);
    if (owner)
        return gl_cli_usage(cmd,
                            "unknown option \"%s\" for %s (--%.*s is an option of "
                            "'gpuledger %s')",
                            arg, cmd->name, (int)n, name, owner);
    return gl_cli_usage(cmd, "unknown option \"%s\" for %s (see 'gpuledger %s --help')",
                        arg, cmd->name, cmd->name);
}

/* Fills e->o from argv[1..]; returns 0, or the usage status after printing
 * why; *help is set for --help/-h. Global options (--config, --db, --quiet,
 * --verbose, --log-format) are accepted here too, into g. */
static int parse(const struct gl_command *cmd, int argc, char **argv, struct gl_cmd_env *e,
                 struct gl_cli *g, bool *help)
{
    *help = false;
    int i = 1;
    if (cmd->words && argc > 1 && argv[1][0] != '-') {
        /* one word from a space-separated list, e.g. "import" */
        size_t n = strlen(argv[1]);
        for (const char *w = cmd->words; *w;) {
            size_t len = strcspn(w, " ");
            if (len == n && strncmp(w, argv[1], n) == 0) {
                e->o.word = argv[1];
                i = 2;
                break;
            }
            w += len + (w[len] == ' ');
        }
    }
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            *help = true;
            return 0;
        }
        bool global;
        int grc = gl_cli_global(g, argc, argv, &i, &global, NULL, cmd);
        if (grc || global) {
            if (grc)
                return grc;
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            return gl_cli_usage(cmd, "unexpected argument \"%s\"", a);
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct gl_cli_opt *spec = NULL;
        for (size_t k = 0; k < GL_MAX_OPTS && cmd->opts[k].name && !spec; k++)
            if (strlen(cmd->opts[k].name) == nlen && strncmp(cmd->opts[k].name, name, nlen) == 0)
                spec = &cmd->opts[k];
        if (!spec)
            return unknown_option(cmd, a, name, nlen);
        const char **field = (const char **)(void *)((char *)&e->o + spec->offset);
        if (!spec->has_arg) {
            *field = "1";
        } else if (eq) {
            *field = eq + 1;
        } else {
            if (i + 1 >= argc)
                return gl_cli_usage(cmd, "option \"%s\" needs a value", a);
            *field = argv[++i];
        }
    }
    return 0;
}

static int setup(struct gl_cmd_env *e)
{
    const struct gl_command *cmd = e->cmd;
    const struct gl_cli *g = e->g;
    struct gl_error err = {0};
    unsigned need = cmd->needs;
    if (need & GL_NEED_PERIOD) {
        if (!e->o.period)
            return gl_cli_usage(cmd, "%s", "--period YYYY-MM is required");
        if (!gl_period_parse(e->o.period, &e->period))
            return gl_cli_usage(cmd, "--period \"%s\" is not YYYY-MM", e->o.period);
    }
    for (size_t k = 0; k < GL_MAX_OPTS && cmd->opts[k].name; k++) {
        const struct gl_cli_opt *o = &cmd->opts[k];
        const char *v = *(const char **)(const void *)((const char *)&e->o + o->offset);
        if (o->required && (!v || !*v))
            return gl_cli_usage(cmd, "--%s %s is required", o->name, o->required);
    }
    e->now = (int64_t)time(NULL);
    if (e->o.now && !gl_time_parse(e->o.now, &e->now))
        return gl_cli_usage(cmd, "--now \"%s\" is not an RFC 3339 UTC time", e->o.now);
    int rc;
    if (cmd->check && (rc = cmd->check(e)))
        return rc;
    if ((need & GL_NEED_LOCK_FIRST) && gl_lock_acquire(g->db, &e->lock, &err))
        return gl_cli_fail(&err); /* before the database is even opened */
    if ((need & GL_NEED_CONFIG) && gl_config_load(g->config, &e->cfg, &err))
        return gl_cli_fail(&err);
    if ((need & GL_NEED_LOCK) && gl_lock_acquire(g->db, &e->lock, &err))
        return gl_cli_fail(&err);
    if (need & GL_NEED_DB) {
        /* reading commands must not create an empty database from a mistyped path */
        struct stat sb;
        if (stat(g->db, &sb) != 0) {
            gl_error_set(&err, GL_ERR_RUNTIME, "%s: no database (run 'gpuledger collect' first)",
                         g->db);
            return gl_cli_fail(&err);
        }
    }
    if ((need & (GL_NEED_DB | GL_NEED_STORE)) && gl_store_open(g->db, &e->store, &err))
        return gl_cli_fail(&err);
    if ((need & GL_NEED_PRICES) && gl_prices_load_config(e->cfg, &e->prices, &err))
        return gl_cli_fail(&err);
    return 0;
}

int gl_cli_run(const struct gl_command *cmd, const struct gl_cli *g0, int argc, char **argv)
{
    struct gl_cli gl = *g0, *g = &gl; /* global options after the command change it */
    struct gl_cmd_env e = {.g = g, .cmd = cmd};
    bool help;
    int rc = parse(cmd, argc, argv, &e, g, &help);
    if (rc)
        return rc;
    if (help) {
        gl_cli_usage_print(cmd, stdout);
        return 0;
    }
    rc = setup(&e);
    if (!rc)
        rc = cmd->fn(&e);
    gl_prices_free(e.prices);
    gl_store_close(e.store);
    gl_lock_release(e.lock); /* after the store: see gl_lock_acquire */
    gl_config_free(e.cfg);
    return rc;
}

void gl_cli_completion_bash(FILE *f)
{
    fputs("# bash completion for gpuledger. Generated by `gpuledger --completion bash`\n"
          "# from the command table (engine/cli/commands.c); tests compare this file with it.\n"
          "# Install: source it, or copy it to /usr/share/bash-completion/completions/gpuledger\n"
          "_gpuledger() {\n"
          "    local cur prev cmd i opts\n"
          "    cur=${COMP_WORDS[COMP_CWORD]}\n"
          "    prev=${COMP_WORDS[COMP_CWORD-1]}\n"
          "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
          "        case ${COMP_WORDS[i]} in\n"
          "            --config|--db|--log-format) ((i++)) ;;\n"
          "            -*) ;;\n"
          "            *) cmd=${COMP_WORDS[i]}; break ;;\n"
          "        esac\n"
          "    done\n"
          "    case $prev in\n"
          "        --config|--db|--file|--out|--to) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
          "        --log-format) COMPREPLY=($(compgen -W \"logfmt json text\" -- \"$cur\")); return ;;\n"
          "        --format) COMPREPLY=($(compgen -W \"json md\" -- \"$cur\")); return ;;\n"
          "    esac\n"
          "    if [ -z \"$cmd\" ]; then\n"
          "        COMPREPLY=($(compgen -W \"--config --db --quiet --verbose --log-format "
          "--version --help",
          f);
    for (size_t i = 0; i < gl_ncommands; i++)
        fprintf(f, " %s", gl_commands[i].name);
    fputs("\" -- \"$cur\"))\n"
          "        return\n"
          "    fi\n"
          "    case $cmd in\n",
          f);
    for (size_t i = 0; i < gl_ncommands; i++) {
        const struct gl_command *c = &gl_commands[i];
        fprintf(f, "        %s) opts=\"", c->name);
        if (c->words)
            fprintf(f, "%s ", c->words);
        for (size_t k = 0; k < GL_MAX_OPTS && c->opts[k].name; k++)
            fprintf(f, "--%s ", c->opts[k].name);
        fputs("--help\" ;;\n", f);
    }
    fputs("        *) opts=\"--help\" ;;\n"
          "    esac\n"
          "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "}\n"
          "complete -F _gpuledger gpuledger\n",
          f);
}
