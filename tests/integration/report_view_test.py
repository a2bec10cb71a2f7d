"""gpuledger report view test: the team page as people see it, in headless
Chromium: on a desktop, on a 420 px phone, and printed to PDF.
Usage: python3 tests/integration/report_view_test.py --bin build/gpuledger
           [--work DIR] [--keep] [--screenshots DIR]
Steps: the golden database (tests/golden/make_db.py; August and September
closed by the engine, as golden_test.py does) -> gpuledger report for
2026-10 (open) and 2026-08 (closed) -> the "vision" team page:
- desktop: --screenshot at 1280x1800, a PNG that is not blank;
- phone: --screenshot at 420x2400, and a copy of the page with a measuring
  script appended (the copy only: the page itself has no script and a CSP
  that forbids one) loaded with --dump-dom at 420 px: the document must not
  be wider than the window (no horizontal scrolling of the page; a table
  may scroll inside its own box). The measure is checked to fail on the
  same page with a 1000 px wide element added;
- cost centres: with and without teams.default_cost_center, every
  invoice's cost_center and FOCUS x_CostCenter follow the catalogue, then the
  default; export warns per team left empty; `check` lists such teams;
- print: --print-to-pdf, then pdfinfo (at least one page, A4), pdftotext
  (team name, invoice total, DRAFT for the open month and FINAL for the
  closed one, the idle/overhead explanation) and pdftoppm (page 1 as a PNG
  that is not blank).
--screenshots DIR copies report-desktop.png, report-420.png and
report-print-page1.png there (docs/screenshots/ for the README).
Prints TAP lines; a missing tool (chromium, pdftotext/pdftoppm/pdfinfo from
poppler-utils) is a failing check naming it.
"""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

import harness  # noqa: E402
from golden_test import GOLDEN, config  # noqa: E402
from report_test import chromium, chromium_binary, png_problems  # noqa: E402

TEAM = "vision"
MEASURE = """<script>
(function () {
  /* headless Chromium keeps a window at least 500 px wide: the page is
     laid out in a 420 px wide root instead (the phone media query holds
     for both) */
  var de = document.documentElement, over = [], W = 420;
  de.style.width = W + 'px';
  var all = document.body.getElementsByTagName('*');
  for (var i = 0; i < all.length; i++) {
    var e = all[i], r = e.getBoundingClientRect(), p = e.parentElement, clipped = false;
    for (; p && p !== document.body; p = p.parentElement) {
      var ox = getComputedStyle(p).overflowX;
      if (ox === 'auto' || ox === 'scroll' || ox === 'hidden') { clipped = true; break; }
    }
    if (!clipped && r.right > W + 1 && over.length < 5)
      over.push(e.tagName + (e.className ? '.' + e.className : '') + ' right=' + Math.round(r.right));
  }
  var pre = document.createElement('pre');
  pre.id = 'gl-measure';
  pre.textContent = JSON.stringify({inner: W, window: window.innerWidth,
                                    scroll: document.body.scrollWidth, over: over});
  document.body.appendChild(pre);
})();
</script>"""


def measure(browser, work, page, name, extra_html=""):
    """{inner, scroll, over} of page at 420 px, or an error string."""
    raw = open(page, encoding="utf-8").read()
    raw = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", raw)
    raw = raw.replace("</body>", extra_html + MEASURE + "</body>")
    copy = os.path.join(work, name)
    with open(copy, "w", encoding="utf-8") as f:
        f.write(raw)
    rc, out, err = chromium(browser, work, ["--window-size=420,2400", "--dump-dom"],
                            "file://" + copy)
    m = re.search(r'<pre id="gl-measure">(.*?)</pre>', out, re.S)
    if rc != 0 or not m:
        return "chromium exit %s, no measure: %s" % (rc, err[-300:])
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


