#!/usr/bin/env python3
"""faultserver.py - a small fault-injecting Prometheus API on 127.0.0.1.

It serves /api/v1/query_range for one fixed GPU fleet (the model below) and,
by `mode`, garbles the answer the way broken backends, proxies and hostile
networks do: for failures a real Prometheus cannot produce on demand.

The fleet (every step of any window, on the requested grid):
  one A100 80GB (UUID GPU-1, node n1); pod ns-x/p (team alpha) uses
  USED_MIB MiB; FB_FREE FREE_MIB, FB_RESERVED RESERVED_MIB on the same
  series; kube_pod_labels label_team=alpha; one nvidia_com_gpu requested;
  GR_ENGINE_ACTIVE BUSY; no GPU_UTIL.

Modes (MODES lists them; each names the query it garbles, "*" = every query):
  good, trailing_garbage, two_documents, duplicate_status, duplicate_data,
  nul_byte, nul_escape_value, hex_value, sample_object, invalid_utf8_label,
  invalid_utf8_team, duplicate_timestamp, off_grid, out_of_window, warnings,
  vm_partial, implausible (1e13 MiB and a busy ratio of 1e9 at some steps),
  big_content_length (BIG_BYTES of valid JSON with Content-Length),
  big_chunked (BIG_CHUNKED_BYTES, chunked), gzip_bomb
  (BOMB_BYTES decompressed, Content-Encoding: gzip), gzip_second_member (the
  gzip answer followed by a second gzip member with 5000 MiB), gzip_garbage
  (the gzip answer followed by bytes that are not gzip), partial_content (the
  whole answer as HTTP 206 with a Content-Range), retry_after_300,
  retry_after_date (600 s ahead), retry_after_huge (Retry-After:
  99999999999999999999, beyond any integer type), retry_after_once (429 with
  Retry-After: 1, then good),
  echo_headers / echo_headers_json (HTTP 400 whose body echoes the request
  headers).

Every request is recorded in `requests` as (path, params dict, headers dict).
Run alone: python3 faultserver.py --mode MODE (prints the URL, serves until
interrupted).
"""

import argparse
import email.utils
import json
import os
import sys
import threading
import time
import urllib.parse
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

USED_MIB = 1000
FREE_MIB = 79000
RESERVED_MIB = 920
BUSY = "0.5"
BIG_BYTES = 65 << 20       # 65 MiB: above the 64 MiB default cap
BIG_CHUNKED_BYTES = 2 << 20  # 2 MiB: above a 1 MiB cap
BOMB_BYTES = 100 << 20     # 100 MiB decompressed: above the 64 MiB default

DEVICE = {"gpu": "0", "UUID": "GPU-1", "device": "nvidia0",
          "modelName": "NVIDIA A100-SXM4-80GB", "Hostname": "n1"}
POD = {"container": "c", "namespace": "ns-x", "pod": "p"}

MODES = {
    "good": None,
    "trailing_garbage": "fb_used", "two_documents": "fb_used",
    "duplicate_status": "fb_used", "duplicate_data": "fb_used",
    "nul_byte": "fb_used", "nul_escape_value": "fb_used", "hex_value": "fb_used",
    "sample_object": "fb_used", "invalid_utf8_label": "fb_used",
    "invalid_utf8_team": "pod_labels", "duplicate_timestamp": "fb_used",
    "off_grid": "fb_used", "out_of_window": "fb_used", "warnings": "fb_used",
    "vm_partial": "fb_used", "implausible": "fb_used+busy",
    "big_content_length": "fb_used", "big_chunked": "fb_used", "gzip_bomb": "fb_used",
    "gzip_second_member": "fb_used", "gzip_garbage": "fb_used", "partial_content": "fb_used",
    "retry_after_300": "*", "retry_after_date": "*", "retry_after_huge": "*",
    "retry_after_once": "*",
    "echo_headers": "*", "echo_headers_json": "*",
}

# the first implausible samples: steps 3 and 4 of each series
IMPLAUSIBLE_STEPS = (3, 4)


