/* Unit tests: RFC 3339 and billing periods (engine/base/timeutil.c), the
 * growable buffer's key and printf helpers (engine/base/util.c) and the
 * binary key map (engine/base/keymap.c). */
#include "keymap.h"
#include "tap.h"
#include "timeutil.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

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

/* FNV-1a 64 of s as 16 hex digits, worked here. */
static void fnv_hex(const char *s, char *out)
{
    unsigned long long h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    snprintf(out, 17, "%016llx", h);
}

static void test_safe_name_bounds(void)
{
    char id[301], hex[17];
    memset(id, 'x', 300);
    id[300] = '\0';
    id[299] = 'y';
    /* 300 safe characters: the first 64, '-' and the hash of the whole id */
    char *b = gl_safe_name(id);
    fnv_hex(id, hex);
    CHECK(strlen(b) == 64 + 17 && strncmp(b, id, 64) == 0 && b[64] == '-' &&
          strcmp(b + 65, hex) == 0);
    id[299] = 'z'; /* differs only past the prefix: another name */
    char *c = gl_safe_name(id);
    CHECK(strcmp(b, c) != 0 && strlen(c) == 81);
    free(b);
    free(c);
    id[GL_SAFE_NAME_MAX] = '\0'; /* 128 bytes: as it is */
    b = gl_safe_name(id);
    CHECK_STR(b, id);
    free(b);
    id[GL_SAFE_NAME_MAX] = 'x'; /* 129: hashed */
    id[GL_SAFE_NAME_MAX + 1] = '\0';
    b = gl_safe_name(id);
    CHECK(strlen(b) == 81);
    free(b);
    /* an id that looks like a hashed name is hashed itself: a verbatim
     * name never meets a hashed one */
    b = gl_safe_name("a|b");
    c = gl_safe_name(b);
    CHECK(strcmp(b, c) != 0 && strncmp(c, b, strlen(b)) == 0);
    free(c);
    free(b);
    b = gl_safe_name("");
    CHECK(b[0] == '-' && strlen(b) == 17);
    free(b);
    const char *ok[] = {"a|b", "a_b", "a?b", "team"};
    struct gl_error err = {0};
    CHECK(gl_safe_names_check(ok, 4, &err) == GL_OK);
    const char *same[] = {"x|y", "team", "x|y"}; /* the check path: one name twice */
    CHECK(gl_safe_names_check(same, 3, &err) == GL_ERR_CONFIG && strstr(err.msg, "x|y"));
}

/* gl_buf_put_field: "<length>:<text>" (the keys of integrate, close and the
 * allocation join), and gl_buf_vprintf in one pass or two, at every room
 * left, equal to snprintf's text. */
static void test_buf(void)
{
    struct gl_buf b;
    gl_buf_init(&b);
    CHECK(gl_buf_put_field(&b, "ab") && gl_buf_put_field(&b, NULL) &&
          gl_buf_put_field(&b, "") && gl_buf_put_field(&b, "0123456789"));
    CHECK_STR(b.data, "2:ab0:0:10:0123456789");
    CHECK(b.len == strlen(b.data));
    char big[1200];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    gl_buf_reset(&b);
    CHECK(gl_buf_put_field(&b, big) && strncmp(b.data, "1199:xxx", 8) == 0 &&
          b.len == 5 + 1199);
    for (size_t pre = 0; pre < 600; pre += 7) {
        struct gl_buf v;
        gl_buf_init(&v);
        for (size_t i = 0; i < pre; i++)
            gl_buf_append(&v, "p", 1);
        CHECK(gl_buf_printf(&v, "%s|%d|%.3s", big + 900, (int)pre, "abcdef"));
        char want[1500];
        snprintf(want, sizeof want, "%.*s%s|%d|abc", (int)pre,
                 "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                 "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                 "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                 "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                 "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                 "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                 "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                 "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp",
                 big + 900, (int)pre);
        CHECK_STR(v.data, want);
        CHECK(v.len == strlen(want));
        gl_buf_free(&v);
    }
    gl_buf_free(&b);
}

/* Dense ids in insertion order through the table's growth; keys that differ
 * in one word only (the last, the first) are apart; the key is copied;
 * cleared, ids start again at 0. */
static void test_keymap(void)
{
    struct gl_keymap *m = gl_keymap_new(3);
    int wrong = 0;
    for (int64_t i = 0; i < 50000; i++) {
        int64_t k[] = {i / 7, i % 7, -i};
        wrong += gl_keymap_xget(m, k) != (int32_t)i;
        k[0] = k[1] = k[2] = 99; /* the caller's key is its own again */
    }
    CHECK(wrong == 0);
    CHECK(gl_keymap_count(m) == 50000);
    for (int64_t i = 49999; i >= 0; i--) {
        const int64_t k[] = {i / 7, i % 7, -i};
        wrong += gl_keymap_xget(m, k) != (int32_t)i;
    }
    CHECK(wrong == 0 && gl_keymap_count(m) == 50000);
    const int64_t last[] = {0, 0, 1}, first[] = {1, 0, 0};
    CHECK(gl_keymap_xget(m, last) == 50000);
    CHECK(gl_keymap_xget(m, first) == 50001);
    gl_keymap_clear(m);
    CHECK(gl_keymap_count(m) == 0);
    const int64_t k7[] = {7, 0, -49};
    CHECK(gl_keymap_xget(m, k7) == 0);
    CHECK(gl_keymap_xget(m, last) == 1);
    gl_keymap_free(m);
}

int main(void)
{
    RUN(test_safe_name);
    RUN(test_safe_name_bounds);
    RUN(test_parse);
    RUN(test_period);
    RUN(test_buf);
    RUN(test_keymap);
    return TAP_END();
}
