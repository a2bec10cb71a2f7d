/*
 * json_eval — JSON parsers for the matrix path, on the
 * engine's own query_range bodies (bench/json_capture.py), every parser
 * doing the same work: walk status / data.resultType / data.result, copy
 * every label name and value of each series (one allocation per label,
 * freed at the series' end), read each sample's timestamp (integer or
 * decimal seconds) and convert its value string to a double (one shared
 * conversion, conv_value, for all but the engine, which has its own).
 *
 * Usage:
 *   json_eval check DIR                 every parser (and inflater) once; exit 1
 *                                       unless all find the same series, samples,
 *                                       labels, label bytes and sum of values
 *   json_eval count PARSER DIR          one pass over the bodies, callgrind's
 *                                       collection toggled around it only (run
 *                                       under valgrind --tool=callgrind
 *                                       --collect-atstart=no)
 *   json_eval time PARSER DIR [N]       best of N (5) passes, CPU (getrusage)
 *   json_eval rss PARSER DIR            peak RSS increase parsing the largest
 *                                       body from its file (streaming parsers
 *                                       read 16 KiB pieces, the others the
 *                                       whole body)
 * Parsers: engine yajl simdjson rapidjson rapidjson-insitu rapidjson-chunked
 * rapidjson-iter cjson; inflaters (of the .z bodies as Prometheus sends
 * them): zlib libdeflate isal.
 * DIR holds NN.json, NN.z and manifest.tsv (NN start step nsteps encoding
 * json-bytes z-bytes path).
 */
#include <boost/json/basic_parser_impl.hpp>
#include <cjson/cJSON.h>
#include <libdeflate.h>
#include <isa-l/igzip_lib.h>
#include <rapidjson/encodedstream.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <simdjson.h>
#include <valgrind/callgrind.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "json_eval_engine.h"

namespace {

constexpr size_t PIECE = 16384; /* libcurl's write pieces (CURL_MAX_WRITE_SIZE) */
constexpr double MAXV = 281474976710656.0; /* the engine's default bound, 2^48 */

struct Body {
    std::string name, json, z, encoding;
    int64_t start = 0, step = 0;
    size_t nsteps = 0;
};

struct Acc {
    json_eval_acc a{};
    double ts_sum = 0; /* not from the engine (it keeps slots) */
};

[[noreturn]] void die(const std::string &m)
{
    throw std::runtime_error(m);
}

/* ---- the shared work ---- */

bool conv_value(const char *s, size_t n, double *x)
{
    if (n && n <= 15) {
        uint64_t v = 0;
        size_t i = 0;
        for (; i < n; i++) {
            unsigned d = (unsigned)(unsigned char)s[i] - '0';
            if (d > 9)
                break;
            v = v * 10 + d;
        }
        if (i == n) {
            *x = (double)v;
            return true;
        }
    }
    if (n == 3 && !memcmp(s, "NaN", 3)) {
        *x = NAN;
        return true;
    }
    if ((n == 3 && !memcmp(s, "Inf", 3)) || (n == 4 && !memcmp(s, "+Inf", 4))) {
        *x = INFINITY;
        return true;
    }
    if (n == 4 && !memcmp(s, "-Inf", 4)) {
        *x = -INFINITY;
        return true;
    }
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *e;
    *x = strtod(buf, &e);
    return e == buf + n;
}

int64_t conv_ts(const char *s, size_t n)
{
    if (n && n <= 16) {
        int64_t v = 0;
        size_t i = 0;
        for (; i < n; i++) {
            unsigned d = (unsigned)(unsigned char)s[i] - '0';
            if (d > 9)
                break;
            v = v * 10 + d;
        }
        if (i == n)
            return v;
    }
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        die("bad timestamp");
    memcpy(buf, s, n);
    buf[n] = '\0';
    double d = strtod(buf, nullptr);
    if (d != std::floor(d))
        die("timestamp off the grid");
    return (int64_t)d;
}

int64_t ts_double(double d)
{
    if (d != std::floor(d) || !(d > -1e15 && d < 1e15))
        die("timestamp off the grid");
    return (int64_t)d;
}

struct Work {
    Acc *acc;
    std::vector<char *> labels;