def classify(query):
    """Which query of the engine this PromQL is (by its metric names)."""
    for needle, name in (("kube_pod_container_resource_requests", "allocation"),
                         ("kube_pod_status_phase", "pod_phase"),
                         ("DCGM_FI_DEV_FB_USED", "fb_used"), ("DCGM_FI_DEV_FB_FREE", "fb_free"),
                         ("DCGM_FI_DEV_FB_RESERVED", "fb_reserved"),
                         ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "busy"),
                         ("DCGM_FI_DEV_GPU_UTIL", "gpu_util"), ("kube_pod_labels", "pod_labels"),
                         ("kube_namespace_labels", "namespace_labels"),
                         ("kube_node_labels", "node_labels")):
        if needle in query:
            return name
    return "other"


def series_of(which):
    """[(labels, value text)] of a query in the model (one value for all steps)."""
    dcgm = lambda name, v: (dict({"__name__": name}, **DEVICE, **POD), v)  # noqa: E731
    return {
        "fb_used": [dcgm("DCGM_FI_DEV_FB_USED", str(USED_MIB))],
        "fb_free": [dcgm("DCGM_FI_DEV_FB_FREE", str(FREE_MIB))],
        "fb_reserved": [dcgm("DCGM_FI_DEV_FB_RESERVED", str(RESERVED_MIB))],
        "busy": [dcgm("DCGM_FI_PROF_GR_ENGINE_ACTIVE", BUSY)],
        "pod_labels": [({"__name__": "kube_pod_labels", "namespace": "ns-x", "pod": "p",
                         "uid": "u-1", "label_team": "alpha"}, "1")],
        "namespace_labels": [({"__name__": "kube_namespace_labels", "namespace": "ns-x"}, "1")],
        "node_labels": [({"__name__": "kube_node_labels", "node": "n1"}, "1")],
        "allocation": [({"namespace": "ns-x", "pod": "p", "node": "n1",
                         "resource": "nvidia_com_gpu"}, "1")],
        "pod_phase": [({"__name__": "kube_pod_status_phase", "namespace": "ns-x", "pod": "p",
                        "phase": "Running"}, "1")],
    }.get(which, [])


def j(s):
    return json.dumps(s)


def render(series, stamps, extra_root=""):
    """A matrix body (bytes) from [(labels, [(ts text, value text)])]."""
    parts = []
    for labels, samples in series:
        metric = ",".join("%s:%s" % (j(k), j(v)) for k, v in labels.items())
        values = ",".join("[%s,%s]" % (t, j(v)) for t, v in samples)
        parts.append('{"metric":{%s},"values":[%s]}' % (metric, values))
    return ('{"status":"success","data":{"resultType":"matrix","result":[%s]}%s}'
            % (",".join(parts), extra_root)).encode()


