#!/usr/bin/env python3
"""gpuledger report test: the monthly team reports and the fleet page,
rendered in a real browser.

Usage: python3 tests/integration/report_test.py --bin build/gpuledger
           [--scenario FILE] [--work DIR] [--keep]
           [--readme-shot PNG --readme-team TEAM]

Steps: tests/gen/gencluster.py writes a small cluster
(tests/integration/scenarios/report.json: two days at a 300 s step, with a
pod name and a team label that are hostile HTML) -> promtool tsdb
create-blocks-from openmetrics -> prometheus on a free 127.0.0.1 port
(--query.lookback-delta=59s) -> gpuledger collect, invoice --format json,
report --out DIR -> every HTML page rendered by headless Chromium twice:
--screenshot (a PNG of 1280x2000 that is not blank) and --dump-dom (the DOM
after loading: the total shown equals the invoice JSON's, an inline <svg>
chart, no script/img/iframe/link element, no event-handler attribute, no
external URL, no console message such as a blocked load or a script error,
hostile labels present as text). The Markdown twin carries the same total
and the same GB-hour figures; the fleet page shows every invoice total,
their sum and capacity that reconciles. --team writes one team's pages (and
the fleet page); an unknown team is a usage error (exit 2) that writes
nothing; no temporary file is left behind.

--readme-shot PNG also saves a 1280x1500 screenshot of --readme-team's
page (docs/report-screenshot.png is made this way from
examples/cluster/scenario.json, team "vision").

Prints "ok - NAME" / "not ok - NAME: REASON" lines and "# ..." comments only;
exits 1 when a check failed. A missing tool (chromium, promtool, prometheus)
is a failing check naming the tool, never a silent pass.
"""

import json
import os
import re
import shutil
import struct
import sys
import tempfile
import zlib
from decimal import ROUND_HALF_EVEN, Decimal
from html.parser import HTMLParser

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import harness  # noqa: E402
import ledger_db  # noqa: E402

DEFAULT_SCENARIO = os.path.join(HERE, "scenarios", "report.json")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
# figures as the pages print them for reading: 2 decimals, thousands grouped
GBH = re.compile(r"(?<![\d.,/])\d{1,3}(?:,\d{3})*\.\d{2}(?![\d])")


def readable(exact, places=2):
    """An exact decimal string as the pages print it: rounded half-even to
    `places` decimals, thousands grouped with commas (the test's own model)."""
    q = Decimal(exact).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
    return "{:,.{p}f}".format(q, p=places)


def percent(ratio):
    """A 0-1 ratio string as a percentage with one decimal ("69.9%")."""
    q = (Decimal(ratio) * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)
    return "%s%%" % q


def num(cell):
    """A printed figure back as a Decimal (commas dropped)."""
    return Decimal(cell.replace(",", ""))


def workloads_model(scen, team_of):
    """The scenario's workloads per team (the test's own folding rule: a
    ReplicaSet named <name>-<pod-template-hash> is Deployment/<name>; no owner
    or "<none>" is Pod/<pod name>) -> {team: {(ns, "Kind/name"): pods}}."""
    out = {}
    for pod in scen.get("pods", []):
        o = pod.get("owner") or {}
        kind, name = o.get("kind", "<none>"), o.get("name", "<none>")
        if kind == "<none>":
            kind, name = "Pod", pod["name"]
        m = re.match(r"^(.+)-[bcdfghjklmnpqrstvwxz2456789]{6,10}$", name)
        if kind == "ReplicaSet" and m:
            kind, name = "Deployment", m.group(1)
        team = team_of(pod)
        if team is None:
            continue
        key = (pod["namespace"], "%s/%s" % (kind, name))
        out.setdefault(team, {})
        out[team][key] = out[team].get(key, 0) + 1
    return out


# ---------------------------------------------------------------- the browser

def chromium_binary():
    for c in ("chromium", "chromium-browser"):
        p = shutil.which(c)
        if p:
            return p
    return None