    void label(const char *k, size_t kn, const char *v, size_t vn)
    {
        char *m = (char *)malloc(kn + vn + 2);
        if (!m)
            die("out of memory");
        memcpy(m, k, kn);
        m[kn] = '\0';
        memcpy(m + kn + 1, v, vn);
        m[kn + 1 + vn] = '\0';
        labels.push_back(m);
        acc->a.labels++;
        acc->a.label_bytes += kn + vn;
    }
    void series_end()
    {
        for (char *m : labels)
            free(m);
        labels.clear();
        acc->a.series++;
    }
    void sample(int64_t ts, const char *s, size_t n)
    {
        double x;
        if (!conv_value(s, n, &x))
            die("value is not a number");
        acc->a.samples++;
        acc->ts_sum += (double)ts;
        if (std::isfinite(x) && x >= 0 && x <= MAXV)
            acc->a.sum += x;
    }
};

/* ---- the event (SAX) state machine shared by yajl and RapidJSON ---- */

enum St {
    S_START, S_ROOT, S_STATUS, S_DATA, S_IN_DATA, S_RTYPE, S_RESULT, S_IN_RESULT, S_ITEM,
    S_METRIC, S_IN_METRIC, S_LABEL, S_VALUES, S_IN_VALUES, S_TS, S_VALUE, S_SAMPLE_END,
    S_SKIP, S_DONE
};

struct Sax {
    Work w;
    St st = S_START, skip_ret = S_ROOT;
    int depth = 0;
    bool ok_status = false, ok_type = false;
    std::string key;
    int64_t ts = 0;

