/* Unit tests: RFC 3339 and billing periods (engine/timeutil.c). */
#include "tap.h"
#include "timeutil.h"
#include "util.h"

static void test_parse(void)
{
    int64_t t;
    CHECK(gl_time_parse("2026-10-01T00:00:00Z", &t) && t == 1790812800);
    CHECK(gl_time_parse("2026-10-01T00:00:00+00:00", &t) && t == 1790812800);
    CHECK(!gl_time_parse("2026-10-01T00:00:00+02:00", &t));
    CHECK(!gl_time_parse("2026-02-30T00:00:00Z", &t));
    CHECK(!gl_time_parse("2026-10-01 00:00:00Z", &t));
    CHECK(!gl_time_parse("2026-10-01T24:00:00Z", &t));
    CHECK(!gl_time_parse("yesterday", &t));
    char buf[32];
    gl_time_format(1790812800 + 3661, buf, sizeof buf);
    CHECK_STR(buf, "2026-10-01T01:01:01Z");
}

static void test_period(void)
{
    struct gl_period p;
    CHECK(gl_period_parse("2026-12", &p));
    char a[32], b[32];
    gl_time_format(p.start, a, sizeof a);
    gl_time_format(p.end, b, sizeof b);
    CHECK_STR(a, "2026-12-01T00:00:00Z");
    CHECK_STR(b, "2027-01-01T00:00:00Z");
    CHECK_STR(p.name, "2026-12");
    CHECK(!gl_period_parse("2026-13", &p));
    CHECK(!gl_period_parse("2026-1", &p));
    gl_period_of(1790812800 + 86400 * 40, &p);
    CHECK_STR(p.name, "2026-11");
    CHECK(gl_floor_to(3601, 3600) == 3600);
    CHECK(gl_floor_to(-1, 3600) == -3600);
}

static void test_safe_name(void)
{
    char *b = gl_safe_name("ml-research");
    CHECK_STR(b, "ml-research");
    free(b);
    b = gl_safe_name("../../etc/passwd");
    CHECK(strncmp(b, "_._.._etc_passwd-", 17) == 0);
    CHECK(strchr(b, '/') == NULL); /* no slash survives */
    free(b);
    b = gl_safe_name("équipe a");
    CHECK(strncmp(b, "__quipe_a-", 10) == 0);
    free(b);
    b = gl_safe_name("a|b");
    char *c = gl_safe_name("a_b");
    CHECK(strcmp(b, c) != 0); /* distinct teams, distinct files */
    CHECK_STR(c, "a_b");
    free(b);
    free(c);
}

int main(void)
{
    RUN(test_safe_name);
    RUN(test_parse);
    RUN(test_period);
    return TAP_END();
}