def chromium(binary, work, extra, url, timeout=60):
    profile = tempfile.mkdtemp(prefix="chromium-", dir=work)
    try:
        return harness.run_cmd([binary] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile] + extra
                               + [url], timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def png_problems(path, width, height):
    """A PNG of the window's size whose pixels are not all alike."""
    if not os.path.exists(path):
        return ["no PNG written"]
    data = open(path, "rb").read()
    p = []
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return ["not a PNG (%d bytes)" % len(data)]
    if len(data) < 15000:
        p.append("PNG only %d bytes" % len(data))
    w, h = struct.unpack(">II", data[16:24])
    if (w, h) != (width, height):
        p.append("PNG is %dx%d, expected %dx%d" % (w, h, width, height))
    idat, i = b"", 8
    while i + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[i:i + 8])
        if kind == b"IDAT":
            idat += data[i + 8:i + 8 + n]
        i += 12 + n
    try:
        raw = zlib.decompress(idat)
    except zlib.error as e:
        return p + ["PNG data does not inflate: %s" % e]
    if len(set(raw[::7])) < 16:
        p.append("PNG looks blank (%d distinct byte values)" % len(set(raw[::7])))
    return p


class Dom(HTMLParser):
    """What the checks need from a rendered DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = {}
        self.attrs = []         # (tag, name, value)
        self.by_id = {}         # id -> text
        self.data_team = {}     # data-team -> text
        self.text = []
        self._stack = []        # open elements whose text we collect: [key, parts]

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            self.attrs.append((tag, k, v or ""))
        a = dict(attrs)
        if tag in ("br", "meta", "link", "img", "input", "hr", "source", "wbr", "col", "area",
                   "base", "embed", "param", "track"):
            return
        key = None
        if "id" in a:
            key = ("id", a["id"])
        elif "data-team" in a:
            key = ("team", a["data-team"])
        self._stack.append([tag, key, []])

    def handle_endtag(self, tag):
        while self._stack:
            t, key, parts = self._stack.pop()
            if key:
                text = "".join(parts).strip()
                (self.by_id if key[0] == "id" else self.data_team)[key[1]] = text
            if self._stack:
                self._stack[-1][2].extend(parts)
            if t == tag:
                break

    def handle_data(self, data):
        self.text.append(data)
        if self._stack:
            self._stack[-1][2].append(data)


def dom_of(text):
    d = Dom()
    d.feed(text)
    d.close()
    return d


def page_problems(raw_html, dom_text, console):
    """Self-contained, script-free, loaded without console messages."""
    p = []
    d = dom_of(dom_text)
    if not d.tags.get("svg"):
        p.append("no <svg> chart")
    for tag in ("script", "img", "iframe", "object", "embed", "link", "frame"):
        if d.tags.get(tag):
            p.append("%d <%s> element(s)" % (d.tags[tag], tag))
    for tag, k, v in d.attrs:
        if k.startswith("on"):
            p.append("event handler attribute %s on <%s>" % (k, tag))
        if k in ("src", "href", "xlink:href", "action", "srcset", "poster"):
            if re.match(r"\s*(https?:|//|javascript:|data:)", v, re.I):
                p.append("external or active URL %s=%r on <%s>" % (k, v, tag))
    for m in re.finditer(r"(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//", raw_html, re.I):
        p.append("external URL in the file: %r" % raw_html[m.start():m.start() + 60])
    if re.search(r"https?://", raw_html):
        p.append("the file mentions http(s)://")
    if re.search(r"url\(", raw_html, re.I):
        p.append("CSS url() in the file")
    for line in console.splitlines():
        if ":CONSOLE" in line:
            p.append("console: %s" % line.split("]", 1)[-1].strip()[:200])
    return d, p


# ---------------------------------------------------------------- the test

def md_total(text, label):
    m = re.search(r"\*\*%s: (-?[0-9.]+) ([A-Z]{3})\*\*" % re.escape(label), text)
    return (m.group(1), m.group(2)) if m else (None, None)


def md_rows(text, heading):
    """Table rows (cells) of the section that starts with heading."""
    i = text.find(heading)
    if i < 0:
        return []
    rows = []
    for line in text[i:].splitlines()[1:]:
        if line.startswith("## "):
            break
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows[1:]  # without the header


class ReportTest(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = None

    def main(self):
        args, tap = self.args, self.tap
        binary = os.path.abspath(args.bin)
        work = args.work
        missing = [t for t in ("promtool", "prometheus") if not shutil.which(t)]
        browser = chromium_binary()
        if not browser:
            missing.append("chromium")
        if missing:
            tap.fail("report tools", "missing %s (Debian packages prometheus, chromium; "
                     "tests/run.sh installs them)" % ", ".join(missing))
            return
        if not os.access(binary, os.X_OK):
            tap.fail("report engine binary", "%s is not executable" % binary)
            return

        # ---- data: generator -> TSDB -> Prometheus -> collect
        data = os.path.join(work, "data")
        rc, out, err = harness.run_cmd([sys.executable, os.path.join(REPO, "tests", "gen",
                                                                     "gencluster.py"),
                                        args.scenario, data])
        if rc != 0:
            tap.fail("report: generate the cluster", err[-800:])
            return
        tsdb = os.path.join(work, "tsdb")
        rc, out = harness.backfill(os.path.join(data, "data.om"), tsdb, timeout=300)
        if rc != 0:
            tap.fail("report: promtool backfill", out[-800:])
            return
        prom = self.prom = harness.Prometheus(work, tsdb)
        prom.start()
        cfg = json.load(open(os.path.join(data, "config.json")))
        cfg["prometheus"]["url"] = prom.url()
        config = os.path.join(work, "gpuledger.json")
        with open(config, "w") as f:
            json.dump(cfg, f, indent=2)
        shutil.copy(os.path.join(data, "prices.csv"), os.path.join(work, "prices.csv"))
        scen = json.load(open(args.scenario))
        w = scen.get("window", {})
        t_from, t_to = w.get("from", scen["start"]), w.get("to", scen["end"])
        period = scen.get("period", t_from[:7])
        db = os.path.join(work, "gpuledger.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)

        eng = harness.Engine(binary, work)

        def g(*a):
            return eng.run(config, db, *a)

        rc, out, err = g("collect", "--from", t_from, "--to", t_to)
        if rc != 0:
            tap.fail("report: collect", "exit %s: %s" % (rc, err[-800:]))
            return
        rc, out, err = g("invoice", "--period", period, "--format", "json")
        try:
            invoices = {i["team"]: i for i in json.loads(out)["invoices"]}
        except Exception as e:
            tap.fail("report: invoice JSON", "exit %s (%s): %s" % (rc, e, err[-600:]))
            return
        tap.note("%d invoices: %s" % (len(invoices), ", ".join(
            "%s=%s" % (t, i["total"]) for t, i in sorted(invoices.items()))))

        # ---- report
        rep = os.path.join(work, "reports")
        shutil.rmtree(rep, ignore_errors=True)
        rc, out, err = g("report", "--period", period, "--out", rep)
        if rc != 0:
            tap.fail("report: exit status", "exit %s: %s" % (rc, err[-800:]))
            return
        tap.ok("report: exit status 0")
        files = sorted(os.listdir(rep))
        p = []
        for f in files:
            if not re.match(r"^[A-Za-z0-9._-]+$", f) or f.startswith("."):
                p.append("file name %r" % f)
            if not os.path.isfile(os.path.join(rep, f)):
                p.append("%r is not a regular file" % f)
        for ext in ("html", "md"):
            if "fleet-%s.%s" % (period, ext) not in files:
                p.append("no fleet-%s.%s" % (period, ext))
        pages = {}
        for team in invoices:
            raw = team.encode("utf-8")
            safe = re.sub(rb"[^A-Za-z0-9_.-]", b"_", raw)
            safe = (b"_" + safe[1:] if safe.startswith(b".") else safe).decode()
            if safe != team or len(raw) > 128 or re.search(r"-[0-9a-f]{16}$", team):
                # a changed (or long) name is the first 64 bytes sanitized
                # and the whole id's FNV-1a 64 hash, so distinct teams never
                # share a file (util.h gl_safe_name)
                h = 1469598103934665603
                for b in raw:
                    h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
                safe = safe[:64] + "-%016x" % h
            base = "report-%s-%s" % (period, safe)
            if base + ".html" not in files or base + ".md" not in files:
                p.append("team %r: no %s.html/.md" % (team, base))
            else:
                pages[team] = base
        expected = 2 * len(invoices) + 2
        if len(files) != expected:
            p.append("%d files, expected %d: %s" % (len(files), expected, files))
        tap.check("report: one HTML and one Markdown page per team and the fleet, safe names, "
                  "no temporary files", p)

        # ---- every page in the browser
        shots = os.path.join(work, "shots")
        os.makedirs(shots, exist_ok=True)
        html_pages = [(t, b + ".html") for t, b in sorted(pages.items())]
        html_pages.append((None, "fleet-%s.html" % period))
        doms = {}
        for team, name in html_pages:
            label = "fleet page" if team is None else "team %s page" % team
            path = os.path.join(rep, name)
            url = "file://" + path
            png = os.path.join(shots, name + ".png")
            rc, out, err = chromium(browser, work, ["--screenshot=" + png,
                                                    "--window-size=1280,2000"], url)
            pp = ["chromium exit %s: %s" % (rc, err[-300:])] if rc != 0 else []
            tap.check("report: %s renders to PNG" % label, pp + png_problems(png, 1280, 2000))
            rc, dom_text, err = chromium(browser, work, ["--enable-logging=stderr", "--v=0",
                                                         "--dump-dom"], url)
            if rc != 0 or "<svg" not in dom_text:
                tap.fail("report: %s DOM" % label, "chromium exit %s: %s" % (rc, err[-300:]))
                continue
            raw = open(path, encoding="utf-8").read()
            d, p = page_problems(raw, dom_text, err)
            tap.check("report: %s self-contained, no script, no external URL, loads without "
                      "console messages" % label, p)
            doms[team] = (d, raw)

        # ---- team pages: totals, Markdown twin, hostile labels
        for team, base in sorted(pages.items()):
            inv = invoices[team]
            p = []
            d = doms.get(team, (None,))[0]
            if d is None:
                continue
            shown = d.by_id.get("invoice-total")
            if shown != inv["total"]:
                p.append("page shows total %r, invoice JSON %r" % (shown, inv["total"]))
            text = "\n".join(d.text)
            if inv["team_name"] not in text:
                p.append("team name %r not shown as text" % inv["team_name"])
            for l in inv["lines"]:
                if l["amount"] not in text or readable(l["gb_hours"]) not in text:
                    p.append("line %s/%s %s GB-h %s not shown" % (l["gpu_model"], l["kind"],
                                                                   readable(l["gb_hours"]),
                                                                   l["amount"]))
            for c in inv.get("compute_indicator", []):
                if percent(c["busy_ratio"]) not in text:
                    p.append("compute indicator %s not shown as %s" % (c["busy_ratio"],
                                                                       percent(c["busy_ratio"])))
            if inv.get("compute_indicator") and "never priced" not in text:
                p.append("compute caveat missing")
            for a in inv.get("anomalies", []):
                if a["pod"] not in text or readable(a["gb_hours"]) not in text:
                    p.append("anomaly of %s not shown" % a["pod"])
            for wst in inv.get("waste", []):
                if readable(wst["gb_hours"]) not in text:
                    p.append("waste %s not shown" % readable(wst["gb_hours"]))
            status = d.by_id.get("invoice-status") or ""
            if inv.get("status") != "draft" or inv.get("closed_at") is not None or \
                    "DRAFT" not in status:
                p.append("open period: invoice status %r closed_at %r, page status %r" % (
                    inv.get("status"), inv.get("closed_at"), status))
            for l in inv["lines"]:
                if l["price_id"] not in text or l["unit_price"] not in text:
                    p.append("price %s %s not in the price table" % (l["price_id"], l["unit_price"]))
            tap.check("report: team %s page shows the invoice's total, lines, waste, compute "
                      "indicator, anomalies and prices" % team, p)

            md = open(os.path.join(rep, base + ".md"), encoding="utf-8").read()
            p = []
            total, cur = md_total(md, "Total")
            if (total, cur) != (inv["total"], inv["currency"]):
                p.append("Markdown total %s %s, invoice %s %s" % (total, cur, inv["total"],
                                                                 inv["currency"]))
            html_figs = set(GBH.findall(text))
            md_figs = set(GBH.findall(md))
            if html_figs != md_figs:
                p.append("GB-hour figures differ: only in HTML %s, only in Markdown %s" % (
                    sorted(html_figs - md_figs)[:3], sorted(md_figs - html_figs)[:3]))
            # the daily table adds up to the invoice (each day rounded to 0.01)
            days = md_rows(md, "## Daily GB-hours")
            used = sum(num(r[1]) for r in days) if days else Decimal(0)
            billed = sum(Decimal(l["gb_hours"]) for l in inv["lines"]
                         if l["kind"] == "memory_used")
            if abs(used - billed) > Decimal("0.005") * max(1, len(days)):
                p.append("daily used sums to %s GB-h, invoice memory_used lines %s" % (used, billed))
            alloc = sum(num(r[2]) for r in days) if days else Decimal(0)
            alloc_inv = sum(Decimal(a["gb_hours"]) for a in inv.get("allocated", []))
            if abs(alloc - alloc_inv) > Decimal("0.005") * max(1, len(days)):
                p.append("daily allocated sums to %s GB-h, invoice %s" % (alloc, alloc_inv))
            if re.search(r"(?<!\\)<(?!/?(sup)\b)", md):
                p.append("unescaped '<' in the Markdown")
            tap.check("report: team %s Markdown twin has the same total and figures" % team, p)

            # waste in money: the waste MiB·s at the team's own unit price of
            # that model (one price entry in the scenario), rounded half-even
            p = []
            rows = {(r[0], r[1]): r for r in md_rows(md, "## Reserved-unused memory")}
            minor = Decimal(1).scaleb(-len(inv["total"].split(".")[1])) \
                if "." in inv["total"] else Decimal(1)
            for wst in inv.get("waste", []):
                units = {l["unit_price"] for l in inv["lines"]
                         if l["gpu_model"] == wst["gpu_model"] and l["cluster"] == wst["cluster"]
                         and l["kind"] == "memory_used" and not l["corrected_period"]}
                if len(units) != 1:
                    continue
                gbh = Decimal(wst["mib_seconds"]) * 1048576 / Decimal(3600 * 10**9)
                want = (gbh * Decimal(units.pop())).quantize(minor, rounding=ROUND_HALF_EVEN)
                r = rows.get((wst["cluster"], wst["gpu_model"]))
                if r is None or num(r[-1].split()[0]) != want:
                    p.append("%s/%s waste at the price: page %r, expected %s" % (
                        wst["cluster"], wst["gpu_model"], r and r[-1], want))
            tap.check("report: team %s waste in money at the applicable price" % team, p)

        # workloads: the pods of each owner folded together (the scenario's
        # kube_pod_owner series), listed on their team's page with the count
        want = {}
        for pod in scen.get("pods", []):
            occupant = any(o["pod"] == "%s/%s" % (pod["namespace"], pod["name"])
                           for n in scen.get("nodes", []) for gpu in n.get("gpus", [])
                           for o in gpu.get("occupants", []))
            if not occupant and not any("nvidia" in r for r in pod.get("requests", {})):
                continue
            for team, wl in workloads_model({"pods": [pod]}, lambda p: "*").items():
                for k, n in wl.items():
                    want[k] = want.get(k, 0) + n
        got = {}
        for team, base in pages.items():
            md = open(os.path.join(rep, base + ".md"), encoding="utf-8").read()
            for r in md_rows(md, "## Top workloads"):
                ns = r[2].replace("\\", "")
                name = r[3].replace(" (estimated)", "").replace("\\", "")
                got[(ns, name)] = got.get((ns, name), 0) + int(r[4])
        tap.check("report: top workloads fold pods by owner (Deployment from a ReplicaSet's "
                  "pod-template-hash, no owner = the pod)",
                  [] if got == want else ["pages %s, scenario %s" % (sorted(got.items()),
                                                                     sorted(want.items()))])

        hostile = [t for t in invoices if "<" in t or '"' in t]
        hostile_pods = [pod["name"] for pod in scen.get("pods", []) if "<" in pod["name"]]
        if hostile or hostile_pods:
            p = []
            for t in hostile:
                d = doms.get(t, (None,))[0]
                if d is None:
                    p.append("no page for %r" % t)
                    continue
                if t not in "\n".join(d.text):
                    p.append("team id %r not shown as text" % t)
            for name in hostile_pods:
                shown = [t for t, (d, _) in doms.items() if d and name in "\n".join(d.text)]
                if not shown:
                    p.append("pod %r not shown as text on any page" % name)
            tap.check("report: hostile team and pod labels are escaped (shown as text, "
                      "no element injected)", p)

        # ---- fleet page
        fd = doms.get(None, (None,))[0]
        if fd is not None:
            p = []
            total = sum(Decimal(i["total"]) for i in invoices.values())
            if fd.by_id.get("fleet-total") is None or Decimal(fd.by_id["fleet-total"]) != total:
                p.append("fleet total %r, sum of invoices %s" % (fd.by_id.get("fleet-total"), total))
            for t, inv in invoices.items():
                if fd.data_team.get(t) != inv["total"]:
                    p.append("team %r total %r, invoice %r" % (t, fd.data_team.get(t), inv["total"]))
            fmd = open(os.path.join(rep, "fleet-%s.md" % period), encoding="utf-8").read()
            mt, _ = md_total(fmd, "All invoices")
            if mt is None or Decimal(mt) != total:
                p.append("Markdown fleet total %r, sum of invoices %s" % (mt, total))
            rows = md_rows(fmd, "## Capacity per GPU model")
            if not rows:
                p.append("no capacity rows in the fleet Markdown")
            for r in rows:
                if r[-1] != "yes":
                    p.append("%s %s does not reconcile" % (r[0], r[1]))
            ftext = "\n".join(fd.text)
            if set(GBH.findall(ftext)) != set(GBH.findall(fmd)):
                p.append("fleet GB-hour figures differ between HTML and Markdown")
            rc, out, err = g("summary", "--period", period, "--format", "json")
            try:
                for m in json.loads(out)["models"]:
                    for k in ("capacity", "idle"):
                        if readable(m[k]) not in ftext:
                            p.append("summary %s %s of %s not on the fleet page" % (
                                k, m[k], m["gpu_model"]))
            except Exception as e:
                p.append("summary JSON: %s" % e)
            tap.check("report: fleet page shows every invoice total, their sum and capacity = "
                      "teams + idle + overhead (as summary)", p)

        # ---- --team, unknown team, no temporary files
        one = sorted(invoices)[0]
        rep2 = os.path.join(work, "reports-one")
        shutil.rmtree(rep2, ignore_errors=True)
        rc, out, err = g("report", "--period", period, "--team", one, "--out", rep2)
        got = sorted(os.listdir(rep2)) if os.path.isdir(rep2) else []
        want = sorted(["%s.html" % pages[one], "%s.md" % pages[one],
                       "fleet-%s.html" % period, "fleet-%s.md" % period])
        tap.check("report --team %s writes that team's pages and the fleet page" % one,
                  [] if rc == 0 and got == want else ["exit %s, files %s, expected %s: %s" % (
                      rc, got, want, err[-300:])])
        rep3 = os.path.join(work, "reports-none")
        shutil.rmtree(rep3, ignore_errors=True)
        rc, out, err = g("report", "--period", period, "--team", "no-such-team", "--out", rep3)
        left = os.listdir(rep3) if os.path.isdir(rep3) else []
        tap.check("report --team with no invoice: exit 2, nothing written",
                  [] if rc == 2 and not left and "no-such-team" in err else
                  ["exit %s, files %s, stderr %r" % (rc, left, err[-300:])])
        rc, out, err = g("report", "--period", "2026-13", "--out", rep3)
        tap.check("report --period 2026-13: usage error (exit 2)",
                  [] if rc == 2 else ["exit %s: %s" % (rc, err[-300:])])
        # a re-run replaces the pages in place and leaves no temporary file
        before = {f: open(os.path.join(rep, f), "rb").read() for f in os.listdir(rep)}
        rc, out, err = g("report", "--period", period, "--out", rep)
        after = {f: open(os.path.join(rep, f), "rb").read() for f in os.listdir(rep)}
        tap.check("report: a re-run gives identical files and leaves no temporary file",
                  [] if rc == 0 and before == after else
                  ["exit %s; changed or extra files: %s" % (
                      rc, sorted(set(after) ^ set(before)) or
                      [f for f in after if after[f] != before.get(f)])])

        # ---- a closed period: pages only while they still equal the frozen invoices
        closed_db = os.path.join(work, "closed.db")
        shutil.copy(db, closed_db)
        # two days of the month collected: closed as it is (--force), after
        # its end whatever the clock says; every page then states the gaps
        p_year, p_month = int(period[:4]), int(period[5:7])
        close_at = "%04d-%02d-05T00:00:00Z" % (p_year + p_month // 12, p_month % 12 + 1)
        rc, out, err = eng.run(config, closed_db, "close", "--period", period, "--force",
                               "--now", close_at)
        if rc != 0:
            tap.fail("report of a closed period: close --force --now %s" % close_at,
                     "exit %s: %s" % (rc, err.strip()[-300:]))
        else:
            rep4 = os.path.join(work, "reports-closed")
            rc, out, err = eng.run(config, closed_db, "report", "--period", period, "--out", rep4)

            def figures(b):
                """A page without its status lines (title, Status:, the trend's row)
                and without the right-sizing advice, which is not billed and is
                left off a closed month's pages (it follows today's config)."""
                out, advice = [], False
                for ln in b.decode("utf-8").splitlines():
                    if ln.startswith(("## ", "<h2>")):
                        advice = "Right-sizing advice" in ln
                    if advice or "Status:" in ln or "<title>" in ln or "(this report)" in ln \
                            or "Incomplete at close" in ln:
                        continue
                    out.append(ln)
                return out
            bad = [f for f in os.listdir(rep4) if figures(open(os.path.join(rep4, f), "rb").read())
                   != figures(after.get(f, b""))]
            final = [f for f in os.listdir(rep4) if "FINAL" not in
                     open(os.path.join(rep4, f), encoding="utf-8").read()]
            gaps = [f for f in os.listdir(rep4) if "Incomplete at close" not in
                    open(os.path.join(rep4, f), encoding="utf-8").read()]
            tap.check("report of a closed period whose data did not change: same figures, "
                      "status FINAL, every page states it was closed incomplete (--force)",
                      [] if rc == 0 and not bad and not final and not gaps else
                      ["exit %s; figures differ in %s; no FINAL in %s; no gaps in %s: %s" % (
                          rc, bad, final, gaps, err[-300:])])
            rc, out, err = eng.run(config, closed_db, "invoice", "--period", period, "--format",
                                   "json")
            try:
                st = {(i["status"], bool(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$",
                                                  i["closed_at"] or "")))
                      for i in json.loads(out)["invoices"]}
            except Exception as e:
                st = {("error", str(e))}
            tap.check("invoice of a closed period: status final with closed_at",
                      [] if st == {("final", True)} else ["statuses %s: %s" % (st, err[-200:])])
            team = sorted(t for t in invoices if t in pages and invoices[t]["lines"])[0]
            ledger_db.delete_first_memory_hour(closed_db, team)
            rep5 = os.path.join(work, "reports-changed")
            rc, out, err = eng.run(config, closed_db, "report", "--period", period, "--out", rep5)
            left = os.listdir(rep5) if os.path.isdir(rep5) else []
            tap.check("report of a closed period whose data changed since: exit 7 naming the "
                      "frozen total, nothing written",
                      [] if rc == 7 and not left and invoices[team]["total"] in err else
                      ["exit %s, files %s: %s" % (rc, left, err[-300:])])

        if args.readme_shot:
            base = pages.get(args.readme_team)
            if base is None:
                tap.fail("report: README screenshot", "no page for team %r" % args.readme_team)
            else:
                shot = os.path.abspath(args.readme_shot)
                rc, out, err = chromium(browser, work, ["--screenshot=" + shot,
                                                        "--window-size=1280,1500",
                                                        "--hide-scrollbars"],
                                        "file://" + os.path.join(rep, base + ".html"))
                tap.check("report: README screenshot %s" % shot,
                          ["exit %s" % rc] if rc != 0 else png_problems(shot, 1280, 1500))

    def cleanup(self):
        if self.prom:
            self.prom.stop()


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--scenario", default=DEFAULT_SCENARIO)
    ap.add_argument("--readme-shot")
    ap.add_argument("--readme-team", default="vision")
    return harness.run_driver(ReportTest, ap.parse_args(), harness.Tap(limit=1200),
                              "report: test harness", "gl-report-", fresh=False)


if __name__ == "__main__":
    sys.exit(main())
