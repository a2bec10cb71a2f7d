"""Plumbing shared by the integration drivers in this folder (stdlib only).

  Tap            "ok - NAME" / "not ok - NAME: REASON" / "# ..." lines, failures counted
  tail           the end of a long text, for a failure reason
  NO_PROXY_OPENER, CHILD_ENV, free_port, http_get_json
                 everything here talks to 127.0.0.1, never through a proxy
  run_cmd        a command with stdin closed, its output captured as text
  Engine         the gpuledger binary, every call appended to a log
  backfill_start, backfill_wait, backfill
                 promtool tsdb create-blocks-from openmetrics
  Server, start_all, prometheus_argv, Prometheus
                 child processes serving HTTP on a free 127.0.0.1 port,
                 ready when a path answers 200, stopped at the end
  LoopbackServer an HTTP server of the test itself, in a thread
  Suite, arguments, run_driver
                 a driver's main(): --bin/--work/--keep, the work directory,
                 SIGTERM/SIGINT, a crash reported as a failing check

Nothing here decides what a test checks; the drivers keep their checks,
their names and their expected figures.
"""

import argparse
import hashlib
import http.client
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import urllib.request


# ---------------------------------------------------------------- reporting

class Tap:
    """TAP-ish output: "ok - NAME", "not ok - NAME: REASON" (one line,
    white space folded, cut after `limit` characters unless limit is None)
    and "# ..." comments; `failed` counts the failures. check() names the
    first `shown` problems of a failing check; GPULEDGER_IT_VERBOSE=1 prints
    every one of them as a comment first."""

    def __init__(self, limit=1500, shown=4):
        self.failed = 0
        self.limit = limit
        self.shown = shown
        self.ci = os.environ.get("CI", "") == "true"
        self.verbose = os.environ.get("GPULEDGER_IT_VERBOSE") == "1"

    def ok(self, name):
        print("ok - %s" % name, flush=True)

    def fail(self, name, reason):
        self.failed += 1
        reason = " ".join(str(reason).split())
        if self.limit is not None and len(reason) > self.limit:
            reason = reason[:self.limit] + " ..."
        print("not ok - %s: %s" % (name, reason), flush=True)

    def check(self, name, problems):
        """problems: list of strings (empty = pass). Returns True on a pass."""
        if problems and self.verbose:
            for x in problems:
                self.note("  %s" % x)
        if problems:
            n = self.shown
            more = " (+%d more)" % (len(problems) - n) if len(problems) > n else ""
            self.fail(name, "; ".join(problems[:n]) + more)
            return False
        self.ok(name)
        return True

    def setup(self, text):
        """A set-up step that went as it should (generation, backfill, a
        server started): a comment, never counted as a check."""
        self.note("setup: " + text)

    def skip(self, name, why):
        """A check that cannot run: a failure under CI=true, else "ok - # SKIP"."""
        if self.ci:
            self.failed += 1
            print("not ok - %s skipped: %s" % (name, why), flush=True)
        else:
            print("ok - # SKIP %s: %s" % (name, why), flush=True)

    def note(self, text):
        for line in str(text).splitlines() or [""]:
            print("# " + line, flush=True)


def tail(text, n=600):
    text = (text or "").strip()
    return text if len(text) <= n else "..." + text[-n:]


# ---------------------------------------------------------------- loopback

# every connection here is to 127.0.0.1: never through a configured proxy
NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
CHILD_ENV = {k: v for k, v in os.environ.items()
             if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
# the drivers read the engine's events as "ts level message key=value"
# lines (--log-format text); s3_test.py checks the logfmt and JSON formats
CHILD_ENV["GPULEDGER_LOG_FORMAT"] = "text"


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get_json(url, timeout=30):
    with NO_PROXY_OPENER.open(url, timeout=timeout) as r:
        return json.load(r)


# ---------------------------------------------------------------- commands

def run_cmd(cmd, timeout=120, cwd=None, env=None):
    """Runs cmd with stdin closed (environment: CHILD_ENV unless env);
    returns (exit status, stdout, stderr) as text. The status is -1 when the
    command cannot start or runs out of time (stderr then says which; what
    it wrote before a timeout is kept)."""
    try:
        p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL,
                           env=CHILD_ENV if env is None else env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), \
            p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        return -1, (e.stdout or b"").decode("utf-8", "replace"), \
            "timed out after %ds: %s" % (timeout, (e.stderr or b"").decode("utf-8", "replace"))
    except OSError as e:
        return -1, "", "cannot run %s: %s" % (cmd[0], e)


