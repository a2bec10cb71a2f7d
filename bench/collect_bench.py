#!/usr/bin/env python3
"""collect_bench.py - measuring half of bench/collect.sh (stdlib only).

Usage: python3 bench/collect_bench.py --bin build/gpuledger --url http://127.0.0.1:PORT
           --gen DIR --queries DIR --work DIR [--repeat N]

DIR (--gen) is a tests/gen/gencluster.py output (config.json, prices.csv,
expected.json); Prometheus at --url already serves its data.

1. Discovery (not timed): one `gpuledger collect` of the window through a
   small recording HTTP proxy in front of Prometheus; the requests the engine
   made, in order, are the floor's request list (so the floor follows the
   engine when it learns new queries). They are cross-checked against the
   issue's description: per chunk of collection.chunk_hours from window.from,
   query_range of fb_used (the memory_source query), fb_free, fb_reserved,
   pod_labels and namespace_labels (queries/*.promql, comment lines dropped,
   ${cluster_selector} -> ""), start=chunk start, end=chunk end - step.
2. Warm-up (not timed): one curl pass saving the bodies; the samples are
   counted there: the number of [t, v] values (matrix) or results (vector) in
   all answers of all requests.
3. N rounds, each: `gpuledger collect --from --to` into a fresh database and
   one curl process fetching the same requests sequentially to /dev/null
   (same Accept and Accept-Encoding headers as the engine, the latter as
   recorded in discovery: prometheus.compression; the connection is reused
   and a compressed body decoded, like libcurl in the engine), both under
   /usr/bin/time -v; when the engine had K > 1 requests in flight during the
   discovery run, also one curl --parallel --parallel-max K pass (the
   parallel floor); the order rotates between rounds.
4. After every engine run, `invoice --format json` totals are compared with
   expected.json (exact strings) per team; idle/overhead lines on a platform
   invoice are compared with the sum of the expected fleet line amounts.
Prints the table on stdout; progress on stderr. Exit 1 on any failure.
"""

import argparse
import calendar
import http.client
import http.server
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from decimal import Decimal

FLEET_KINDS = ("idle_share", "overhead_share")


