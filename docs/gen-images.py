#!/usr/bin/env python3
"""gen-images.py - the report screenshots of docs/outputs.md.

Usage: python3 docs/gen-images.py --bin build/gpuledger [--out docs/images]
                                  [--work DIR] [--keep] [--width 1100]

Builds one month of a small cluster from test scenarios (below) with
tests/gen/gencluster.py, backfills it into a Prometheus started on
127.0.0.1 (promtool, prometheus), collects it, writes the report pages and
renders two of them with headless Chromium:

  fleet.png   the fleet page (capacity per model, teams, invoices, demand
              waiting)
  team.png    team-a's page (its invoice, top workloads, right-sizing advice,
              cost per unit of work, GPU demand waiting)

The month: tests/integration/scenarios/unitcost.json (a vLLM server and a
training job publishing work counters, a bare pod holding little of its
GPU), with pending.json's pods waiting without a node and advise.json's
MIG-split node, so that every section has rows.

Each page is shot at its full height (measured first in a copy of the page
with a script; the shot itself is of the page as written). The PNGs are
reduced with pngquant (Debian package pngquant) when it is installed, so
that each stays below 200 KB. Not part of tests/run.sh: a docs chore, run
by hand after a change to the pages.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCEN = os.path.join(ROOT, "tests", "integration", "scenarios")
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402

PERIOD = "2026-11"
WINDOW = ("2026-11-02T00:00:00Z", "2026-11-02T06:00:00Z")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]
MAX_BYTES = 200 * 1024
HEIGHT = """<script>
document.addEventListener('DOMContentLoaded', function () {
  var pre = document.createElement('pre');
  pre.id = 'gl-height';
  pre.textContent = String(document.documentElement.scrollHeight);
  document.body.appendChild(pre);
});
</script>"""


def scenario():
    """unitcost.json with pending.json's pods that wait without a node and
    advise.json's MIG-split node adv-n2 and its pods (a MIG slice seen in
    the fleet is what right-sizing can recommend); the refused counter left
    out (it is a test's)."""
    with open(os.path.join(SCEN, "unitcost.json")) as f:
        scn = json.load(f)
    with open(os.path.join(SCEN, "pending.json")) as f:
        pend = json.load(f)
    with open(os.path.join(SCEN, "advise.json")) as f:
        adv = json.load(f)
    scn["name"] = "screenshots"
    scn["description"] = ("docs/gen-images.py: unitcost.json plus pending.json's waiting pods "
                          "and advise.json's node adv-n2.")
    scn["work"] = [w for w in scn["work"] if not w.get("fraction")]
    scn["nodes"] += [n for n in adv["nodes"] if n["name"] == "adv-n2"]
    scn["pods"] += [p for p in adv["pods"] if p["node"] == "adv-n2"]
    known = {ns["name"] for ns in scn["namespaces"]}
    scn["namespaces"] += [ns for ns in pend["namespaces"] if ns["name"] not in known]
    # the pods that wait without a node (no GPU of the scenario's is needed)
    scn["pods"] += [dict(p, uid=p["uid"].replace("f1000001", "f9000001"))
                    for p in pend["pods"] if p.get("pending_until") and p["node"] == ""]
    return scn


class Shots(harness.ScenarioSuite):
    def chromium(self, extra, url):
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.work)
        try:
            return harness.run_cmd([self.browser] + FLAGS + ["--user-data-dir=" + profile]
                                   + extra + [url], timeout=120)
        finally:
            shutil.rmtree(profile, ignore_errors=True)

    def height(self, page):
        """The page's full height at the shot's width (a measuring copy)."""
        with open(page, encoding="utf-8") as f:
            raw = f.read()
        raw = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", raw)
        copy = self.path("measure.html")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(raw.replace("</body>", HEIGHT + "</body>"))
        rc, out, err = self.chromium(["--window-size=%d,1000" % self.args.width, "--dump-dom"],
                                     "file://" + copy)
        m = re.search(r'<pre id="gl-height">(\d+)</pre>', out or "")
        if rc != 0 or not m:
            raise RuntimeError("measuring %s: exit %s: %s" % (page, rc, harness.tail(err)))
        return int(m.group(1))

    def shoot(self, page, png):
        h = self.height(page)
        rc, _, err = self.chromium(["--window-size=%d,%d" % (self.args.width, h),
                                    "--screenshot=" + png], "file://" + page)
        if rc != 0 or not os.path.exists(png):
            raise RuntimeError("screenshot of %s: exit %s: %s" % (page, rc, harness.tail(err)))
        if shutil.which("pngquant"):
            subprocess.run(["pngquant", "--force", "--skip-if-larger", "--quality=60-90",
                            "--output", png, png], check=False)
        size = os.path.getsize(png)
        if size >= MAX_BYTES:
            raise RuntimeError("%s is %d bytes (limit %d): install pngquant or narrow "
                               "--width" % (png, size, MAX_BYTES))
        self.tap.ok("%s: %dx%d, %d bytes" % (os.path.basename(png), self.args.width, h, size))

    def main(self):
        self.browser = shutil.which("chromium") or shutil.which("chromium-browser")
        for t, found in (("chromium", self.browser), ("promtool", shutil.which("promtool")),
                         ("prometheus", shutil.which("prometheus"))):
            if not found:
                self.tap.fail("%s on PATH" % t, "not found")
                return
        self.start_engine()
        path = self.path("scenario.json")
        with open(path, "w") as f:
            json.dump(scenario(), f, indent=1)
        _, _, cfg_path, db = self.collect_scenario(path, WINDOW)
        pages = self.path("report")
        self.run(cfg_path, db, "report", "--period", PERIOD, "--out", pages)
        team = os.path.join(pages, "report-%s-team-a.html" % PERIOD)
        with open(team, encoding="utf-8") as f:
            text = f.read()
        missing = [s for s in ("Right-sizing advice", "Cost per unit of work",
                               "GPU demand waiting") if "<h2>" + s not in text]
        if "Nothing to recommend" in text:
            missing.append("a right-sizing line")
        if missing:
            raise RuntimeError("team-a's page lacks %s" % ", ".join(missing))
        os.makedirs(self.args.out, exist_ok=True)
        self.shoot(os.path.join(pages, "fleet-%s.html" % PERIOD),
                   os.path.join(self.args.out, "fleet.png"))
        self.shoot(team, os.path.join(self.args.out, "team.png"))


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--out", default=os.path.join(HERE, "images"),
                    help="where the PNGs go (default: %(default)s)")
    ap.add_argument("--width", type=int, default=1100, help="window width in px")
    args = ap.parse_args()
    args.out = os.path.abspath(args.out)
    return harness.run_driver(Shots, args, harness.Tap(), "report screenshots",
                              "gpuledger-images-")


if __name__ == "__main__":
    sys.exit(main())