class Engine:
    """The gpuledger binary, run in `work`: run(config, db, *args) returns
    (exit status, stdout, stderr); every call is appended to `log` (default
    WORK/engine.log; its stdout too when log_stdout). `options` go before
    --config (e.g. --verbose); env adds to CHILD_ENV for one call."""

    def __init__(self, binary, work, log=None, timeout=120, options=(), log_stdout=False):
        self.bin = binary
        self.work = work
        self.log = log or os.path.join(work, "engine.log")
        self.timeout = timeout
        self.options = list(options)
        self.log_stdout = log_stdout

    def cmd(self, config, db, *args):
        return [self.bin] + self.options + ["--config", config, "--db", db] + list(args)

    def run(self, config, db, *args, timeout=None, env=None):
        cmd = self.cmd(config, db, *args)
        timeout = timeout or self.timeout
        t0 = time.time()
        rc, out, err = run_cmd(cmd, timeout, cwd=self.work,
                               env=dict(CHILD_ENV, **env) if env else None)
        self.record(cmd, rc, time.time() - t0, err, out, env)
        return rc, out, err

    def record(self, cmd, rc, secs, err, out=None, env=None):
        """Appends one call (also one run outside run(), e.g. a killed one)."""
        pre = " ".join("%s=%s" % kv for kv in env.items()) + " " if env else ""
        with open(self.log, "a") as f:
            f.write("$ %s%s\nexit %s after %.2fs; stderr:\n%s\n" % (pre, " ".join(cmd), rc,
                                                                    secs, err))
            if self.log_stdout and out is not None:
                f.write("--- stdout\n%s\n" % out)


# ---------------------------------------------------------------- promtool

# One block per scenario: promtool's default block duration (2 h) writes a
# block per 2 hours of data and takes about 6x longer on the main scenario.
ONE_BLOCK = "--max-block-duration=768h"


def _cache_dir(kind):
    """GL_TEST_CACHE/KIND (tests/runner.py sets GL_TEST_CACHE to a folder of
    the build tree), or None: no cache."""
    root = os.environ.get("GL_TEST_CACHE")
    if not root:
        return None
    d = os.path.join(root, kind)
    os.makedirs(d, exist_ok=True)
    return d


def file_key(paths, extra=()):
    """A hex digest of the files' bytes and the extra strings."""
    h = hashlib.sha256()
    for x in list(extra):
        h.update(b"s" + str(x).encode() + b"\0")
    for p in paths:
        h.update(b"f")
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def cache_store(src, kind, key):
    """Copies the folder src into the cache as KIND/KEY (atomically: a
    concurrent suite storing the same key keeps one copy)."""
    d = _cache_dir(kind)
    if d is None or os.path.isdir(os.path.join(d, key)):
        return
    tmp = tempfile.mkdtemp(prefix=key + ".", dir=d)
    try:
        shutil.copytree(src, os.path.join(tmp, "x"), ignore=shutil.ignore_patterns("lock", "wal"))
        os.rename(os.path.join(tmp, "x"), os.path.join(d, key))
    except OSError:
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cache_fetch(kind, key, dst):
    """Copies KIND/KEY to dst (which must not exist); False on a miss."""
    d = _cache_dir(kind)
    if d is None or not os.path.isdir(os.path.join(d, key)):
        return False
    shutil.copytree(os.path.join(d, key), dst)
    return True


class _Cached:
    """backfill_start's answer when the blocks came from the cache."""
    returncode = 0

    def communicate(self, timeout=None):
        return b"blocks from the test cache\n", None


