/* Unit tests: the command line (engine/cli/cli.c): the edit distance and the
 * suggestion for a mistyped option or command, global options given
 * after the command, the output formats a command accepts, and the usage
 * texts composed from the command and renderer tables. */
#include <unistd.h>

#include "cli.h"
#include "render.h"
#include "tap.h"
#include "util.h"

static size_t dist(const char *a, const char *b)
{
    return gl_cli_distance(a, strlen(a), b);
}

static void test_distance(void)
{
    CHECK(dist("period", "period") == 0);
    CHECK(dist("perod", "period") == 1);      /* a deletion */
    CHECK(dist("perriod", "period") == 1);    /* an insertion */
    CHECK(dist("peroid", "period") == 1);     /* neighbours swapped */
    CHECK(dist("pariod", "period") == 1);     /* a substitution */
    CHECK(dist("", "db") == 2);
    CHECK(dist("format", "from") == 3);
    CHECK(dist("kitten", "sitting") == 3);
    char longw[80];
    memset(longw, 'x', sizeof longw - 1);
    longw[sizeof longw - 1] = '\0';
    CHECK(dist(longw, "period") == SIZE_MAX);
}

static void test_suggest(void)
{
    const char *const names[] = {"period", "team", "format", "out", "reprice-closed",
                                 "config", "db", "quiet", "verbose", "log-format"};
    size_t n = sizeof names / sizeof *names;
#define SUGGEST(w) gl_cli_suggest(w, strlen(w), names, n)
    CHECK_STR(SUGGEST("perod"), "period");
    CHECK_STR(SUGGEST("peroid"), "period");
    CHECK_STR(SUGGEST("fromat"), "format");
    CHECK_STR(SUGGEST("reprice-close"), "reprice-closed");
    CHECK_STR(SUGGEST("tema"), "team");
    CHECK_STR(SUGGEST("confg"), "config");
    /* short words: one edit at most; nothing near: no suggestion */
    CHECK(SUGGEST("to") == NULL);
    CHECK(SUGGEST("xyz") == NULL);
    CHECK(SUGGEST("forced") == NULL);
    CHECK(SUGGEST("period") == NULL); /* the name itself is no typo */
    /* only the first n bytes of the word count ("--perod=2026-09") */
    CHECK_STR(gl_cli_suggest("perod=2026-09", 5, names, n), "period");
#undef SUGGEST
}

static void test_global_after_command(void)
{
    struct gl_cli g = {"gpuledger.json", "gpuledger.db"};
    char words[][16] = {"invoice", "--config", "x.json", "--db=y.db", "--period", "-q",
                        "--log-format", "json", "--config"};
    char *argv[sizeof words / sizeof *words];
    for (size_t k = 0; k < sizeof words / sizeof *words; k++)
        argv[k] = words[k];
    int argc = (int)(sizeof argv / sizeof *argv);
    bool matched = false, lf = false;
    const struct gl_command *inv = gl_command_find("invoice");
    int i = 1;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, inv) == 0 && matched &&
          i == 2);
    CHECK_STR(g.config, "x.json");
    i = 3;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, inv) == 0 && matched);
    CHECK_STR(g.db, "y.db");
    i = 4;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, inv) == 0 && !matched &&
          i == 4);
    enum gl_log_level before = gl_log_threshold;
    i = 5;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, inv) == 0 && matched &&
          gl_log_threshold == GL_LOG_ERROR);
    gl_log_threshold = before;
    i = 6;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, inv) == 0 && matched && lf &&
          gl_log_format == GL_LOG_JSON && i == 7);
    gl_log_format = GL_LOG_TEXT;
    /* --config as the last word: no value, a usage error */
    i = 8;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, inv) == GL_ERR_USAGE);
}

/* stderr sent to a temporary file while a command speaks. */
struct captured {
    FILE *tmp;
    int saved;
};

static bool capture_begin(struct captured *c)
{
    c->tmp = tmpfile();
    if (!c->tmp)
        return false;
    fflush(stderr);
    c->saved = dup(2);
    dup2(fileno(c->tmp), 2);
    return true;
}