class ReportView(harness.Suite):
    def main(self):
        tap, args = self.tap, self.args
        browser = chromium_binary()
        missing = [] if browser else ["chromium"]
        missing += [t for t in ("pdftotext", "pdftoppm", "pdfinfo") if not shutil.which(t)]
        if missing:
            tap.fail("report view tools", "missing %s (Debian packages chromium, poppler-utils; "
                     "tests/run.sh installs them)" % ", ".join(missing))
            return
        eng = harness.Engine(args.bin, self.work)
        db = self.path("golden.db")
        cfg = self.path("gpuledger.json")
        with open(cfg, "w") as f:
            json.dump(config("platform"), f, indent=2)
        for stage in ("base",):
            rc, out, err = harness.run_cmd([sys.executable, os.path.join(GOLDEN, "make_db.py"),
                                            db, stage])
            if rc:
                tap.fail("report view: golden database", err[-400:])
                return
        for period, now in (("2026-08", "2026-09-05T00:00:00Z"),
                            ("2026-09", "2026-10-05T00:00:00Z")):
            rc, _, err = eng.run(cfg, db, "close", "--period", period, "--now", now)
            if rc:
                tap.fail("report view: close %s" % period, err[-400:])
                return
        check_cost_centers(self, eng, db)
        pages = {}
        for period in ("2026-10", "2026-08"):
            out_dir = self.path("reports-" + period)
            rc, _, err = eng.run(cfg, db, "report", "--period", period, "--out", out_dir)
            page = os.path.join(out_dir, "report-%s-%s.html" % (period, TEAM))
            if rc or not os.path.exists(page):
                tap.fail("report view: report %s" % period, "exit %s: %s" % (rc, err[-400:]))
                return
            pages[period] = page
        rc, out, err = eng.run(cfg, db, "invoice", "--period", "2026-10", "--team", TEAM,
                               "--format", "json")
        try:
            inv = json.loads(out)
            inv = inv["invoices"][0] if "invoices" in inv else inv
        except Exception as e:
            tap.fail("report view: invoice JSON", "%s: %s" % (e, err[-300:]))
            return
        shots = {}
        url = "file://" + pages["2026-10"]

        # ---- desktop and phone screenshots
        for name, w, h in (("report-desktop.png", 1280, 1800), ("report-420.png", 420, 2400)):
            png = self.path(name)
            rc, _, err = chromium(browser, self.work, ["--screenshot=" + png,
                                                       "--window-size=%d,%d" % (w, h),
                                                       "--hide-scrollbars"], url)
            tap.check("report view: %s (%dx%d) is a PNG that is not blank" % (name, w, h),
                      ["chromium exit %s: %s" % (rc, err[-300:])] if rc else
                      png_problems(png, w, h))
            shots[name] = png

        # ---- the page fits 420 px (tables scroll inside their own box)
        got = measure(browser, self.work, pages["2026-10"], "measure.html")
        tap.check("report view: at 420 px the page is not wider than the window",
                  [got] if isinstance(got, str) else
                  [] if got["scroll"] <= got["inner"] and not got["over"] else
                  ["document %s px wide in a %s px window; overflowing: %s" % (
                      got["scroll"], got["inner"], got["over"])])
        wide = measure(browser, self.work, pages["2026-10"], "measure-wide.html",
                       '<div style="width:1000px">wide</div>')
        tap.check("report view: the 420 px measure fails on a page with a 1000 px element",
                  [wide] if isinstance(wide, str) else
                  [] if wide["scroll"] > wide["inner"] and wide["over"] else
                  ["not detected: %s" % wide])

        # ---- print: PDF, its text and its first page as an image
        for period, status in (("2026-10", "DRAFT"), ("2026-08", "FINAL")):
            pdf = self.path("report-%s.pdf" % period)
            rc, _, err = chromium(browser, self.work, ["--print-to-pdf=" + pdf,
                                                       "--no-pdf-header-footer"],
                                  "file://" + pages[period], timeout=90)
            p = []
            if rc or not os.path.exists(pdf):
                tap.fail("report view: %s PDF" % period, "chromium exit %s: %s" % (rc, err[-300:]))
                continue
            info = subprocess.run(["pdfinfo", pdf], capture_output=True, text=True).stdout
            m = re.search(r"^Pages:\s+(\d+)", info, re.M)
            pages_n = int(m.group(1)) if m else 0
            size = re.search(r"^Page size:\s+([\d.]+) x ([\d.]+)", info, re.M)
            if pages_n < 1:
                p.append("no page (pdfinfo: %r)" % info[-200:])
            if not size or abs(float(size.group(1)) - 595.3) > 2:
                p.append("not A4 portrait: %s" % (size.group(0) if size else info[-200:]))
            text = subprocess.run(["pdftotext", "-layout", pdf, "-"], capture_output=True,
                                  text=True).stdout
            flat = " ".join(text.split())
            want = ["Computer", status, "Idle is GPU memory that no pod held",
                    "Month over month", "Top workloads"]
            if period == "2026-10":
                want.append(inv["total"])
            for w in want:
                if w not in flat:
                    p.append("%r not in the PDF text" % w)
            tap.check("report view: %s page prints to a %d-page A4 PDF with its text (%s)" % (
                period, pages_n, status), p)
            if period == "2026-10":
                prefix = self.path("print")
                r = subprocess.run(["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", pdf,
                                    prefix], capture_output=True, text=True)
                cands = sorted(f for f in os.listdir(self.work) if f.startswith("print")
                               and f.endswith(".png"))
                png = os.path.join(self.work, cands[0]) if cands else None
                if r.returncode or not png:
                    tap.fail("report view: PDF page 1 as PNG", r.stderr[-300:])
                else:
                    # A4 at 60 dpi: 496 x 702 pixels
                    tap.check("report view: PDF page 1 renders (pdftoppm) to a PNG that is not "
                              "blank", png_problems(png, 496, 702))
                    shots["report-print-page1.png"] = png

        if args.screenshots:
            os.makedirs(args.screenshots, exist_ok=True)
            for name, src in shots.items():
                if os.path.exists(src):
                    shutil.copy(src, os.path.join(args.screenshots, name))
            tap.note("screenshots copied to %s" % args.screenshots)


