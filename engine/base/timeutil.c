/* timeutil — UTC calendar arithmetic with timegm/gmtime_r. */
#include "timeutil.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

bool gl_time_parse(const char *s, int64_t *out)
{
    int y, mo, d, h, mi, se;
    size_t n = strlen(s);
    if (n < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) ||
        s[16] != ':' || !digits(s + 17, 2, &se))
        return false;
    const char *tz = s + 19;
    if (!(strcmp(tz, "Z") == 0 || strcmp(tz, "z") == 0 || strcmp(tz, "+00:00") == 0))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59)
        return false;
    struct tm tm = {0};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    time_t t = timegm(&tm);
    /* Reject dates such as 2026-02-30 that timegm would normalise. */
    struct tm back;
    gmtime_r(&t, &back);
    if (back.tm_mday != d || back.tm_mon != mo - 1)
        return false;
    *out = (int64_t)t;
    return true;
}

void gl_time_format(int64_t t, char *buf, size_t n)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void gl_date_format(int64_t t, char *buf, size_t n)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, n, "%Y-%m-%d", &tm);
}

static void period_fill(int year, int month, struct gl_period *p)
{
    struct tm tm = {0};
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = 1;
    p->year = year;
    p->month = month;
    p->start = (int64_t)timegm(&tm);
    if (month == 12) {
        tm.tm_year++;
        tm.tm_mon = 0;
    } else {
        tm.tm_mon++;
    }
    p->end = (int64_t)timegm(&tm);
    snprintf(p->name, sizeof p->name, "%04d-%02d", year % 10000, month % 100);
}

bool gl_period_parse(const char *s, struct gl_period *p)
{
    int y, m;
    if (strlen(s) != 7 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &m) ||
        m < 1 || m > 12 || y < 1970)
        return false;
    period_fill(y, m, p);
    return true;
}

void gl_period_of(int64_t t, struct gl_period *p)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    period_fill(tm.tm_year + 1900, tm.tm_mon + 1, p);
}

int64_t gl_floor_to(int64_t t, int64_t unit)
{
    int64_t r = t % unit;
    if (r < 0)
        r += unit;
    return t - r;
}