    bool skip_scalar()
    {
        if (st != S_SKIP)
            return false;
        if (depth == 0)
            st = skip_ret;
        return true;
    }
    bool start_map()
    {
        switch (st) {
        case S_START: st = S_ROOT; return true;
        case S_DATA: st = S_IN_DATA; return true;
        case S_IN_RESULT: st = S_ITEM; return true;
        case S_METRIC: st = S_IN_METRIC; return true;
        case S_SKIP: depth++; return true;
        default: return false;
        }
    }
    bool map_key(const char *s, size_t n)
    {
        std::string_view k(s, n);
        switch (st) {
        case S_ROOT:
            if (k == "status") st = S_STATUS;
            else if (k == "data") st = S_DATA;
            else { st = S_SKIP; skip_ret = S_ROOT; depth = 0; }
            return true;
        case S_IN_DATA:
            if (k == "resultType") st = S_RTYPE;
            else if (k == "result") st = S_RESULT;
            else return false;
            return true;
        case S_ITEM:
            if (k == "metric") st = S_METRIC;
            else if (k == "values") st = S_VALUES;
            else return false;
            return true;
        case S_IN_METRIC:
            key.assign(s, n);
            st = S_LABEL;
            return true;
        default:
            return false;
        }
    }
    bool end_map()
    {
        switch (st) {
        case S_ROOT: st = S_DONE; return ok_status && ok_type;
        case S_IN_DATA: st = S_ROOT; return true;
        case S_ITEM: w.series_end(); st = S_IN_RESULT; return true;
        case S_IN_METRIC: st = S_ITEM; return true;
        case S_SKIP: if (--depth == 0) st = skip_ret; return true;
        default: return false;
        }
    }
    bool start_array()
    {
        switch (st) {
        case S_RESULT: st = S_IN_RESULT; return true;
        case S_VALUES: st = S_IN_VALUES; return true;
        case S_IN_VALUES: st = S_TS; return true;
        case S_SKIP: depth++; return true;
        default: return false;
        }
    }
    bool end_array()
    {
        switch (st) {
        case S_IN_RESULT: st = S_IN_DATA; return true;
        case S_IN_VALUES: st = S_ITEM; return true;
        case S_SAMPLE_END: st = S_IN_VALUES; return true;
        case S_SKIP: if (--depth == 0) st = skip_ret; return true;
        default: return false;
        }
    }
    bool string(const char *s, size_t n)
    {
        switch (st) {
        case S_VALUE: w.sample(ts, s, n); st = S_SAMPLE_END; return true;
        case S_LABEL: w.label(key.data(), key.size(), s, n); st = S_IN_METRIC; return true;
        case S_STATUS: ok_status = std::string_view(s, n) == "success"; st = S_ROOT; return ok_status;
        case S_RTYPE: ok_type = std::string_view(s, n) == "matrix"; st = S_IN_DATA; return ok_type;
        default: return skip_scalar();
        }
    }
    bool timestamp(int64_t t)
    {
        if (st != S_TS)
            return skip_scalar();
        ts = t;
        st = S_VALUE;
        return true;
    }
};

/* ---- (b) yajl, minimal callbacks ---- */

int y_null(void *c) { return ((Sax *)c)->skip_scalar(); }
int y_bool(void *c, int) { return ((Sax *)c)->skip_scalar(); }
int y_number(void *c, const char *s, size_t n)
{
    Sax *p = (Sax *)c;
    return p->st == S_TS ? p->timestamp(conv_ts(s, n)) : p->skip_scalar();
}
int y_string(void *c, const unsigned char *s, size_t n) { return ((Sax *)c)->string((const char *)s, n); }
int y_start_map(void *c) { return ((Sax *)c)->start_map(); }
int y_map_key(void *c, const unsigned char *s, size_t n) { return ((Sax *)c)->map_key((const char *)s, n); }
int y_end_map(void *c) { return ((Sax *)c)->end_map(); }
int y_start_array(void *c) { return ((Sax *)c)->start_array(); }
int y_end_array(void *c) { return ((Sax *)c)->end_array(); }

const yajl_callbacks ycb = {y_null, y_bool, nullptr, nullptr, y_number, y_string,
                            y_start_map, y_map_key, y_end_map, y_start_array, y_end_array};

struct Yajl {
    Sax sax;
    yajl_handle h;
    explicit Yajl(Acc *acc)
    {
        sax.w.acc = acc;
        h = yajl_alloc(&ycb, nullptr, &sax);
    }
    ~Yajl() { yajl_free(h); }
    void feed(const char *d, size_t n)
    {
        if (yajl_parse(h, (const unsigned char *)d, n) != yajl_status_ok)
            die("yajl: parse error");
    }
    void finish()
    {
        if (yajl_complete_parse(h) != yajl_status_ok || sax.st != S_DONE)
            die("yajl: incomplete");
    }
};

void run_yajl(const Body &b, Acc *acc)
{
    Yajl y(acc);
    for (size_t off = 0; off < b.json.size(); off += PIECE)
        y.feed(b.json.data() + off, std::min(PIECE, b.json.size() - off));
    y.finish();
}

/* ---- (d) RapidJSON SAX ---- */

struct RjHandler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, RjHandler> {
    Sax sax;
    bool Null() { return sax.skip_scalar(); }
    bool Bool(bool) { return sax.skip_scalar(); }
    bool Int(int i) { return sax.timestamp(i); }
    bool Uint(unsigned u) { return sax.timestamp(u); }
    bool Int64(int64_t i) { return sax.timestamp(i); }
    bool Uint64(uint64_t u) { return u > INT64_MAX ? false : sax.timestamp((int64_t)u); }
    bool Double(double d) { return sax.st == S_TS ? sax.timestamp(ts_double(d)) : sax.skip_scalar(); }
    bool String(const char *s, rapidjson::SizeType n, bool) { return sax.string(s, n); }
    bool StartObject() { return sax.start_map(); }
    bool Key(const char *s, rapidjson::SizeType n, bool) { return sax.map_key(s, n); }
    bool EndObject(rapidjson::SizeType) { return sax.end_map(); }
    bool StartArray() { return sax.start_array(); }
    bool EndArray(rapidjson::SizeType) { return sax.end_array(); }
};

constexpr unsigned RJ_FLAGS = rapidjson::kParseValidateEncodingFlag; /* yajl checks UTF-8 too */

template <unsigned F, class Stream> void rj_parse(Stream &s, Acc *acc)
{
    rapidjson::Reader r;
    RjHandler h;
    h.sax.w.acc = acc;
    if (!r.Parse<F | RJ_FLAGS>(s, h) || h.sax.st != S_DONE)
        die("rapidjson: parse error " + std::to_string(r.GetParseErrorCode()) + " at " +
            std::to_string(r.GetErrorOffset()));
}

void run_rapidjson(const Body &b, Acc *acc)
{
    rapidjson::MemoryStream ms(b.json.data(), b.json.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> s(ms);
    rj_parse<rapidjson::kParseNoFlags>(s, acc);
}

void run_rapidjson_iter(const Body &b, Acc *acc)
{
    rapidjson::MemoryStream ms(b.json.data(), b.json.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> s(ms);
    rj_parse<rapidjson::kParseIterativeFlag>(s, acc);
}

void run_rapidjson_insitu(const Body &b, Acc *acc)
{
    /* a mutable, NUL-terminated copy: what assembling the pieces would make */
    std::vector<char> buf(b.json.size() + 1);
    memcpy(buf.data(), b.json.data(), b.json.size());
    buf[b.json.size()] = '\0';
    rapidjson::InsituStringStream s(buf.data());
    rj_parse<rapidjson::kParseInsituFlag>(s, acc);
}

/* A stream of 16 KiB pieces (rapidjson::FileReadStream's scheme; the pieces
 * come from `next`, which copies them as libcurl's write callback would). */
template <class Src> class ChunkStream {
  public:
    typedef char Ch;
    explicit ChunkStream(Src &src) : src_(src) { Read(); }
    Ch Peek() const { return *cur_; }
    Ch Take()
    {
        Ch c = *cur_;
        Read();
        return c;
    }
    size_t Tell() const { return count_ + (size_t)(cur_ - buf_); }
    Ch *PutBegin() { abort(); }
    void Put(Ch) { abort(); }
    void Flush() { abort(); }
    size_t PutEnd(Ch *) { abort(); }
    const Ch *Peek4() const { return nullptr; }

  private:
    void Read()
    {
        if (cur_ < last_) {
            ++cur_;
        } else if (!eof_) {
            count_ += n_;
            n_ = src_.next(buf_, sizeof buf_);
            last_ = buf_ + n_ - 1;
            cur_ = buf_;
            if (n_ < PIECE) {
                buf_[n_] = '\0';
                ++last_;
                eof_ = true;
            }
        }
    }
    Src &src_;
    Ch buf_[PIECE + 1];
    Ch *cur_ = buf_, *last_ = buf_;
    size_t n_ = 0, count_ = 0;
    bool eof_ = false;
};

struct MemSrc {
    const char *p;
    size_t left;
    size_t next(char *dst, size_t cap)
    {
        size_t n = std::min(cap - 1, left);
        memcpy(dst, p, n);
        p += n;
        left -= n;
        return n;
    }
};

struct FileSrc {
    FILE *f;
    size_t next(char *dst, size_t cap) { return fread(dst, 1, cap - 1, f); }
};

void run_rapidjson_chunked(const Body &b, Acc *acc)
{
    MemSrc src{b.json.data(), b.json.size()};
    ChunkStream<MemSrc> s(src);
    rj_parse<rapidjson::kParseNoFlags>(s, acc);
}

/* ---- (e) Boost.JSON basic_parser: push-fed, like yajl (16 KiB pieces) ---- */

/* Strings and keys split across pieces arrive as parts; the last part comes
 * with the final call (n = the whole length). */
struct BjHandler {
    constexpr static std::size_t max_object_size = std::size_t(-1);
    constexpr static std::size_t max_array_size = std::size_t(-1);
    constexpr static std::size_t max_key_size = std::size_t(-1);
    constexpr static std::size_t max_string_size = std::size_t(-1);
    Sax sax;
    std::string part;
    using sv = boost::json::string_view;
    using ec_t = boost::json::error_code;
    bool whole(sv s, std::size_t n, const char **p, size_t *len)
    {
        if (part.empty() && s.size() == n) {
            *p = s.data();
            *len = n;
            return true;
        }
        part.append(s.data(), s.size());
        *p = part.data();
        *len = part.size();
        return true;
    }
    bool on_document_begin(ec_t &) { return true; }
    bool on_document_end(ec_t &) { return true; }
    bool on_object_begin(ec_t &) { return sax.start_map(); }
    bool on_object_end(std::size_t, ec_t &) { return sax.end_map(); }
    bool on_array_begin(ec_t &) { return sax.start_array(); }
    bool on_array_end(std::size_t, ec_t &) { return sax.end_array(); }
    bool on_key_part(sv s, std::size_t, ec_t &) { part.append(s.data(), s.size()); return true; }
    template <class F> bool token(sv s, std::size_t n, F f)
    {
        const char *p;
        size_t len;
        whole(s, n, &p, &len);
        bool ok = f(p, len);
        part.clear();
        return ok;
    }
    bool on_key(sv s, std::size_t n, ec_t &)
    {
        return token(s, n, [this](const char *p, size_t len) { return sax.map_key(p, len); });
    }
    bool on_string_part(sv s, std::size_t, ec_t &) { part.append(s.data(), s.size()); return true; }
    bool on_string(sv s, std::size_t n, ec_t &)
    {
        return token(s, n, [this](const char *p, size_t len) { return sax.string(p, len); });
    }
    bool on_number_part(sv, ec_t &) { return true; }
    bool on_int64(int64_t i, sv, ec_t &) { return sax.timestamp(i); }
    bool on_uint64(uint64_t u, sv, ec_t &) { return u > INT64_MAX ? false : sax.timestamp((int64_t)u); }
    bool on_double(double d, sv, ec_t &)
    {
        return sax.st == S_TS ? sax.timestamp(ts_double(d)) : sax.skip_scalar();
    }
    bool on_bool(bool, ec_t &) { return sax.skip_scalar(); }
    bool on_null(ec_t &) { return sax.skip_scalar(); }
    bool on_comment_part(sv, ec_t &) { return false; }
    bool on_comment(sv, ec_t &) { return false; }
};

struct BoostFeed {
    boost::json::basic_parser<BjHandler> p{boost::json::parse_options{}};
    explicit BoostFeed(Acc *acc) { p.handler().sax.w.acc = acc; }
    void feed(const char *d, size_t n, bool more)
    {
        boost::json::error_code ec;
        size_t used = p.write_some(more, d, n, ec);
        if (ec || used != n)
            die("boost.json: parse error " + ec.message());
    }
    void finish()
    {
        feed("", 0, false);
        if (!p.done() || p.handler().sax.st != S_DONE)
            die("boost.json: incomplete document");
    }
};

void run_boostjson(const Body &b, Acc *acc)
{
    BoostFeed bf(acc);
    char buf[PIECE]; /* each piece copied, as libcurl's write callback hands it */
    for (size_t off = 0; off < b.json.size(); off += PIECE) {
        size_t n = std::min(PIECE, b.json.size() - off);
        memcpy(buf, b.json.data() + off, n);
        bf.feed(buf, n, true);
    }
    bf.finish();
}

/* ---- (c) simdjson On Demand ---- */

simdjson::ondemand::parser &sj_parser()
{
    static simdjson::ondemand::parser p; /* one per transfer in an engine; reused */
    return p;
}

void sj_walk(simdjson::padded_string_view ps, Acc *acc)
{
    using namespace simdjson;
    Work w{acc, {}};
    ondemand::document doc = sj_parser().iterate(ps);
    bool ok_status = false, ok_type = false;
    for (auto field : doc.get_object()) {
        std::string_view k = field.unescaped_key();
        if (k == "status") {
            ok_status = std::string_view(field.value().get_string()) == "success";
        } else if (k == "data") {
            for (auto df : field.value().get_object()) {
                std::string_view dk = df.unescaped_key();
                if (dk == "resultType") {
                    ok_type = std::string_view(df.value().get_string()) == "matrix";
                } else if (dk == "result") {
                    for (auto item : df.value().get_array()) {
                        for (auto sf : item.get_object()) {
                            std::string_view sk = sf.unescaped_key();
                            if (sk == "metric") {
                                for (auto lab : sf.value().get_object()) {
                                    std::string_view name = lab.unescaped_key();
                                    std::string_view v = lab.value().get_string();
                                    w.label(name.data(), name.size(), v.data(), v.size());
                                }
                            } else if (sk == "values") {
                                for (auto smp : sf.value().get_array()) {
                                    int i = 0;
                                    int64_t ts = 0;
                                    for (auto x : smp.get_array()) {
                                        if (i == 0) {
                                            ondemand::number num = x.get_number();
                                            ts = num.is_int64() ? num.get_int64()
                                                                : ts_double(num.as_double());
                                        } else if (i == 1) {
                                            std::string_view v = x.get_string();
                                            w.sample(ts, v.data(), v.size());
                                        } else {
                                            die("simdjson: a sample of more than 2");
                                        }
                                        i++;
                                    }
                                    if (i != 2)
                                        die("simdjson: a sample of less than 2");
                                }
                            } else {
                                die("simdjson: unknown series key");
                            }
                        }
                        w.series_end();
                    }
                } else {
                    die("simdjson: unknown data key");
                }
            }
        }
        /* other root keys (warnings, infos): skipped by the loop */
    }
    /* at the end of the input, current_location() is an error: anything
     * else is trailing content */
    if (!doc.current_location().error() || !ok_status || !ok_type)
        die("simdjson: trailing content or bad status");
}

void run_simdjson(const Body &b, Acc *acc)
{
    /* the padded copy of the body: what assembling the pieces would make */
    simdjson::padded_string ps(b.json.data(), b.json.size());
    sj_walk(ps, acc);
}

/* simdjson's DOM: a tape of the whole body, its stages 1 and 2 picked at
 * run time (On Demand: stage 1 at run time, its iteration compiled for the
 * build target, the reason for json_eval-haswell). */
void sj_dom_walk(const simdjson::padded_string &ps, Acc *acc)
{
    using namespace simdjson;
    static dom::parser parser;
    Work w{acc, {}};
    dom::element doc = parser.parse(ps);
    if (std::string_view(doc["status"].get_string()) != "success" ||
        std::string_view(doc["data"]["resultType"].get_string()) != "matrix")
        die("simdjson-dom: shape");
    for (dom::element item : doc["data"]["result"].get_array()) {
        dom::object series = item.get_object();
        if (series.size() != 2)
            die("simdjson-dom: series keys");
        for (dom::key_value_pair kv : series["metric"].get_object()) {
            std::string_view v = kv.value.get_string();
            w.label(kv.key.data(), kv.key.size(), v.data(), v.size());
        }
        for (dom::element smp : series["values"].get_array()) {
            dom::array a = smp.get_array();
            if (a.size() != 2)
                die("simdjson-dom: sample");
            dom::element t = a.at(0);
            int64_t ts = t.is_int64() ? int64_t(t.get_int64()) : ts_double(t.get_double());
            std::string_view v = a.at(1).get_string();
            w.sample(ts, v.data(), v.size());
        }
        w.series_end();
    }
}

void run_simdjson_dom(const Body &b, Acc *acc)
{
    simdjson::padded_string ps(b.json.data(), b.json.size());
    sj_dom_walk(ps, acc);
}

/* ---- (e) cJSON tree ---- */

void run_cjson(const Body &b, Acc *acc)
{
    Work w{acc, {}};
    cJSON *root = cJSON_ParseWithLength(b.json.data(), b.json.size());
    if (!root)
        die("cjson: parse error");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "status");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    const cJSON *rt = cJSON_GetObjectItemCaseSensitive(data, "resultType");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(data, "result");
    if (!cJSON_IsString(st) || strcmp(st->valuestring, "success") || !cJSON_IsString(rt) ||
        strcmp(rt->valuestring, "matrix") || !cJSON_IsArray(res))
        die("cjson: shape");
    for (const cJSON *it = res->child; it; it = it->next) {
        const cJSON *metric = cJSON_GetObjectItemCaseSensitive(it, "metric");
        const cJSON *values = cJSON_GetObjectItemCaseSensitive(it, "values");
        for (const cJSON *l = metric ? metric->child : nullptr; l; l = l->next) {
            if (!cJSON_IsString(l))
                die("cjson: label");
            w.label(l->string, strlen(l->string), l->valuestring, strlen(l->valuestring));
        }
        for (const cJSON *s = values ? values->child : nullptr; s; s = s->next) {
            const cJSON *t = s->child, *v = t ? t->next : nullptr;
            if (!cJSON_IsNumber(t) || !cJSON_IsString(v) || v->next)
                die("cjson: sample");
            w.sample(ts_double(t->valuedouble), v->valuestring, strlen(v->valuestring));
        }
        w.series_end();
    }
    cJSON_Delete(root);
}

/* ---- (a) the engine ---- */

void run_engine(const Body &b, Acc *acc)
{
    if (json_eval_engine(b.json.data(), b.json.size(), b.start, b.step, b.nsteps, &acc->a))
        die("engine: parse error");
}

/* ---- inflaters (of the body as Prometheus sends it) ---- */

struct Inflated {
    size_t bytes = 0;
    const std::string *check = nullptr; /* compare the output with this */
    bool same = true;
    void piece(const unsigned char *d, size_t n)
    {
        if (check && (bytes + n > check->size() || memcmp(check->data() + bytes, d, n)))
            same = false;
        bytes += n;
    }
};

void inflate_zlib(const Body &b, Inflated *out)
{
    z_stream zs{};
    if (inflateInit2(&zs, 15 + 32) != Z_OK) /* zlib or gzip, as libcurl accepts */
        die("inflateInit");
    unsigned char buf[PIECE];
    zs.next_in = (unsigned char *)b.z.data();
    zs.avail_in = (uInt)b.z.size();
    int rc;
    do {
        zs.next_out = buf;
        zs.avail_out = sizeof buf;
        rc = inflate(&zs, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END)
            die("inflate: " + std::to_string(rc));
        out->piece(buf, sizeof buf - zs.avail_out);
    } while (rc != Z_STREAM_END);
    inflateEnd(&zs);
}

void inflate_libdeflate(const Body &b, Inflated *out)
{
    /* whole-buffer only: the output size must be known (here: from the manifest) */
    static libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    std::vector<unsigned char> o(b.json.size());
    size_t n = 0;
    enum libdeflate_result r =
        b.encoding == "gzip"
            ? libdeflate_gzip_decompress(d, b.z.data(), b.z.size(), o.data(), o.size(), &n)
            : libdeflate_zlib_decompress(d, b.z.data(), b.z.size(), o.data(), o.size(), &n);
    if (r != LIBDEFLATE_SUCCESS)
        die("libdeflate: " + std::to_string(r));
    out->piece(o.data(), n);
}

void inflate_isal(const Body &b, Inflated *out)
{
    inflate_state st;
    isal_inflate_init(&st);
    st.crc_flag = b.encoding == "gzip" ? ISAL_GZIP : ISAL_ZLIB; /* checks adler32/crc32 */
    st.next_in = (uint8_t *)b.z.data();
    st.avail_in = (uint32_t)b.z.size();
    unsigned char buf[PIECE];
    do {
        st.next_out = buf;
        st.avail_out = sizeof buf;
        int rc = isal_inflate(&st);
        if (rc != ISAL_DECOMP_OK)
            die("isal_inflate: " + std::to_string(rc));
        out->piece(buf, sizeof buf - st.avail_out);
    } while (st.block_state != ISAL_BLOCK_FINISH);
}

/* ---- driver ---- */

typedef void (*ParseFn)(const Body &, Acc *);
typedef void (*InflateFn)(const Body &, Inflated *);
struct Parser { const char *name; ParseFn fn; };
struct Inflater { const char *name; InflateFn fn; };

const Parser parsers[] = {
    {"engine", run_engine},
    {"yajl", run_yajl},
    {"simdjson", run_simdjson},
    {"simdjson-dom", run_simdjson_dom},
    {"rapidjson", run_rapidjson},
    {"rapidjson-insitu", run_rapidjson_insitu},
    {"rapidjson-chunked", run_rapidjson_chunked},
    {"rapidjson-iter", run_rapidjson_iter},
    {"cjson", run_cjson},
    {"boostjson", run_boostjson},
};
const Inflater inflaters[] = {
    {"zlib", inflate_zlib}, {"libdeflate", inflate_libdeflate}, {"isal", inflate_isal}};

std::string slurp(const std::string &p)
{
    std::ifstream f(p, std::ios::binary);
    if (!f)
        die("cannot read " + p);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

std::vector<Body> load(const std::string &dir, bool contents = true)
{
    std::ifstream mf(dir + "/manifest.tsv");
    if (!mf)
        die("no " + dir + "/manifest.tsv");
    std::vector<Body> v;
    std::string line;
    while (std::getline(mf, line)) {
        if (line.empty())
            continue;
        std::istringstream ls(line);
        Body b;
        size_t jb, zb;
        ls >> b.name >> b.start >> b.step >> b.nsteps >> b.encoding >> jb >> zb;
        if (contents) {
            b.json = slurp(dir + "/" + b.name + ".json");
            b.z = slurp(dir + "/" + b.name + ".z");
            if (b.json.size() != jb || b.z.size() != zb)
                die("sizes differ from the manifest: " + b.name);
        } else {
            b.json.assign(jb, '\0'); /* the size only */
        }
        v.push_back(std::move(b));
    }
    return v;
}

double cpu_now()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

long maxrss_kib()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

const Parser *find_parser(const std::string &n)
{
    for (const Parser &p : parsers)
        if (n == p.name)
            return &p;
    return nullptr;
}

const Inflater *find_inflater(const std::string &n)
{
    for (const Inflater &p : inflaters)
        if (n == p.name)
            return &p;
    return nullptr;
}

/* One pass over every body with parser or inflater `what`; returns the
 * samples (parsers) or decompressed bytes (inflaters). */
size_t pass(const std::string &what, const std::vector<Body> &bodies, Acc *acc, Inflated *inf)
{
    if (const Parser *p = find_parser(what)) {
        for (const Body &b : bodies)
            p->fn(b, acc);
        return acc->a.samples;
    }
    if (const Inflater *z = find_inflater(what)) {
        for (const Body &b : bodies)
            z->fn(b, inf);
        return inf->bytes;
    }
    die("unknown parser or inflater " + what);
}

int check(const std::string &dir)
{
    /* both find structure with the kernel picked at run time; On Demand's
     * iteration is compiled for the build's target (json_eval-haswell: AVX2) */
    printf("simdjson stage 1 kernel (run time, DOM and On Demand): %s\n",
           simdjson::get_active_implementation()->name().c_str());
    std::vector<Body> bodies = load(dir);
    size_t bytes = 0;
    for (const Body &b : bodies)
        bytes += b.json.size();
    int bad = 0;
    Acc ref;
    bool first = true;
    double ts_ref = 0;
    bool have_ts = false;
    for (const Parser &p : parsers) {
        Acc acc;
        pass(p.name, bodies, &acc, nullptr);
        printf("check %-18s series %zu samples %zu labels %zu label-bytes %zu sum %.17g\n",
               p.name, acc.a.series, acc.a.samples, acc.a.labels, acc.a.label_bytes, acc.a.sum);
        if (first) {
            ref = acc;
            first = false;
        } else if (acc.a.series != ref.a.series || acc.a.samples != ref.a.samples ||
                   acc.a.labels != ref.a.labels || acc.a.label_bytes != ref.a.label_bytes ||
                   acc.a.sum != ref.a.sum) {
            printf("MISMATCH: %s differs from %s\n", p.name, parsers[0].name);
            bad = 1;
        }
        if (strcmp(p.name, "engine") != 0) {
            if (have_ts && acc.ts_sum != ts_ref) {
                printf("MISMATCH: %s timestamps differ\n", p.name);
                bad = 1;
            }
            ts_ref = acc.ts_sum;
            have_ts = true;
        }
    }
    for (const Inflater &z : inflaters) {
        Inflated inf;
        size_t n = 0;
        bool same = true;
        for (const Body &b : bodies) {
            Inflated one;
            one.check = &b.json;
            z.fn(b, &one);
            same = same && one.same && one.bytes == b.json.size();
            n += one.bytes;
        }
        printf("check %-18s inflated %zu bytes of %zu: %s\n", z.name, n, bytes,
               same ? "identical" : "DIFFERENT");
        if (!same)
            bad = 1;
    }
    if (ref.a.samples == 0) {
        printf("MISMATCH: no samples\n");
        bad = 1;
    }
    printf(bad ? "check: FAILED\n" : "check: all parsers agree\n");
    return bad;
}

int count(const std::string &what, const std::string &dir)
{
    std::vector<Body> bodies = load(dir);
    Acc acc;
    Inflated inf;
    CALLGRIND_TOGGLE_COLLECT;
    size_t n = pass(what, bodies, &acc, &inf);
    CALLGRIND_TOGGLE_COLLECT;
    printf("count %s units %zu\n", what.c_str(), n);
    return 0;
}

int timeit(const std::string &what, const std::string &dir, int reps)
{
    std::vector<Body> bodies = load(dir);
    double best = 1e30;
    size_t n = 0;
    for (int r = 0; r < reps; r++) {
        Acc acc;
        Inflated inf;
        double t0 = cpu_now();
        n = pass(what, bodies, &acc, &inf);
        best = std::min(best, cpu_now() - t0);
    }
    printf("time %s units %zu cpu_s %.6f\n", what.c_str(), n, best);
    return 0;
}

/* Peak RSS increase for the largest body, read from its file as the
 * parser needs it: streaming ones in 16 KiB pieces, the others whole. */
int rss(const std::string &what, const std::string &dir)
{
    std::vector<Body> meta = load(dir, false);
    const Body *big = &meta[0];
    for (const Body &b : meta)
        if (b.json.size() > big->json.size())
            big = &b;
    std::string path = dir + "/" + big->name + ".json";
    Acc acc;
    (void)sj_parser();
    long before = maxrss_kib();
    FILE *f = fopen(path.c_str(), "rb");
    if (!f)
        die("cannot open " + path);
    char piece[PIECE];
    size_t n;
    if (what == "engine") {
        if (json_eval_engine_file(f, big->start, big->step, big->nsteps, &acc.a))
            die("engine: parse error");
    } else if (what == "boostjson") {
        BoostFeed bf(&acc);
        while ((n = fread(piece, 1, sizeof piece, f)) > 0)
            bf.feed(piece, n, true);
        bf.finish();
    } else if (what == "yajl") {
        Yajl y(&acc);
        while ((n = fread(piece, 1, sizeof piece, f)) > 0)
            y.feed(piece, n);
        y.finish();
    } else if (what == "rapidjson-chunked") {
        FileSrc src{f};
        ChunkStream<FileSrc> s(src);
        rj_parse<rapidjson::kParseNoFlags>(s, &acc);
    } else if (what == "simdjson") {
        /* the body grown piece by piece into one padded buffer */
        std::vector<char> body;
        while ((n = fread(piece, 1, sizeof piece, f)) > 0)
            body.insert(body.end(), piece, piece + n);
        size_t len = body.size();
        body.resize(len + simdjson::SIMDJSON_PADDING);
        sj_walk(simdjson::padded_string_view(body.data(), len, body.size()), &acc);
    } else if (find_parser(what)) {
        Body b = *big;
        b.json.clear();
        while ((n = fread(piece, 1, sizeof piece, f)) > 0)
            b.json.append(piece, n);
        find_parser(what)->fn(b, &acc);
    } else {
        die("unknown parser " + what);
    }
    fclose(f);
    long after = maxrss_kib();
    printf("rss %s body %zu bytes samples %zu rss_before_kib %ld rss_after_kib %ld increase_mib "
           "%.1f\n", what.c_str(), big->json.size(), acc.a.samples, before, after,
           (after - before) / 1024.0);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    try {
        std::string mode = argc > 1 ? argv[1] : "";
        if (mode == "check" && argc == 3)
            return check(argv[2]);
        if (mode == "count" && argc == 4)
            return count(argv[2], argv[3]);
        if (mode == "time" && (argc == 4 || argc == 5))
            return timeit(argv[2], argv[3], argc == 5 ? atoi(argv[4]) : 5);
        if (mode == "rss" && argc == 4)
            return rss(argv[2], argv[3]);
        fprintf(stderr, "usage: json_eval check DIR | count WHAT DIR | time WHAT DIR [N] | "
                        "rss PARSER DIR\n");
        return 2;
    } catch (const std::exception &e) {
        fprintf(stderr, "json_eval: %s\n", e.what());
        return 1;
    }
}