def cost_center_of(c, team):
    """The test's own rule: the catalogue's cost_center, else
    teams.default_cost_center, else none."""
    cat = {t["id"]: t for t in c["teams"].get("catalogue", [])}
    return (cat.get(team) or {}).get("cost_center") or c["teams"].get("default_cost_center")


def check_cost_centers(self, eng, db):
    """teams.default_cost_center fills every invoice's cost_center and every
    FOCUS x_CostCenter; without it `check` lists the teams without one and
    export warns per team."""
    tap = self.tap
    for default in (None, "cc-9999"):
        c = config("platform")
        if default:
            c["teams"]["default_cost_center"] = default
        path = self.path("cc-%s.json" % (default or "none"))
        with open(path, "w") as f:
            json.dump(c, f)
        rc, out, err = eng.run(path, db, "invoice", "--period", "2026-10", "--format", "json")
        p = []
        try:
            for inv in json.loads(out)["invoices"]:
                if inv["cost_center"] != cost_center_of(c, inv["team"]):
                    p.append("%s: cost_center %r, expected %r" % (
                        inv["team"], inv["cost_center"], cost_center_of(c, inv["team"])))
        except Exception as e:
            p.append("invoice JSON: %s (%s)" % (e, err[-200:]))
        rc, csv_text, err = eng.run(path, db, "export", "--period", "2026-10")
        rows = list(csv.DictReader(io.StringIO(csv_text)))
        empty = sorted({r["SubAccountId"] for r in rows if not r["x_CostCenter"]})
        want_empty = sorted({r["SubAccountId"] for r in rows
                             if not cost_center_of(c, r["SubAccountId"])})
        if empty != want_empty or not rows:
            p.append("empty x_CostCenter for %s, expected %s" % (empty, want_empty))
        for t in want_empty:
            if "team %s has no cost center" % t not in err:
                p.append("no warning for %s: %r" % (t, err[-300:]))
        if not default and not want_empty:
            p.append("the fixture has no team without a cost center")
        rc, out, err = eng.run(path, db, "check")
        line = [ln for ln in out.splitlines() if ln.startswith("cost centers:")]
        if default:
            ok = line and line[0].startswith("cost centers: ok")
        else:
            # the catalogue has all; the default team "unallocated" has none
            ok = line and "1 team(s) without one" in line[0] and " unallocated" in line[0]
        if not ok:
            p.append("check printed %r" % line)
        tap.check("cost centers %s: invoices, FOCUS x_CostCenter, export warning, check" % (
            "with teams.default_cost_center" if default else "without a default"), p)



def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--screenshots", help="copy the PNGs into this folder")
    return harness.run_driver(ReportView, ap.parse_args(), harness.Tap(),
                              "report view: test harness", "gl-report-view-")


if __name__ == "__main__":
    sys.exit(main())