def backfill_start(om, tsdb, cwd=None, args=()):
    """promtool tsdb create-blocks-from openmetrics OM TSDB in the
    background (TSDB removed first), one block per scenario unless args
    set the duration; finish with backfill_wait. The blocks are kept in the
    test cache by the digest of OM, the arguments and promtool's version,
    so the same data is backfilled once per build tree."""
    shutil.rmtree(tsdb, ignore_errors=True)
    args = list(args)
    if not any(a.startswith("--max-block-duration") for a in args):
        args.append(ONE_BLOCK)
    key = None
    if _cache_dir("tsdb") is not None:
        key = file_key([om], args + [shutil.which("promtool") or "promtool", _promtool_version()])
        if cache_fetch("tsdb", key, tsdb):
            return _Cached()
    proc = subprocess.Popen(["promtool", "tsdb", "create-blocks-from", "openmetrics"]
                            + args + [om, tsdb], cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    proc.gl_cache = (key, tsdb)
    return proc


_PROMTOOL_VERSION = []


def _promtool_version():
    if not _PROMTOOL_VERSION:
        rc, out, err = run_cmd(["promtool", "--version"], timeout=30)
        _PROMTOOL_VERSION.append((out + err).split("\n")[0])
    return _PROMTOOL_VERSION[0]


def backfill_wait(proc, timeout=None):
    """(exit status, output) of a backfill_start; -1 when it ran out of time."""
    try:
        out = proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        out = proc.communicate()[0] + b"\ntimed out after %ds" % timeout
        return -1, out.decode(errors="replace")
    key, tsdb = getattr(proc, "gl_cache", (None, None))
    if proc.returncode == 0 and key:
        cache_store(tsdb, "tsdb", key)
    return proc.returncode, out.decode(errors="replace")


def backfill(om, tsdb, cwd=None, args=(), timeout=None):
    return backfill_wait(backfill_start(om, tsdb, cwd, args), timeout)


# ---------------------------------------------------------------- servers

class Server:
    """A child process answering HTTP on 127.0.0.1:port (set port, then
    spawn); output to WORK/NAME.log; stopped by stop(). probe(path), when
    set, gives the HTTP status of path (e.g. over TLS) for wait_ready."""

    def __init__(self, name, work, probe=None):
        self.name = name
        self.work = work
        self.proc = None
        self.port = None
        self.probe = probe
        self.log = os.path.join(work, name + ".log")

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def spawn(self, argv):
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf,
                                         stderr=logf, cwd=self.work, env=CHILD_ENV)

    def status(self, path):
        if self.probe:
            return self.probe(path)
        with NO_PROXY_OPENER.open(self.url() + path, timeout=2) as r:
            return r.status

    def wait_ready(self, path, deadline):
        """None once path answers 200 before the deadline; else why not
        (the server is stopped)."""
        while time.time() < deadline and self.proc.poll() is None:
            try:
                if self.status(path) == 200:
                    return None
            except OSError:
                pass
            time.sleep(0.1)
        why = "%s did not become ready (exit %s); log tail: %s" % (
            self.name, self.proc.poll(), tail(open(self.log, errors="replace").read(), 400))
        self.stop()
        return why

    def stop(self, timeout=15):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def start_all(servers, deadline_s=40):
    """servers: [(Server, argv_of_port, ready_path)]. Starts them together
    on free ports; a server that fails is retried on another port (twice).
    Returns {name: error} of the ones that never came up."""
    errors = {}
    pending = list(servers)
    for attempt in range(3):
        for srv, argv_of, _ in pending:
            srv.port = free_port()
            srv.spawn(argv_of(srv.port))
        deadline = time.time() + deadline_s
        failed = []
        for srv, argv_of, path in pending:
            why = srv.wait_ready(path, deadline)
            if why:
                errors[srv.name] = why
                failed.append((srv, argv_of, path))
            else:
                errors.pop(srv.name, None)
        pending = failed
        if not pending:
            break
    return errors


