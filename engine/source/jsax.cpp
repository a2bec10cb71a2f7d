// jsax — Boost.JSON's basic_parser behind the C API of jsax.h.
//
// The handler forwards each event to the C callbacks. Parts of a string,
// key or number that arrive in separate pieces are collected in `part` and
// handed over whole; a token inside one piece is passed straight from the
// piece (no copy). No exception crosses the C API: the only one thrown,
// std::bad_alloc (basic_parser's stack, the handler's `part`), is caught
// and returned as GL_JSAX_NOMEM; the error path allocates nothing.
#include "jsax.h"

#include <boost/json/basic_parser_impl.hpp>

#include <cstring>
#include <new>
#include <string>

namespace {

namespace bj = boost::json;

struct Handler {
    constexpr static std::size_t max_object_size = std::size_t(-1);
    constexpr static std::size_t max_array_size = std::size_t(-1);
    constexpr static std::size_t max_key_size = std::size_t(-1);
    constexpr static std::size_t max_string_size = std::size_t(-1);

    const gl_jsax_callbacks *cb;
    void *ctx;
    std::string part;        // the parts so far of a split token
    bool cancelled = false;  // a callback returned 0

    Handler(const gl_jsax_callbacks *c, void *x) : cb(c), ctx(x) {}

    // A callback's answer: 0 stops the parse with an error code of ours
    // (basic_parser needs one to stop; the C side sees GL_JSAX_CANCELLED).
    bool go(int r, bj::error_code &ec)
    {
        if (r)
            return true;
        cancelled = true;
        ec = bj::make_error_code(bj::error::exception);
        return false;
    }
    // The whole token: the piece's bytes when it came in one, else the parts.
    bj::string_view whole(bj::string_view last)
    {
        if (part.empty())
            return last;
        part.append(last.data(), last.size());
        return bj::string_view(part);
    }
    template <class F> bool token(bj::string_view last, bj::error_code &ec, F f)
    {
        bj::string_view s = whole(last);
        bool ok = go(f(s), ec);
        part.clear();
        return ok;
    }
    bool add_part(bj::string_view s)
    {
        part.append(s.data(), s.size());
        return true;
    }

    bool on_document_begin(bj::error_code &) { return true; }
    bool on_document_end(bj::error_code &) { return true; }
    bool on_object_begin(bj::error_code &ec) { return go(cb->on_start_map(ctx), ec); }
    bool on_object_end(std::size_t, bj::error_code &ec) { return go(cb->on_end_map(ctx), ec); }
    bool on_array_begin(bj::error_code &ec) { return go(cb->on_start_array(ctx), ec); }
    bool on_array_end(std::size_t, bj::error_code &ec) { return go(cb->on_end_array(ctx), ec); }
    bool on_key_part(bj::string_view s, std::size_t, bj::error_code &) { return add_part(s); }
    bool on_key(bj::string_view s, std::size_t, bj::error_code &ec)
    {
        return token(s, ec, [this](bj::string_view k) {
            return cb->on_map_key(ctx, reinterpret_cast<const unsigned char *>(k.data()),
                                  k.size());
        });
    }
    bool on_string_part(bj::string_view s, std::size_t, bj::error_code &) { return add_part(s); }
    bool on_string(bj::string_view s, std::size_t, bj::error_code &ec)
    {
        return token(s, ec, [this](bj::string_view v) {
            return cb->on_string(ctx, reinterpret_cast<const unsigned char *>(v.data()),
                                 v.size());
        });
    }
    bool on_number_part(bj::string_view s, bj::error_code &) { return add_part(s); }
    bool number(bj::string_view s, bj::error_code &ec)
    {
        return token(s, ec, [this](bj::string_view t) {
            return cb->on_number(ctx, t.data(), t.size());
        });
    }
    bool on_int64(std::int64_t, bj::string_view s, bj::error_code &ec) { return number(s, ec); }
    bool on_uint64(std::uint64_t, bj::string_view s, bj::error_code &ec) { return number(s, ec); }
    bool on_double(double, bj::string_view s, bj::error_code &ec) { return number(s, ec); }
    bool on_bool(bool b, bj::error_code &ec) { return go(cb->on_boolean(ctx, b), ec); }
    bool on_null(bj::error_code &ec) { return go(cb->on_null(ctx), ec); }
    // comments are off (parse_options): never called
    bool on_comment_part(bj::string_view, bj::error_code &) { return false; }
    bool on_comment(bj::string_view, bj::error_code &) { return false; }
};

bj::parse_options strict()
{
    bj::parse_options o;
    o.max_depth = 64;
    o.allow_comments = false;
    o.allow_trailing_commas = false;
    o.allow_invalid_utf8 = false;
    return o;
}

} // namespace

struct gl_jsax {
    bj::basic_parser<Handler> p;
    gl_jsax_status st = GL_JSAX_OK;
    std::size_t fed = 0;     // bytes fed before the current piece
    std::size_t at = 0;      // where it stopped (offset in the body)
    unsigned char tail[32];  // the last bytes fed before the current piece
    std::size_t ntail = 0;
    const char *why = "";    // what was wrong (a static text)

    gl_jsax(const gl_jsax_callbacks *cb, void *ctx) : p(strict(), cb, ctx) {}
};

namespace {

// Byte k of the body, for k in [fed - ntail, fed + n).
unsigned char byte_at(const gl_jsax *j, const char *data, std::size_t k)
{
    return k >= j->fed ? static_cast<unsigned char>(data[k - j->fed])
                       : j->tail[j->ntail - (j->fed - k)];
}

// a byte >= 0x80 is legal JSON only inside a string, where it is then an
// invalid UTF-8 sequence
const char *const bad_utf8 = "invalid bytes in UTF8 string (or a non-ASCII byte outside a string)";

bool is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool is_word(unsigned char c) // a byte that can run on from a literal or number
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           c == '.' || c == '+' || c == '-' || c == '_';
}

