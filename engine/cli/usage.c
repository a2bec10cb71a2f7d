/*
 * usage — the help texts, composed from the tables so that neither needs
 * a second edit: `gpuledger --help` lists the rows of gl_commands[] (each
 * row's synopsis and summary, in table order), and a command's usage
 * names the values of its --format (export: --focus-version) from the
 * renderer table (render.h), where the place of that list is written
 * "{formats}".
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "render.h"

static const char main_head[] =
    "usage: gpuledger [--config FILE] [--db FILE] [--quiet|--verbose] [--log-format F] COMMAND "
    "[options]\n"
    "\n"
    "GPU chargeback for Kubernetes: bills GPU memory (GB-hours) per team.\n"
    "\n"
    "commands:\n";

static const char main_tail[] =
    "\n"
    "global options:\n"
    "  --config FILE   configuration (default gpuledger.json)\n"
    "  --db FILE       SQLite database (default gpuledger.db)\n"
    "  --quiet         errors only on stderr;  --verbose  debug events too\n"
    "  --log-format F  logfmt (default), json or text (GPULEDGER_LOG_FORMAT)\n"
    "  --completion bash   print the bash completion script\n"
    "  --version, --help\n"
    "\n"
    "Global options go before or after the command.\n"
    "TIME is RFC 3339 UTC, e.g. 2026-10-01T00:00:00Z. Run 'gpuledger COMMAND --help'.\n"
    "exit status: 0 ok, 1 runtime error, 2 usage, 3 config/prices, 4 Prometheus, 5 partial,\n"
    "  6 locked by another run, 7 period state (closed twice, not finished, not complete,\n"
    "  never collected)\n";

/* The listing's columns: names padded to NAME_WIDTH, summaries from column
 * SUMMARY_COLUMN, or GAP spaces after a synopsis that reaches past it. */
enum { NAME_WIDTH = 7, SUMMARY_COLUMN = 34, GAP = 3 };

static void print_main(FILE *f)
{
    fputs(main_head, f);
    for (size_t i = 0; i < gl_ncommands; i++) {
        const struct gl_command *c = &gl_commands[i];
        int col = fprintf(f, "  %-*s %s", NAME_WIDTH, c->name, c->synopsis);
        int pad = col >= 0 && SUMMARY_COLUMN - col > GAP ? SUMMARY_COLUMN - col : GAP;
        fprintf(f, "%*s%s\n", pad, "", c->summary);
    }
    fputs(main_tail, f);
}

static const char formats_mark[] = GL_USAGE_FORMATS;

/* The --format values of command c in table order, "a|b|c". */
static void print_formats(const struct gl_command *c, FILE *f)
{
    size_t n = 0;
    for (size_t i = 0; i < gl_nrenderers; i++) {
        const struct gl_renderer *r = &gl_renderers[i];
        if (r->command && strcmp(r->command, c->name) == 0)
            fprintf(f, "%s%s", n++ ? "|" : "", r->format);
    }
}

void gl_cli_usage_print(const struct gl_command *c, FILE *f)
{
    if (!c) {
        print_main(f);
        return;
    }
    const char *u = c->usage, *at;
    while ((at = strstr(u, formats_mark))) {
        fwrite(u, 1, (size_t)(at - u), f);
        print_formats(c, f);
        u = at + sizeof formats_mark - 1;
    }
    fputs(u, f);
}