def prometheus_argv(work, tsdb, port, lookback="59s"):
    """A real Prometheus serving tsdb on 127.0.0.1:port (WORK/prometheus.yml:
    no scrape worth the name)."""
    cfg = os.path.join(work, "prometheus.yml")
    if not os.path.exists(cfg):
        with open(cfg, "w") as f:
            f.write("global: {scrape_interval: 1h}\n")
    return ["prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + tsdb,
            "--storage.tsdb.retention.time=100y", "--web.listen-address=127.0.0.1:%d" % port,
            "--query.lookback-delta=" + lookback]


class Prometheus(Server):
    """A real Prometheus over a backfilled TSDB, log WORK/prometheus.log."""

    def __init__(self, work, tsdb, lookback="59s"):
        super().__init__("prometheus", work)
        self.tsdb = tsdb
        self.lookback = lookback

    def start(self, port=None, attempts=3, timeout=60):
        """Starts on a free port, or on `port` (a restart keeping its URL)
        for the first two attempts; waits for /-/ready; raises RuntimeError
        when it never gets there."""
        last = ""
        for attempt in range(attempts):
            self.port = port if (port and attempt < 2) else free_port()
            self.spawn(prometheus_argv(self.work, self.tsdb, self.port, self.lookback))
            last = self.wait_ready("/-/ready", time.time() + timeout)
            if last is None:
                return
            time.sleep(0.5)
        raise RuntimeError(last)

    def query(self, promql, t):
        """Instant query at t: the result list."""
        qs = urllib.parse.urlencode({"query": promql, "time": str(t)})
        doc = http_get_json(self.url() + "/api/v1/query?" + qs)
        if doc.get("status") != "success":
            raise RuntimeError("query failed: %s" % doc)
        return doc["data"]["result"]


