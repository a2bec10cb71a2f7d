/* cli — option parsing, the setup every command declares, error printing. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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

const struct gl_command *gl_command_find(const char *name)
{
    for (size_t i = 0; i < gl_ncommands; i++)
        if (strcmp(gl_commands[i].name, name) == 0)
            return &gl_commands[i];
    return NULL;
}

/* Fills e->o from argv[1..]; returns 0, or the usage status after printing
 * why; *help is set for --help/-h. */
static int parse(const struct gl_command *cmd, int argc, char **argv, struct gl_cmd_env *e,
                 bool *help)
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
        if (strncmp(a, "--", 2) != 0)
            return gl_cli_usage(cmd->usage, "unexpected argument \"%s\"", a);
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct gl_cli_opt *spec = NULL;
        for (size_t k = 0; k < GL_MAX_OPTS && cmd->opts[k].name && !spec; k++)
            if (strlen(cmd->opts[k].name) == nlen && strncmp(cmd->opts[k].name, name, nlen) == 0)
                spec = &cmd->opts[k];
        if (!spec)
            return gl_cli_usage(cmd->usage, "unknown option \"%s\"", a);
        const char **field = (const char **)(void *)((char *)&e->o + spec->offset);
        if (!spec->has_arg) {
            *field = "1";
        } else if (eq) {
            *field = eq + 1;
        } else {
            if (i + 1 >= argc)
                return gl_cli_usage(cmd->usage, "option \"%s\" needs a value", a);
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
            return gl_cli_usage(cmd->usage, "%s", "--period YYYY-MM is required");
        if (!gl_period_parse(e->o.period, &e->period))
            return gl_cli_usage(cmd->usage, "--period \"%s\" is not YYYY-MM", e->o.period);
    }
    e->now = (int64_t)time(NULL);
    if (e->o.now && !gl_time_parse(e->o.now, &e->now))
        return gl_cli_usage(cmd->usage, "--now \"%s\" is not an RFC 3339 UTC time", e->o.now);
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

int gl_cli_run(const struct gl_command *cmd, const struct gl_cli *g, int argc, char **argv)
{
    struct gl_cmd_env e = {.g = g, .cmd = cmd};
    bool help;
    int rc = parse(cmd, argc, argv, &e, &help);
    if (rc)
        return rc;
    if (help) {
        fputs(cmd->usage, stdout);
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
          "# from the command table (engine/commands.c); tests compare this file with it.\n"
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