/* stderr back; the first line written meanwhile into msg. */
static void capture_end(struct captured *c, char *msg, size_t n)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    rewind(c->tmp);
    if (!fgets(msg, (int)n, c->tmp))
        msg[0] = '\0';
    msg[strcspn(msg, "\n")] = '\0';
    fclose(c->tmp);
}

/* The check of command name with --format (or export's --focus-version)
 * value: its exit status, and the first line it printed into msg. */
static int format_check(const char *name, const char *value, char *msg, size_t n)
{
    const struct gl_command *cmd = gl_command_find(name);
    struct gl_cmd_env e = {.cmd = cmd};
    if (strcmp(name, "export") == 0)
        e.o.focus_version = value;
    else
        e.o.format = value;
    msg[0] = '\0';
    struct captured cap;
    if (!cmd || !cmd->check || !capture_begin(&cap))
        return -1;
    int rc = cmd->check(&e);
    capture_end(&cap, msg, n);
    return rc;
}

/* gpuledger with words (argv[0] the command's name, NULL-ended): its exit
 * status, and the first line it printed on stderr into msg. */
static int run_words(const char *const *words, char *msg, size_t n)
{
    char *argv[8];
    int argc = 0;
    while (words[argc] && argc < 8) {
        argv[argc] = (char *)words[argc];
        argc++;
    }
    struct gl_cli g = {"/nonexistent/gpuledger.json", "/nonexistent/gpuledger.db"};
    msg[0] = '\0';
    const struct gl_command *cmd = gl_command_find(words[0]);
    struct captured cap;
    if (!cmd || !capture_begin(&cap))
        return -1;
    int rc = gl_cli_run(cmd, &g, argc, argv);
    capture_end(&cap, msg, n);
    return rc;
}

/* A required option (its row's GL_REQ) missing or empty is a usage error
 * naming it and its value, before anything is opened (the config and the
 * database here do not exist); given, the command goes on past it. */