def log(msg):
    sys.stderr.write("# %s %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def parse_time(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def promql(path):
    """The query text as engine/base/config.c gl_config_query builds it."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if line.strip() and not line.lstrip().startswith("#"):
                out.append(line.replace("${cluster_selector}", "") + " ")
    return "".join(out).rstrip(" ")  # the engine drops the trailing blank


def time_v(cmd, timefile, stdout, stderr, timeout):
    """Run cmd under /usr/bin/time -v; returns (rc, wall_s, maxrss_kib, cpu_s)."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(["/usr/bin/time", "-v", "-o", timefile] + cmd,
                           stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                           timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = -1
    wall = time.perf_counter() - t0
    rss = cpu = None
    try:
        text = open(timefile).read()
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
        rss = int(m.group(1)) if m else None
        u = re.search(r"User time \(seconds\): ([\d.]+)", text)
        s = re.search(r"System time \(seconds\): ([\d.]+)", text)
        if u and s:
            cpu = float(u.group(1)) + float(s.group(1))
        m = re.search(r"Exit status: (\d+)", text)
        if m and rc == 0:
            rc = int(m.group(1))
    except OSError:
        pass
    return rc, wall, rss, cpu


def tail(path, n=800):
    try:
        text = open(path, errors="replace").read().strip()
    except OSError:
        return ""
    return text if len(text) <= n else "..." + text[-n:]


class RecordingProxy:
    """HTTP/1.1 proxy on 127.0.0.1 that relays requests to `upstream` and
    records (method, path-with-query) in arrival order."""

    def __init__(self, upstream):
        u = urllib.parse.urlsplit(upstream)
        self.host, self.port = u.hostname, u.port or 80
        self.requests = []
        self.encodings = set()  # the Accept-Encoding headers seen ("" when absent)
        self.in_flight = self.max_in_flight = 0
        lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def relay(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                with lock:
                    outer.requests.append((self.command, self.path))
                    outer.encodings.add(self.headers.get("Accept-Encoding", ""))
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                hdrs = {k: v for k, v in self.headers.items()
                        if k.lower() in ("accept", "accept-encoding", "content-type",
                                         "authorization", "user-agent")}
                c = http.client.HTTPConnection(outer.host, outer.port, timeout=300)
                try:
                    c.request(self.command, self.path, body=body, headers=hdrs)
                    r = c.getresponse()
                    data = r.read()
                    self.send_response(r.status)
                    for k, v in r.getheaders():
                        if k.lower() in ("content-type", "content-encoding", "retry-after"):
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    c.close()
                    with lock:
                        outer.in_flight -= 1

            do_GET = do_POST = relay

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def first_metric(query):
    m = re.search(r"\b(DCGM_\w+|kube_\w+|hami_\w+|[a-zA-Z_:][\w:]*\{)", query)
    return m.group(1).rstrip("{") if m else query[:30]


class Bench:
    def __init__(self, a):
        self.a = a
        self.work = os.path.abspath(a.work)
        os.makedirs(self.work, exist_ok=True)
        gen = os.path.abspath(a.gen)
        with open(os.path.join(gen, "expected.json")) as f:
            self.exp = json.load(f)
        with open(os.path.join(gen, "config.json")) as f:
            cfg = json.load(f)
        cfg["prices"]["file"] = os.path.join(gen, "prices.csv")
        cfg.setdefault("collection", {})["queries_dir"] = os.path.abspath(a.queries)
        self.cfg = cfg
        self.cfg_path = self.write_config("gpuledger.json", a.url)
        col = cfg["collection"]
        self.step = int(col.get("step_seconds", 60))
        self.chunk = int(col.get("chunk_hours", 6)) * 3600
        mem = cfg.get("memory_source", {}).get("query", "fb_used")
        self.wfrom, self.wto = self.exp["window"]["from"], self.exp["window"]["to"]
        # the issue's description of the engine's requests (checked in discover())
        self.issue_requests = []
        f0, t0 = parse_time(self.wfrom), parse_time(self.wto)
        names = [mem, "fb_free", "fb_reserved", "pod_labels", "namespace_labels"]
        texts = {n: promql(os.path.join(a.queries, n + ".promql")) for n in names}
        cs = f0
        while cs < t0:
            ce = min(cs + self.chunk, t0)
            for n in names:
                self.issue_requests.append("/api/v1/query_range?query=%s&start=%d&end=%d&step=%d" % (
                    urllib.parse.quote(texts[n], safe=""), cs, ce - self.step, self.step))
            cs = ce
        self.nchunks = len(self.issue_requests) // len(names)
        # file name of each query text, for the per-query breakdown
        self.file_of = {}
        for fn in sorted(os.listdir(a.queries)):
            if fn.endswith(".promql"):
                self.file_of.setdefault(first_metric(promql(os.path.join(a.queries, fn))),
                                        fn[:-len(".promql")])
        self.requests = []      # [(label, url)] filled by discover()
        self.failed = False

    def write_config(self, name, url):
        cfg = json.loads(json.dumps(self.cfg))
        cfg["prometheus"]["url"] = url
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
        return path

    def label(self, path):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query).get("query", [""])[0]
        m = first_metric(q)
        return self.file_of.get(m, m)

    # ---- discovery: the engine's own requests, through a recording proxy
    def discover(self):
        proxy = RecordingProxy(self.a.url)
        try:
            cfg = self.write_config("gpuledger-discover.json", proxy.url)
            db = os.path.join(self.work, "discover.db")
            errf = os.path.join(self.work, "engine-discover.log")
            t0 = time.perf_counter()
            with open(errf, "w") as se:
                p = subprocess.run([self.a.bin, "--config", cfg, "--db", db, "collect",
                                    "--from", self.wfrom, "--to", self.wto],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=se, timeout=1800)
            wall = time.perf_counter() - t0
        finally:
            proxy.close()
        if p.returncode != 0:
            raise RuntimeError("gpuledger collect (discovery run through the proxy): exit %s; "
                               "stderr: %s" % (p.returncode, tail(errf)))
        recorded = proxy.requests
        other = [r for r in recorded if r[0] != "GET"]
        if other:
            raise RuntimeError("the engine made non-GET requests %s; the curl floor replays "
                               "GETs only" % other[:3])
        paths = [pth for _, pth in recorded]
        self.requests = [(self.label(pth), self.a.url + pth) for pth in paths]
        self.issue_set = set(self.issue_requests)
        seen = set(paths)
        missing = [pth for pth in self.issue_requests if pth not in seen]
        extra = {}
        for pth in paths:
            if pth not in self.issue_set:
                extra[self.label(pth)] = extra.get(self.label(pth), 0) + 1
        self.extra = extra
        self.max_in_flight = proxy.max_in_flight
        # the engine's Accept-Encoding (prometheus.compression): curl asks the same
        enc = sorted(proxy.encodings)
        if len(enc) != 1:
            raise RuntimeError("discovery: the engine sent Accept-Encoding %s, expected one" % enc)
        self.compressed = enc[0] not in ("", "identity")
        self.engine_queries = list(dict.fromkeys(lbl for lbl, _ in self.requests))
        log("discovery run through a recording proxy %.2fs: %d requests, at most %d in flight "
            "(%d expected from the issue; extra %s)" % (wall, len(paths), self.max_in_flight,
                                                         len(self.issue_requests), extra or "none"))
        if missing:
            print("NOTE %d of the %d requests the issue describes were not made by the engine, "
                  "e.g. %s" % (len(missing), len(self.issue_requests),
                               urllib.parse.unquote(missing[0])[:200]))

    # ---- curl floor
    def curl_list(self, name, outputs):
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            for (_, url), out in zip(self.requests, outputs):
                f.write('url = "%s"\noutput = "%s"\n' % (url, out))
        return path

    def curl_cmd(self, listfile, parallel=1):
        par = ["--parallel", "--parallel-max", str(parallel)] if parallel > 1 else []
        enc = ["--compressed"] if self.compressed else ["-H", "Accept-Encoding: identity"]
        return ["curl", "-s", "-S"] + enc + ["-H", "Accept: application/json"] + par + [
                "-w", "%{http_code} %{size_download} %{time_total}\\n", "-K", listfile]

    def check_curl(self, rc, outfile, errfile, what):
        lines = open(outfile).read().split()
        codes, sizes, times = lines[0::3], lines[1::3], lines[2::3]
        self.last_times = [float(x) for x in times]
        bad = [c for c in codes if c != "200"]
        if rc != 0 or bad or len(codes) != len(self.requests):
            raise RuntimeError("%s: curl exit %s, %d/%d answers, non-200: %s; %s"
                               % (what, rc, len(codes), len(self.requests), bad[:3],
                                  tail(errfile)))
        return sum(int(s) for s in sizes)

    def warmup(self):
        d = os.path.join(self.work, "floor")
        os.makedirs(d, exist_ok=True)
        outs = [os.path.join(d, "%03d.json" % i) for i in range(len(self.requests))]
        lf = self.curl_list("curl-warmup.txt", outs)
        wo, we = os.path.join(self.work, "curl-warmup.out"), os.path.join(self.work,
                                                                          "curl-warmup.err")
        with open(wo, "w") as so, open(we, "w") as se:
            rc, wall, _, _ = time_v(self.curl_cmd(lf), os.path.join(self.work, "time-warmup"),
                                    so, se, 900)
        self.wire_bytes = self.check_curl(rc, wo, we, "warm-up")
        samples = series = body = 0
        per_query = {}
        for (name, _), out in zip(self.requests, outs):
            body += os.path.getsize(out)
            with open(out, "rb") as f:
                doc = json.load(f)
            os.unlink(out)
            if doc.get("status") != "success":
                raise RuntimeError("%s: unexpected answer %s" % (name, str(doc)[:300]))
            res = doc["data"]["result"]
            if doc["data"]["resultType"] == "matrix":
                n = sum(len(r.get("values", [])) for r in res)
                series += len(res)
            elif doc["data"]["resultType"] == "vector":
                n = len(res)
            else:
                n = 1
            samples += n
            per_query[name] = per_query.get(name, 0) + n
        self.samples, self.series_chunks, self.body_bytes = samples, series, body
        self.per_query = per_query
        log("warm-up curl pass %.2fs: %d samples, %.1f MiB JSON (%.1f MiB gzip on the wire)"
            % (wall, samples, body / 2**20, self.wire_bytes / 2**20))

    def run_curl(self, r, parallel=1):
        tag = "curl-%d" % r if parallel == 1 else "pcurl-%d" % r
        lf = self.curl_list(tag + ".txt", ["/dev/null"] * len(self.requests))
        wo, we = (os.path.join(self.work, "%s.%s" % (tag, x)) for x in ("out", "err"))
        with open(wo, "w") as so, open(we, "w") as se:
            rc, wall, rss, cpu = time_v(self.curl_cmd(lf, parallel),
                                        os.path.join(self.work, "time-" + tag), so, se, 900)
        wire = self.check_curl(rc, wo, we, "%s round %d" % (tag, r))
        if wire != self.wire_bytes:
            log("note: %s downloaded %d bytes, warm-up %d" % (tag, wire, self.wire_bytes))
        if parallel > 1:     # -w lines come in completion order: no per-query times
            return {"wall": wall, "rss": rss, "cpu": cpu}
        by_query = {}
        for (name, _), tt in zip(self.requests, self.last_times):
            by_query[name] = by_query.get(name, 0.0) + tt
        return {"wall": wall, "rss": rss, "cpu": cpu, "by_query": by_query,
                "times": list(self.last_times)}

    # ---- engine
    def engine(self, db, *args, stdout=subprocess.PIPE, timeout=900):
        return subprocess.run([self.a.bin, "--config", self.cfg_path, "--db", db] + list(args),
                              stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
                              timeout=timeout)

    def run_engine(self, r):
        db = os.path.join(self.work, "bench-%d.db" % r)
        for sfx in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(db + sfx):
                os.unlink(db + sfx)
        errf = os.path.join(self.work, "engine-collect-%d.log" % r)
        with open(errf, "w") as se:
            rc, wall, rss, cpu = time_v(
                [self.a.bin, "--config", self.cfg_path, "--db", db, "collect",
                 "--from", self.wfrom, "--to", self.wto],
                os.path.join(self.work, "time-engine-%d" % r), subprocess.DEVNULL, se, 900)
        if rc != 0:
            raise RuntimeError("gpuledger collect round %d: exit %s after %.1fs (%s); stderr: %s"
                               % (r, rc, wall, "timeout" if rc == -1 else "crash/err",
                                  tail(errf)))
        # memory_samples= (samples= counts every query since it was added)
        text = open(errf).read()
        m = (re.findall(r"memory_samples=(\d+)", text)
             or re.findall(r"(?<![A-Za-z_])samples=(\d+)", text))
        return {"wall": wall, "rss": rss, "cpu": cpu, "db": db,
                "logged_samples": int(m[-1]) if m else None}

    def verify(self, db):
        """[(team, got, expected, ok)] and the invoice document."""
        p = self.engine(db, "invoice", "--period", self.exp["period"], "--format", "json")
        if p.returncode != 0:
            return [("(invoice)", "exit %d" % p.returncode, p.stderr.decode()[-300:], False)], None
        doc = json.loads(p.stdout)
        got = {inv["team"]: inv for inv in doc.get("invoices", [])}
        rows = []
        for team, e in sorted(self.exp["teams"].items()):
            g = got.get(team, {}).get("total")
            rows.append((team, g, e["total"], g == e["total"]))
        # teams the generator does not list: idle/overhead lines only (platform team)
        fleet_got, extra = Decimal(0), []
        for team, inv in sorted(got.items()):
            if team in self.exp["teams"]:
                continue
            kinds = {l.get("kind") for l in inv.get("lines", [])}
            if kinds <= set(FLEET_KINDS):
                fleet_got += Decimal(inv["total"])
                extra.append(team)
            else:
                rows.append((team, inv.get("total"), None, False))
        if self.exp.get("fleet"):
            fe = sum(Decimal(l["amount"]) for l in self.exp["fleet"])
            minor = self.exp.get("minor_units", 2)
            fe_s, fg_s = "%.*f" % (minor, fe), "%.*f" % (minor, fleet_got)
            rows.append(("%s (idle+overhead)" % "+".join(extra or ["-"]), fg_s, fe_s,
                         fg_s == fe_s))
        return rows, doc

    # ---- main
    def main(self):
        a = self.a
        log("window %s .. %s, %d chunks" % (self.wfrom, self.wto, self.nchunks))
        self.discover()
        self.warmup()
        runs = []
        verified = []
        first_doc = None
        for r in range(1, a.repeat + 1):
            kinds = ["engine", "curl"] + (["pcurl"] if self.max_in_flight > 1 else [])
            k = (r - 1) % len(kinds)
            order = kinds[k:] + kinds[:k]
            res = {}
            for what in order:
                log("round %d/%d: %s" % (r, a.repeat, what))
                try:
                    if what == "engine":
                        res[what] = self.run_engine(r)
                    elif what == "curl":
                        res[what] = self.run_curl(r)
                    else:
                        res[what] = self.run_curl(r, parallel=self.max_in_flight)
                except RuntimeError as e:
                    print("FAIL %s" % e)
                    self.failed = True
                    res[what] = None
            if res.get("engine"):
                rows, doc = self.verify(res["engine"]["db"])
                verified.append(rows)
                if first_doc is None:
                    first_doc = doc
                elif doc != first_doc:
                    print("MISMATCH round %d: invoices differ from round 1" % r)
                    self.failed = True
            runs.append(res)
        self.report(runs, verified)
        return 1 if self.failed else 0

    def report(self, runs, verified):
        print("gpuledger collect benchmark: %s .. %s, step %ds, %d chunks; the engine made "
              "%d requests (%d per chunk: %s), replayed by curl as the floor"
              % (self.wfrom, self.wto, self.step, self.nchunks, len(self.requests),
                 len(self.requests) // max(1, self.nchunks), ", ".join(self.engine_queries)))
        print("samples (values in all answers): %d = %s; %d series x chunk; "
              "%.1f MiB JSON, %.1f MiB gzip on the wire"
              % (self.samples, " + ".join("%s %d" % kv for kv in self.per_query.items()),
                 self.series_chunks, self.body_bytes / 2**20, self.wire_bytes / 2**20))
        logged = [r["engine"]["logged_samples"] for r in runs if r.get("engine")]
        if logged:
            print("engine log samples= (memory series x steps integrated): %s" % logged[0])
        hdr = ("run", "eng_s", "eng_Msamp/s", "eng_cpu_s", "eng_RSS_MiB",
               "curl_s", "curl_Msamp/s", "curl_cpu_s", "curl_RSS_MiB", "time_x", "RSS_x")
        fmt = "%-6s %7s %11s %9s %11s %7s %12s %10s %12s %7s %6s"
        print(fmt % hdr)
        rows = []
        for i, r in enumerate(runs, 1):
            e, c = r.get("engine"), r.get("curl")
            if not e or not c:
                print(fmt % ((str(i),) + ("-",) * 10))
                continue
            row = [e["wall"], self.samples / e["wall"] / 1e6, e["cpu"], e["rss"] / 1024,
                   c["wall"], self.samples / c["wall"] / 1e6, c["cpu"], c["rss"] / 1024,
                   e["wall"] / c["wall"], e["rss"] / c["rss"]]
            rows.append(row)
            print(fmt % tuple([str(i)] + self.cells(row)))
        if len(rows) > 1:
            med = [statistics.median(col) for col in zip(*rows)]
            print(fmt % tuple(["median"] + self.cells(med)))
        par = [(r["pcurl"], r["engine"]) for r in runs if r.get("pcurl") and r.get("engine")]
        if par:
            print("parallel floor (one curl, --parallel-max %d = the engine's most requests in "
                  "flight): %s s, median %.2f s, %.2f Msamples/s, RSS %.1f MiB; engine/that: "
                  "time %.2f, RSS %.1f"
                  % (self.max_in_flight, " ".join("%.2f" % p["wall"] for p, _ in par),
                     statistics.median(p["wall"] for p, _ in par),
                     self.samples / statistics.median(p["wall"] for p, _ in par) / 1e6,
                     statistics.median(p["rss"] / 1024 for p, _ in par),
                     statistics.median(e["wall"] / p["wall"] for p, e in par),
                     statistics.median(e["rss"] / p["rss"] for p, e in par)))
        elif self.max_in_flight == 1:
            print("the engine made one request at a time (like the curl floor)")
        bq = [r["curl"]["by_query"] for r in runs if r.get("curl")]
        if bq:
            print("floor seconds by query (median of runs): " + ", ".join(
                "%s %.2f" % (q, statistics.median(b.get(q, 0.0) for b in bq))
                for q in self.engine_queries))
            if self.extra:
                five = [sum(t for (lbl, url), t in zip(self.requests, r["curl"]["times"])
                            if url[len(self.a.url):] in self.issue_set) for r in runs
                        if r.get("curl")]
                ew = [r["engine"]["wall"] for r in runs if r.get("engine")]
                print("floor of only the issue's 5 queries per chunk (sum of curl time_total, "
                      "median): %.2f s; engine/that = %.2f"
                      % (statistics.median(five), statistics.median(ew) / statistics.median(five)))
        # invoice check (round 1 shown; later rounds must agree)
        if verified:
            rows0 = verified[0]
            bad = [(i + 1, t) for i, rr in enumerate(verified) for (t, _, _, ok) in rr if not ok]
            for team, got, want, ok in rows0:
                print("  %-8s %-32s engine %-12s expected %s" % ("OK" if ok else "MISMATCH",
                                                                team, got, want))
            print("invoice totals vs expected.json: %s (%d teams checked in each of %d runs)"
                  % ("OK" if not bad else "MISMATCH %s" % bad, len(rows0), len(verified)))
            if bad:
                self.failed = True
        else:
            print("invoice totals vs expected.json: not checked (no engine run succeeded)")
            self.failed = True

    @staticmethod
    def cells(row):
        return ["%.2f" % row[0], "%.2f" % row[1], "%.2f" % row[2], "%.1f" % row[3],
                "%.2f" % row[4], "%.2f" % row[5], "%.2f" % row[6], "%.1f" % row[7],
                "%.2f" % row[8], "%.1f" % row[9]]


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv[1:])
    # SIGTERM (bench/collect.sh's trap) -> SystemExit, so subprocess.run kills its child
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return Bench(a).main()
    except RuntimeError as e:
        print("FAIL %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