class LoopbackServer:
    """The test's own HTTP server on a free 127.0.0.1 port, served by a
    thread: GET (and POST when post) requests go to handle(h, body), body
    b"" for GET. close() ends it."""

    protocol = "HTTP/1.1"

    def __init__(self, post=False):
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = owner.protocol

            def log_message(self, *a):
                pass

            def do_GET(self):
                owner.handle(self, b"")

            if post:
                def do_POST(self):
                    n = int(self.headers.get("Content-Length") or 0)
                    owner.handle(self, self.rfile.read(n) if n else b"")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(self, h, body):
        raise NotImplementedError

    @staticmethod
    def reply(h, status, body, ctype="application/json", extra=()):
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    @staticmethod
    def relay(h, port, body=None, headers=None):
        """h's request passed on to 127.0.0.1:port (a POST with its body):
        (status, body, Content-Type) of the answer."""
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.request(h.command, h.path, body=body if h.command == "POST" else None,
                         headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read(), r.getheader("Content-Type", "application/json")
        finally:
            conn.close()


# ---------------------------------------------------------------- main()

class Suite:
    """What run_driver runs: a driver's checks in main(), its servers
    stopped in cleanup(). args, tap and work (= args.work) are kept;
    path() names a file in the work directory."""

    def __init__(self, args, tap):
        self.args = args
        self.tap = tap
        self.work = args.work

    def path(self, *p):
        return os.path.join(self.work, *p)

    def main(self):
        raise NotImplementedError

    def cleanup(self):
        pass


def arguments(doc, bin_default=None):
    """The argument parser of a driver: --bin (required unless bin_default),
    --work, --keep; the driver adds its own."""
    ap = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    if bin_default:
        ap.add_argument("--bin", default=bin_default,
                        help="path to the gpuledger binary (default: %(default)s)")
    else:
        ap.add_argument("--bin", required=True, help="path to the gpuledger binary")
    ap.add_argument("--work", help="work directory (default: a temporary one, removed after "
                    "a passing run)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary work directory")
    return ap


def run_driver(make_suite, args, tap, title, prefix, fresh=True):
    """A driver's main(). The work directory is args.work (emptied first
    when fresh, else reused as it is) or a new temporary one (prefix),
    removed after a passing run unless --keep; args.work is set to it.
    SIGTERM and SIGINT end the run as SystemExit. make_suite(args, tap)
    gives a Suite (main() runs the checks, cleanup() always runs after);
    an interruption or a crash of the driver
    is a failing check named `title`. Returns the exit status: 1 when any
    check failed."""
    tmp = None
    if args.work:
        args.work = os.path.abspath(args.work)
        if fresh:
            shutil.rmtree(args.work, ignore_errors=True)
        os.makedirs(args.work, exist_ok=True)
    else:
        tmp = args.work = tempfile.mkdtemp(prefix=prefix)

    def on_signal(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    suite = make_suite(args, tap)
    t0 = time.time()
    try:
        suite.main()
    except SystemExit:
        tap.fail(title, "interrupted")
        raise
    except Exception as e:
        tap.fail(title, "driver error: %s: %s" % (type(e).__name__, e))
        for line in traceback.format_exc().splitlines():
            tap.note(line)
    finally:
        suite.cleanup()
        remove = tmp and not args.keep and tap.failed == 0
        tap.note("work directory: %s%s; %.1fs" % (args.work, " (removed)" if remove else "",
                                                  time.time() - t0))
        if remove:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if tap.failed else 0


def serve_scenario(suite, scenario, name=""):
    """Generates `scenario` with tests/gen/gencluster.py into the suite's
    gen<name> folder, backfills it into a TSDB and starts a Prometheus on it
    (appended to suite.proms, which the suite stops): (the generated folder,
    its config with that Prometheus's URL and the generated price file)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "gen"))
    import gencluster
    gen = suite.path("gen" + name)
    if gencluster.main(["gencluster.py", scenario, gen]) != 0:
        raise RuntimeError("gencluster failed on %s" % scenario)
    rc, out = backfill(os.path.join(gen, "data.om"), suite.path("tsdb" + name))
    if rc != 0:
        raise RuntimeError("promtool backfill %s: %s" % (scenario, tail(out)))
    os.makedirs(suite.path("prom" + name), exist_ok=True)
    prom = Prometheus(suite.path("prom" + name), suite.path("tsdb" + name))
    prom.start(timeout=30)
    suite.proms.append(prom)
    with open(os.path.join(gen, "config.json")) as f:
        cfg = json.load(f)
    cfg["prometheus"]["url"] = prom.url()
    cfg["prices"]["file"] = os.path.join(gen, "prices.csv")
    return gen, cfg


class ScenarioSuite(Suite):
    """A Suite over generated scenarios served by Prometheus: run() an
    engine command that must succeed, collect_scenario() to serve and
    collect one, the Prometheus servers stopped in cleanup()."""
    proms = ()

    def start_engine(self):
        """Call first in main(): the engine of --bin, and the server list."""
        self.proms = []
        self.eng = Engine(os.path.abspath(self.args.bin), self.work)

    def run(self, cfg, db, *args):
        """The command's stdout; RuntimeError naming it when it fails."""
        rc, out, err = self.eng.run(cfg, db, *args, timeout=300)
        if rc != 0:
            raise RuntimeError("%s: exit %s: %s" % (" ".join(args[:3]), rc, tail(err)))
        return out

    def collect_scenario(self, scenario, window, name="", edit=None, db=None):
        """serve_scenario, its config (edit(cfg) first, when given) written
        to config<name>.json, the window collected into db (default
        collect<name>.db): (generated folder, cfg, config path, db)."""
        gen, cfg = serve_scenario(self, scenario, name)
        if edit:
            edit(cfg)
        cfg_path = self.path("config%s.json" % name)
        with open(cfg_path, "w") as f:
            json.dump(cfg, f, indent=1)
        db = db or self.path("collect%s.db" % name)
        self.run(cfg_path, db, "collect", "--from", window[0], "--to", window[1])
        return gen, cfg, cfg_path, db

    def cleanup(self):
        for p in self.proms:
            p.stop()
