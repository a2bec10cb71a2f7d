/* Unit tests: the command line (engine/cli/cli.c): the edit distance and the
 * suggestion for a mistyped option or command, and global options given
 * after the command. */
#include "cli.h"
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
    int i = 1;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, "usage\n") == 0 && matched &&
          i == 2);
    CHECK_STR(g.config, "x.json");
    i = 3;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, "usage\n") == 0 && matched);
    CHECK_STR(g.db, "y.db");
    i = 4;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, "usage\n") == 0 && !matched &&
          i == 4);
    enum gl_log_level before = gl_log_threshold;
    i = 5;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, "usage\n") == 0 && matched &&
          gl_log_threshold == GL_LOG_ERROR);
    gl_log_threshold = before;
    i = 6;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, "usage\n") == 0 && matched && lf &&
          gl_log_format == GL_LOG_JSON && i == 7);
    gl_log_format = GL_LOG_TEXT;
    /* --config as the last word: no value, a usage error */
    i = 8;
    CHECK(gl_cli_global(&g, argc, argv, &i, &matched, &lf, "usage\n") == GL_ERR_USAGE);
}

int main(void)
{
    RUN(test_distance);
    RUN(test_suggest);
    RUN(test_global_after_command);
    return TAP_END();
}