// Where the bad token starts, and what it is. basic_parser stops at a byte
// that depends on how much of the token it had at once (it checks a whole
// literal, \u escape or UTF-8 sequence in one go when the bytes are there,
// byte by byte across a piece's end), so the error is reported at the
// token's first byte, found from the bytes before the stop: the same answer
// for any split of the body into pieces.
const char *bad_token(gl_jsax *j, const char *data, std::size_t n, std::size_t *at)
{
    const std::size_t lo = j->fed - j->ntail, hi = j->fed + n;
    auto b = [&](std::size_t k) { return byte_at(j, data, k); };
    // 1. the start of a UTF-8 sequence that reaches the stop: the earliest
    //    lead byte (at most 3 before) whose sequence would cover it
    std::size_t e = *at;
    for (std::size_t back = 3 + 1; --back > 0;) {
        if (e < lo + back)
            continue;
        unsigned char c = b(e - back);
        std::size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
        if (len > back) {
            e -= back;
            break;
        }
    }
    *at = e;
    // 2. an escape that reaches it: the earliest backslash (\u and up to 4
    //    hex digits, or any one byte after it)
    for (std::size_t k = 5 + 1; k-- > 0;) {
        if (e < lo + k || b(e - k) != '\\')
            continue;
        bool in = k <= 1 || b(e - k + 1) == 'u';
        for (std::size_t i = e - k + 2; in && i < e; i++)
            in = is_hex(b(i));
        if (in) {
            *at = e - k;
            return "invalid escape in a string";
        }
    }
    // 3. a literal or a number it ends or is: the run of word bytes
    std::size_t s = e;
    while (s > lo && e - s < 24 && is_word(b(s - 1)))
        s--;
    if (s < hi) {
        unsigned char c = b(s);
        if (c == 't' || c == 'f' || c == 'n') {
            *at = s;
            return "invalid literal (true, false or null expected)";
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            *at = s;
            return "invalid number";
        }
    }
    // 4. a byte >= 0x80 (UTF-8 that is not valid, or one outside a string)
    return e < hi && b(e) >= 0x80 ? bad_utf8 : "invalid char in json text";
}

// The status of a stopped parse, and the message of an error; j->at is the
// offset the parser stopped at in the piece data[0, n). Allocates nothing.
gl_jsax_status stopped(gl_jsax *j, const bj::error_code &ec, const char *data, std::size_t n)
{
    if (j->p.handler().cancelled)
        return j->st = GL_JSAX_CANCELLED;
    if (ec == bj::error::incomplete)
        j->why = "premature EOF";
    else if (ec == bj::error::too_deep)
        j->why = "nested too deeply (more than 64 levels)";
    else if (ec == bj::error::illegal_leading_surrogate || ec == bj::error::illegal_trailing_surrogate ||
             ec == bj::error::expected_utf16_escape)
        j->why = "a \\u escape of a lone UTF-16 surrogate (not a character)";
    else {
        const char *what = bad_token(j, data, n, &j->at);
        if (ec == bj::error::exponent_overflow)
            what = "a number's exponent is too large";
        j->why = what;
    }
    return j->st = GL_JSAX_ERROR;
}

} // namespace

extern "C" {

struct gl_jsax *gl_jsax_new(const struct gl_jsax_callbacks *cb, void *ctx)
{
    try {
        return new gl_jsax(cb, ctx);
    } catch (const std::bad_alloc &) {
        return nullptr;
    }
}

void gl_jsax_free(struct gl_jsax *j)
{
    delete j;
}

enum gl_jsax_status gl_jsax_feed(struct gl_jsax *j, const char *data, size_t n)
{
    if (j->st != GL_JSAX_OK || n == 0)
        return j->st;
    bj::error_code ec;
    std::size_t used;
    try {
        used = j->p.write_some(true, data, n, ec);
    } catch (const std::bad_alloc &) {
        j->at = j->fed;
        return j->st = GL_JSAX_NOMEM;
    }
    j->at = j->fed + used;
    if (ec)
        return stopped(j, ec, data, n);
    if (used < n) { // the document ended before the piece did
        j->why = "trailing garbage";
        return j->st = GL_JSAX_ERROR;
    }
    // the last bytes, for an error in a token that began here
    const std::size_t cap = sizeof j->tail;
    if (n >= cap) {
        std::memcpy(j->tail, data + n - cap, cap);
        j->ntail = cap;
    } else {
        std::size_t keep = j->ntail + n <= cap ? j->ntail : cap - n;
        std::memmove(j->tail, j->tail + j->ntail - keep, keep);
        std::memcpy(j->tail + keep, data, n);
        j->ntail = keep + n;
    }
    j->fed += n;
    return GL_JSAX_OK;
}

enum gl_jsax_status gl_jsax_finish(struct gl_jsax *j)
{
    if (j->st != GL_JSAX_OK)
        return j->st;
    j->at = j->fed;
    bj::error_code ec;
    try {
        j->p.write_some(false, "", 0, ec);
    } catch (const std::bad_alloc &) {
        return j->st = GL_JSAX_NOMEM;
    }
    if (ec)
        return stopped(j, ec, "", 0);
    if (!j->p.done()) {
        j->why = "premature EOF";
        return j->st = GL_JSAX_ERROR;
    }
    return GL_JSAX_OK;
}

size_t gl_jsax_offset(const struct gl_jsax *j)
{
    return j->at;
}

const char *gl_jsax_error(const struct gl_jsax *j)
{
    return j->st == GL_JSAX_ERROR ? j->why : "";
}

} // extern "C"
