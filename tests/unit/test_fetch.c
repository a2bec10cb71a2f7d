/* Unit tests: the Prometheus client (engine/source/fetch.c) without a server: a
 * closed loopback port (127.0.0.1:1) refuses every connection, which is
 * enough for the messages (method, URL, path, what was asked, retries, the
 * request deadline), the method chosen by the credentials, the client's
 * setup errors and the compression choice. Nothing here needs the network. */
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "fetch.h"
#include "tap.h"
#include "util.h"

static char url_closed[] = "http://127.0.0.1:1";

static struct gl_prom_cfg cfg_closed(int retries)
{
    struct gl_prom_cfg c = {0};
    c.url = url_closed;
    c.timeout_s = 5;
    c.retries = retries;
    c.max_in_flight = 1;
    c.max_response_bytes = 1 << 20;
    c.request_deadline_s = 30;
    return c;
}

static bool starts(const char *s, const char *prefix)
{
    bool ok = strncmp(s, prefix, strlen(prefix)) == 0;
    if (!ok)
        printf("# \"%s\" does not start with \"%s\"\n", s, prefix);
    return ok;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A refused connection: GET, the URL and path, what was asked; a transport
 * error is retried (retries exhausted) with the backoff. */
static void test_refused_range(void)
{
    struct gl_prom_cfg c = cfg_closed(2);
    struct gl_prom *p = NULL;
    struct gl_error err = {0};
    CHECK(gl_prom_new(&c, &p, &err) == GL_OK && p);
    struct gl_buf body;
    gl_buf_init(&body);
    gl_prom_backoff_ms = 20; /* waits of 20 and 40 ms */
    int64_t t0 = now_ms();
    /* 2026-10-01T00:00Z to 01:00Z */
    struct gl_range_query rq = {.query = "up{job=\"x\"}", .what = "up"};
    CHECK(p && gl_prom_query_range_batch(p, 1, &rq, 1790812800, 1790816400, 60, &err) ==
                   GL_ERR_PROM);
    int64_t took = now_ms() - t0;
    CHECK(starts(err.msg, "GET http://127.0.0.1:1/api/v1/query_range (query=up{job=\"x\"} "
                          "start=2026-10-01T00:00:00Z end=2026-10-01T01:00:00Z step=60s): "));
    CHECK(strstr(err.msg, " (retries exhausted)") != NULL);
    CHECK(took >= 60); /* 20 + 40 ms of backoff before the third attempt */
    if (took < 60)
        printf("# took %lld ms: %s\n", (long long)took, err.msg);
    /* no retries: no mention of them */
    c.retries = 0;
    struct gl_vector v;
    CHECK(p && gl_prom_vector(p, "sum(x)", 1790812800, &v, &err) == GL_ERR_PROM && v.n == 0);
    CHECK(starts(err.msg, "GET http://127.0.0.1:1/api/v1/query (query=sum(x)): ") &&
          !strstr(err.msg, "retries"));
    CHECK(p && gl_prom_get(p, "/api/v1/status/buildinfo", &body, &err) == GL_ERR_PROM);
    CHECK(starts(err.msg, "GET http://127.0.0.1:1/api/v1/status/buildinfo "
                          "(/api/v1/status/buildinfo): "));
    gl_buf_free(&body);
    gl_prom_free(p);
}

/* A backoff that would pass the request deadline is not waited for. */
static void test_deadline(void)
{
    struct gl_prom_cfg c = cfg_closed(5);
    c.request_deadline_s = 1;
    struct gl_prom *p = NULL;
    struct gl_error err = {0};
    CHECK(gl_prom_new(&c, &p, &err) == GL_OK && p);
    struct gl_buf body;
    gl_buf_init(&body);
    gl_prom_backoff_ms = 5000; /* the first wait alone is beyond the 1 s deadline */
    int64_t t0 = now_ms();
    CHECK(p && gl_prom_get(p, "/x", &body, &err) == GL_ERR_PROM);
    CHECK(now_ms() - t0 < 900);
    CHECK(strstr(err.msg, "; request deadline reached (prometheus.request_deadline_seconds = "
                          "1s)") != NULL);
    gl_buf_free(&body);
    gl_prom_free(p);
}

/* SigV4 credentials: queries go as a signed POST form; the secret never
 * appears in a message. */
static void test_post_for_sigv4(void)
{
    setenv("AWS_REGION", "us-east-1", 1);
    setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
    struct gl_prom_cfg c = cfg_closed(0);
    c.auth.type = GL_AUTH_AWS_SIGV4;
    struct gl_prom *p = NULL;
    struct gl_error err = {0};
    CHECK(gl_prom_new(&c, &p, &err) == GL_OK && p);
    struct gl_buf body;
    gl_buf_init(&body);
    struct gl_vector v;
    CHECK(p && gl_prom_vector(p, "up", 1790812800, &v, &err) == GL_ERR_PROM);
    CHECK(starts(err.msg, "POST http://127.0.0.1:1/api/v1/query (query=up): "));
    CHECK(!strstr(err.msg, "wJalrXUtnFEMI"));
    gl_buf_free(&body);
    gl_prom_free(p);
    unsetenv("AWS_REGION");
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
}

/* The client's credentials are read when it is made: a bad file fails
 * gl_prom_new (nothing to free). */
static void test_setup_errors(void)
{
    struct gl_prom_cfg c = cfg_closed(0);
    char missing[] = "/nonexistent/gl-unit-token";
    c.bearer_token_file = missing;
    struct gl_prom *p = (struct gl_prom *)&c;
    struct gl_error err = {0};
    CHECK(gl_prom_new(&c, &p, &err) == GL_ERR_CONFIG && p == NULL &&
          strstr(err.msg, "prometheus.bearer_token_file"));
    gl_prom_free(NULL);
}

/* Compression: asked over https:// under auto, never over http://, as set
 * otherwise. */
static void test_compression(void)
{
    struct gl_prom_cfg c = {0};
    char https[] = "https://prom.example", http[] = "http://prom:9090";
    c.url = https;
    CHECK(gl_prom_compressed(&c));
    c.url = http;
    CHECK(!gl_prom_compressed(&c));
    c.compression = GL_COMPRESS_ON;
    CHECK(gl_prom_compressed(&c));
    c.url = https;
    c.compression = GL_COMPRESS_OFF;
    CHECK(!gl_prom_compressed(&c));
}

int main(void)
{
    gl_log_threshold = GL_LOG_ERROR;
    const char *vars[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                          "ALL_PROXY", "AWS_SESSION_TOKEN", "AWS_PROFILE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]); /* the loopback port directly */
    RUN(test_refused_range);
    RUN(test_deadline);
    RUN(test_post_for_sigv4);
    RUN(test_setup_errors);
    RUN(test_compression);
    return TAP_END();
}