class FaultServer(harness.LoopbackServer):
    """The fault server in a thread of the test (mode settable at any time)."""

    def __init__(self, mode="good"):
        self.mode = mode
        self.requests = []
        self.lock = threading.Lock()
        self.once = set()
        self._bomb = None
        super().__init__()
        # a client hanging up at its cap is expected here: no tracebacks
        self.httpd.handle_error = lambda request, address: None

    def set_mode(self, mode):
        if mode not in MODES:
            raise ValueError("unknown mode %s" % mode)
        with self.lock:
            self.mode = mode
            self.once = set()
            self.requests = []

    # ------------------------------------------------------------ HTTP

    def handle(self, h, body):
        u = urllib.parse.urlsplit(h.path)
        params = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query,
                                                             keep_blank_values=True).items()}
        with self.lock:
            self.requests.append((u.path, params, dict(h.headers.items())))
            mode = self.mode
        if u.path == "/api/v1/query":
            return self.reply(h, 200, b'{"status":"success","data":{"resultType":"vector",'
                                      b'"result":[]}}')
        if u.path != "/api/v1/query_range":
            return self.reply(h, 404, b"not found", "text/plain")
        which = classify(params.get("query", ""))
        start, end, step = int(params["start"]), int(params["end"]), int(params["step"])
        grid = list(range(start, end + 1, step))
        target = MODES[mode]
        hit = target == "*" or (target and which in target.split("+"))
        if not hit:
            return self.reply(h, 200, self.good(which, grid))
        return getattr(self, "m_" + mode)(h, which, grid, start, end, step)

    def good(self, which, grid, value=None):
        return render([(labels, [(str(t), value or v) for t in grid])
                       for labels, v in series_of(which)], grid)

    @staticmethod
    def reply_raw(h, status, body, headers=()):
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    # ------------------------------------------------------------ garblings

    def m_trailing_garbage(self, h, which, grid, *w):
        self.reply(h, 200, self.good(which, grid) + b"\n<html><body>502 Bad Gateway</body></html>")

    def m_two_documents(self, h, which, grid, *w):
        self.reply(h, 200, self.good(which, grid) + self.good(which, grid, "5000"))

    def m_duplicate_status(self, h, which, grid, *w):
        body = self.good(which, grid)
        self.reply(h, 200, body.replace(b'{"status":"success"',
                                        b'{"status":"success","status":"error"', 1))

    def m_duplicate_data(self, h, which, grid, *w):
        # a lenient parser takes the second data (5000 MiB): the totals change
        first = self.good(which, grid)
        second = self.good(which, grid, "5000")
        data2 = second[second.index(b'"data":'):-1]
        self.reply(h, 200, first[:-1] + b"," + data2 + b"}")

    def m_nul_byte(self, h, which, grid, *w):
        body = self.good(which, grid)
        self.reply(h, 200, body.replace(b'"%d"' % USED_MIB, b'"%d\x00"' % USED_MIB, 1))

    def m_nul_escape_value(self, h, which, grid, *w):
        body = self.good(which, grid)
        self.reply(h, 200, body.replace(b'"%d"' % USED_MIB, b'"20000\\u0000junk"', 1))

    def m_hex_value(self, h, which, grid, *w):
        body = self.good(which, grid)
        self.reply(h, 200, body.replace(b'"%d"' % USED_MIB, b'"0x3e8"', 1))

    def m_sample_object(self, h, which, grid, *w):
        series = [(labels, [(t, v) for t in grid]) for labels, v in series_of(which)]
        parts = []
        for labels, samples in series:
            metric = ",".join("%s:%s" % (j(k), j(v)) for k, v in labels.items())
            values = ",".join('{"timestamp":%d,"value":%s}' % (t, j(v)) for t, v in samples)
            parts.append('{"metric":{%s},"values":[%s]}' % (metric, values))
        self.reply(h, 200, ('{"status":"success","data":{"resultType":"matrix","result":[%s]}}'
                            % ",".join(parts)).encode())

    def m_invalid_utf8_label(self, h, which, grid, *w):
        body = self.good(which, grid)
        self.reply(h, 200, body.replace(b'"pod":"p"', b'"pod":"p\xff\xfe"', 1))

    def m_invalid_utf8_team(self, h, which, grid, *w):
        body = self.good(which, grid)
        self.reply(h, 200, body.replace(b'"label_team":"alpha"', b'"label_team":"alpha\xc3"', 1))

    def m_duplicate_timestamp(self, h, which, grid, *w):
        # the instant of step 5 twice, the second with 9000 MiB (last wins)
        labels, v = series_of(which)[0]
        samples = [(str(t), v) for t in grid]
        samples.insert(6, (str(grid[5]), "9000"))
        self.reply(h, 200, render([(labels, samples)], grid))

    def m_off_grid(self, h, which, grid, *w):
        labels, v = series_of(which)[0]
        self.reply(h, 200, render([(labels, [(str(t + 30), v) for t in grid])], grid))

    def m_out_of_window(self, h, which, grid, start, end, step):
        labels, v = series_of(which)[0]
        samples = [(str(t), v) for t in grid] + [(str(end + step), v)]
        self.reply(h, 200, render([(labels, samples)], grid))

    def m_warnings(self, h, which, grid, *w):
        body = self.good(which, grid)
        self.reply(h, 200, body[:-1] + b',"warnings":["No StoreAPIs matched for this query",'
                                        b'"receive-eu-2: rpc error: code = Unavailable"]}')

    def m_vm_partial(self, h, which, grid, *w):
        body = self.good(which, grid)
        self.reply(h, 200, b'{"status":"success","isPartial":true,' + body[len(b'{"status":"success",'):])

    def m_implausible(self, h, which, grid, *w):
        labels, v = series_of(which)[0]
        bad = "10000000000000" if which == "fb_used" else "1000000000"
        samples = [(str(t), bad if i in IMPLAUSIBLE_STEPS else v) for i, t in enumerate(grid)]
        self.reply(h, 200, render([(labels, samples)], grid))

    def big_body(self, which, grid, size):
        """Valid JSON of size bytes: the good answer padded with white space."""
        body = self.good(which, grid)
        return body[:-1] + b" " * (size - len(body)) + b"}"

    def m_big_content_length(self, h, which, grid, *w):
        try:
            self.reply(h, 200, self.big_body(which, grid, BIG_BYTES))
        except OSError:
            pass  # the engine hung up on the Content-Length

    def m_big_chunked(self, h, which, grid, *w):
        body = self.big_body(which, grid, BIG_CHUNKED_BYTES)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            for i in range(0, len(body), 65536):
                piece = body[i:i + 65536]
                h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            h.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the engine hung up at its cap

    def bomb(self, which, grid):
        """gzip of a valid response padded to BOMB_BYTES with spaces."""
        if self._bomb is None:
            body = self.good(which, grid)
            c = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip container
            out = [c.compress(body[:-1])]
            pad = b" " * (1 << 20)
            for _ in range(BOMB_BYTES // len(pad)):
                out.append(c.compress(pad))
            out.append(c.compress(b"}"))
            out.append(c.flush())
            self._bomb = b"".join(out)
        return self._bomb

    def m_gzip_bomb(self, h, which, grid, *w):
        z = self.bomb(which, grid)
        try:
            self.reply(h, 200, z, extra=(("Content-Encoding", "gzip"),))
        except OSError:
            pass

    @staticmethod
    def gzip(body):
        c = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip container
        return c.compress(body) + c.flush()

    def m_gzip_second_member(self, h, which, grid, *w):
        # gunzip would concatenate the members: a lenient client parses two
        # documents or, keeping the first, ignores what the server said last
        z = self.gzip(self.good(which, grid)) + self.gzip(self.good(which, grid, "5000"))
        self.reply(h, 200, z, extra=(("Content-Encoding", "gzip"),))

    def m_gzip_garbage(self, h, which, grid, *w):
        z = self.gzip(self.good(which, grid)) + b"\n<html>502 Bad Gateway</html>\n"
        self.reply(h, 200, z, extra=(("Content-Encoding", "gzip"),))

    def m_partial_content(self, h, which, grid, *w):
        body = self.good(which, grid)
        self.reply(h, 206, body, extra=(("Content-Range", "bytes 0-%d/%d" % (
            len(body) - 1, 2 * len(body))),))

    def too_many(self, h, retry_after):
        self.reply(h, 429, b'{"status":"error","errorType":"too_many_requests",'
                           b'"error":"slow down"}', extra=(("Retry-After", retry_after),))

    def m_retry_after_300(self, h, *a):
        self.too_many(h, "300")

    def m_retry_after_date(self, h, *a):
        self.too_many(h, email.utils.formatdate(time.time() + 600, usegmt=True))

    def m_retry_after_huge(self, h, *a):
        self.too_many(h, "99999999999999999999")

    def m_retry_after_once(self, h, which, grid, *w):
        key = (which, grid[0])
        with self.lock:
            first = key not in self.once
            self.once.add(key)
        if first:
            self.too_many(h, "1")
        else:
            self.reply(h, 200, self.good(which, grid))

    def m_echo_headers(self, h, *a):
        # Authorization first: an excerpt cut after a few hundred bytes has it
        items = sorted(h.headers.items(), key=lambda kv: kv[0].lower() != "authorization")
        lines = "\r\n".join("%s: %s" % kv for kv in items)
        self.reply(h, 400, ("Bad Request. We received these headers:\r\n%s\r\n" % lines).encode(),
                   "text/plain")

    def m_echo_headers_json(self, h, *a):
        hdrs = " ".join("%s:[%s]" % kv for kv in h.headers.items())
        auth = h.headers.get("Authorization", "")
        token = auth.split(" ", 1)[1] if " " in auth else auth
        self.reply(h, 400, json.dumps({
            "status": "error", "errorType": "bad_data",
            "error": "invalid request map[%s] (retry with ?access_token=%s&password=%s)"
                     % (hdrs, token, token)}).encode())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="good", choices=sorted(MODES))
    args = ap.parse_args()
    srv = FaultServer(args.mode)
    print(srv.url(), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.close()


if __name__ == "__main__":
    main()