static void test_required_options(void)
{
    static const struct {
        const char *words[5];
        const char *msg;
    } cases[] = {
        {{"report", "--period", "2026-01", NULL}, "gpuledger: --out DIR is required"},
        {{"report", "--period", "2026-01", "--out=", NULL}, "gpuledger: --out DIR is required"},
        {{"backup", NULL}, "gpuledger: --to FILE is required"},
        {{"backup", "--to", "", NULL}, "gpuledger: --to FILE is required"},
        {{"prune", "--dry-run", NULL}, "gpuledger: --before YYYY-MM is required"},
        /* the period is asked first, as before */
        {{"report", "--out", "x", NULL}, "gpuledger: --period YYYY-MM is required"},
        /* given: the row's own check runs next */
        {{"prune", "--before", "2026x", NULL}, "gpuledger: --before \"2026x\" is not YYYY-MM"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char msg[256];
        int rc = run_words(cases[i].words, msg, sizeof msg);
        CHECK(rc == 2);
        CHECK_STR(msg, cases[i].msg);
    }
    /* past the required option, the next failure is the missing database */
    char msg[256];
    const char *const given[] = {"backup", "--to", "/nonexistent/copy.db", NULL};
    CHECK(run_words(given, msg, sizeof msg) != 2);
    CHECK(strstr(msg, "no database") != NULL);
}

/* Every command that prints a period resolves --format in one place and
 * names the formats it accepts when given another. */
static void test_formats(void)
{
    char msg[256];
    static const struct {
        const char *cmd, *value;
        int rc;
        const char *msg;
    } cases[] = {
        {"invoice", "json", 0, ""},
        {"invoice", "md", 0, ""},
        {"invoice", "csv", GL_ERR_USAGE, "gpuledger: --format \"csv\" is not json or md"},
        {"summary", "md", 0, ""},
        {"summary", "html", GL_ERR_USAGE, "gpuledger: --format \"html\" is not json or md"},
        {"anomalies", "md", 0, ""},
        {"anomalies", "xml", GL_ERR_USAGE, "gpuledger: --format \"xml\" is not json or md"},
        {"unit-cost", "csv", 0, ""},
        {"unit-cost", "html", GL_ERR_USAGE,
         "gpuledger: --format \"html\" is not json, csv or md"},
        {"advise", "md", 0, ""},
        {"advise", "csv", GL_ERR_USAGE, "gpuledger: --format \"csv\" is not json or md"},
        {"export", "1.3", 0, ""},
        {"export", "1.2", 0, ""},
        {"export", "1.4", GL_ERR_USAGE,
         "gpuledger: --focus-version \"1.4\" is not 1.2 or 1.3"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        int rc = format_check(cases[k].cmd, cases[k].value, msg, sizeof msg);
        CHECK(rc == cases[k].rc);
        CHECK_STR(msg, cases[k].msg);
    }
}

/* What f printed for the usage of c (NULL: the program's); malloc'd. */
static char *usage_text(const struct gl_command *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    gl_cli_usage_print(c, f);
    fclose(f);
    return text;
}

/* The program's usage lists the command table, one row a line in table
 * order, the summaries aligned (as the listing was written by hand). */
static void test_usage_listing(void)
{
    char *u = usage_text(NULL);
    CHECK(u != NULL);
    if (!u)
        return;
    CHECK(strncmp(u, "usage: gpuledger [--config FILE]", 32) == 0);
    CHECK(strstr(u, "\ncommands:\n"
                    "  run     [--out DIR]             the CronJob: collect since the "
                    "watermark, write outputs\n"
                    "  collect --from TIME --to TIME   pull and integrate [from, to) from "
                    "Prometheus\n") != NULL);
    /* a long name, and a synopsis reaching past the summaries' column */
    CHECK(strstr(u, "\n  anomalies --period YYYY-MM      GPU memory used without a matching "
                    "allocation\n") != NULL);
    CHECK(strstr(u, "\n  report  --period YYYY-MM --out DIR   monthly team reports (HTML, "
                    "Markdown)\n") != NULL);
    CHECK(strstr(u, "\n  backup  --to FILE [--upload]    consistent copy of the database "
                    "(online backup)\n\nglobal options:\n") != NULL);
    /* every row, in order, and nothing else */
    const char *line = strstr(u, "\ncommands:\n");
    size_t rows = 0;
    for (line = line ? line + 11 : ""; *line == ' '; line = strchr(line, '\n') + 1) {
        const char *name = line + 2;
        CHECK(rows < gl_ncommands && strncmp(name, gl_commands[rows].name,
                                             strlen(gl_commands[rows].name)) == 0 &&
              name[strlen(gl_commands[rows].name)] == ' ');
        rows++;
    }
    CHECK(rows == gl_ncommands);
    free(u);
}

/* A command's usage names its --format values from the renderer table. */
static void test_usage_formats(void)
{
    static const struct {
        const char *cmd, *has;
    } cases[] = {
        {"invoice", "usage: gpuledger invoice --period YYYY-MM [--team ID] [--format json|md] "
                    "[--out DIR]\n                         [--reprice-closed]\n"},
        {"unit-cost", "usage: gpuledger unit-cost --period YYYY-MM [--format json|csv|md]\n"},
        {"export", "[--out FILE] [--focus-version 1.2|1.3]\n"},
        {"summary", "[--format json|md]\n"},
        {"anomalies", "[--team ID] [--format json|md]\n"},
        {"advise", "[--format json|md]\n"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char *u = usage_text(gl_command_find(cases[k].cmd));
        CHECK(u && strstr(u, cases[k].has) != NULL);
        free(u);
    }
    /* the mark is always replaced, and only commands with renderer rows
     * have one (a command printing a format names its values) */
    for (size_t c = 0; c < gl_ncommands; c++) {
        char *u = usage_text(&gl_commands[c]);
        CHECK(u && !strstr(u, GL_USAGE_FORMATS) && strncmp(u, "usage: gpuledger ", 17) == 0);
        free(u);
        bool rows = false;
        for (size_t r = 0; r < gl_nrenderers; r++)
            rows |= gl_renderers[r].command &&
                    strcmp(gl_renderers[r].command, gl_commands[c].name) == 0;
        CHECK(rows == (strstr(gl_commands[c].usage, GL_USAGE_FORMATS) != NULL));
    }
}

int main(void)
{
    RUN(test_distance);
    RUN(test_suggest);
    RUN(test_global_after_command);
    RUN(test_formats);
    RUN(test_usage_listing);
    RUN(test_usage_formats);
    RUN(test_required_options);
    return TAP_END();
}
