#!/usr/bin/env python3
"""Exporter schema presets: units and labels per query.

The fleet scenario (scenarios/fleet.json: exclusive, time-sliced, MIG and
per-process GPUs, FB_FREE / FB_RESERVED only on per-pod series on one) is
generated twice by tests/gen/gencluster.py: as it is (MiB, label Hostname)
for its expected figures only, and as a newer exporter would serve it
(FB_USED / FREE / RESERVED in bytes, label hostname), which is backfilled
into a real Prometheus. Checks:
- collected with exporter.preset "dcgm-exporter-bytes", and again with the
  4.x preset under explicit per-query units and labels (the overrides win),
  the invoices and the fleet summary are exactly the MiB scenario's
  expected figures (the generator's own model, never engine output);
- `check` with that source declared as MiB exits non-zero naming the unit
  mismatch, the queries and the bytes preset;
- `check` with the bytes units but the hostname label "Hostname" exits
  non-zero naming the label the series carry and the preset;
- `check` with the bytes preset passes.
"""

import copy
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "gen"))
sys.path.insert(0, HERE)

import gencluster as gc  # noqa: E402
import harness  # noqa: E402
import run as R  # noqa: E402
from harness import tail  # noqa: E402

SCENARIO = os.path.join(HERE, "scenarios", "fleet.json")
BYTES_OPTS = {"fb_unit": "bytes", "hostname_label": "hostname",
              "exporter_preset": "dcgm-exporter-bytes"}


def invoice_problems(doc, exp):
    """Every invoice's lines (all kinds: memory, reserved-unused, idle and
    overhead shares) and total against expected.json's invoices."""
    p = []
    got = {inv.get("team"): inv for inv in doc.get("invoices") or []}
    if set(got) != set(exp["invoices"]):
        p.append("teams %s, expected %s" % (sorted(map(str, got)), sorted(exp["invoices"])))
    for team in sorted(set(got) & set(exp["invoices"])):
        e, g = exp["invoices"][team], got[team]
        if g.get("total") != e["total"]:
            p.append("%s total %r, expected %r" % (team, g.get("total"), e["total"]))
        key = lambda l: (l.get("cluster"), l.get("gpu_model"), l.get("kind"), l.get("price_id"))
        gl = {key(l): l for l in g.get("lines") or []}
        el = {key(l): l for l in e["lines"]}
        if set(gl) != set(el):
            p.append("%s lines %s, expected %s" % (team, sorted(gl, key=str), sorted(el, key=str)))
        for k in sorted(set(gl) & set(el), key=str):
            for f in ("mib_seconds", "gb_hours", "amount", "estimated"):
                if gl[k].get(f) != el[k][f]:
                    p.append("%s %s %s: got %r, expected %r" % (team, k, f, gl[k].get(f),
                                                                el[k][f]))
    return p


class Suite(harness.Suite):
    prom = None

    def gen(self, name, scn):
        path = self.path(name + ".json")
        with open(path, "w") as f:
            json.dump(scn, f)
        out = self.path(name)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gen", "gencluster.py"),
                            path, out], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("gencluster %s: %s" % (name, tail(r.stderr)))
        with open(os.path.join(out, "expected.json")) as f:
            return out, json.load(f)

    def config(self, name, mutate):
        with open(os.path.join(self.bdir, "config.json")) as f:
            cfg = json.load(f)
        cfg["prometheus"]["url"] = self.prom.url()
        cfg["prices"]["file"] = os.path.join(self.bdir, "prices.csv")
        mutate(cfg)
        path = self.path("config-%s.json" % name)
        with open(path, "w") as f:
            json.dump(cfg, f, indent=1)
        return path

    def collect_and_compare(self, label, cfg):
        exp = self.exp_mib
        db = self.path("%s.db" % label)
        w = exp["window"]
        rc, out, err = self.eng.run(cfg, db, "collect", "--from", w["from"], "--to", w["to"])
        if rc != 0:
            self.tap.fail("%s: collect" % label, "exit %s: %s" % (rc, tail(err)))
            return
        rc, out, err = self.eng.run(cfg, db, "invoice", "--period", exp["period"],
                                    "--format", "json")
        if rc != 0:
            self.tap.fail("%s: invoice" % label, "exit %s: %s" % (rc, tail(err)))
            return
        p = invoice_problems(json.loads(out), exp)
        self.tap.check("%s: invoices (every line, amount and total) equal the MiB scenario's "
                       "expected figures" % label, p)
        rc, out, err = self.eng.run(cfg, db, "summary", "--period", exp["period"],
                                    "--format", "json")
        if rc != 0:
            self.tap.fail("%s: summary" % label, "exit %s: %s" % (rc, tail(err)))
            return
        doc = json.loads(out)
        p = []
        for what, keyf in (("models", lambda m: (m.get("cluster"), m.get("gpu_model"))),
                           ("devices", lambda m: (m.get("cluster"), m.get("uuid"),
                                                  m.get("gpu_i_id") or None))):
            got = {keyf(m): m for m in doc.get(what) or []}
            want = {keyf(m): m for m in exp["summary"][what]}
            if set(got) != set(want):
                p.append("%s: rows %s, expected %s" % (what, sorted(got, key=str),
                                                       sorted(want, key=str)))
            for k in sorted(set(got) & set(want), key=str):
                for f in gc.SUMMARY_FIELDS:
                    if not R.same_dec(got[k].get(f), want[k][f]):
                        p.append("%s %s: got %r, expected %s" % (k, f, got[k].get(f), want[k][f]))
        self.tap.check("%s: fleet summary per model and device (capacity, used, reserved, "
                       "unattributed, idle, excess) equals the MiB scenario's" % label, p)

    def check_cmd(self, label, cfg, want_rc0, needles):
        rc, out, err = self.eng.run(cfg, self.path("check-%s.db" % label), "check", "--at",
                                    self.at)
        text = out + err
        p = []
        if (rc == 0) != want_rc0:
            p.append("exit %s, expected %s" % (rc, "0" if want_rc0 else "non-zero"))
        for n in needles:
            if n not in text:
                p.append("output lacks %r" % n)
        if p:
            p.append("output: %s" % tail(text, 900))
        return p

    def main(self):
        tap = self.tap
        for t in ("promtool", "prometheus"):
            if not shutil.which(t):
                tap.fail("%s on PATH" % t, "not found (Debian package prometheus)")
                return
        with open(SCENARIO) as f:
            base = json.load(f)
        base.pop("runs", None)
        scn_b = copy.deepcopy(base)
        scn_b.update(BYTES_OPTS)
        scn_b["name"] = base["name"] + "-bytes"
        try:
            _, self.exp_mib = self.gen("mib", base)
            self.bdir, exp_b = self.gen("bytes", scn_b)
        except RuntimeError as e:
            tap.fail("generate the MiB and the bytes scenario", e)
            return
        # the generator's own consistency: same figures for both data shapes
        same = all(exp_b[k] == self.exp_mib[k] for k in ("invoices", "summary", "fleet"))
        with open(os.path.join(self.bdir, "data.om")) as f:
            head = f.read(1 << 20)
        shape = 'hostname="' in head and 'Hostname="' not in head
        tap.check("generator: the bytes scenario has FB values x 1048576 and label hostname, "
                  "and the model gives it the MiB scenario's figures",
                  [] if same and shape else ["same figures %s, data shape %s" % (same, shape)])
        tsdb = self.path("tsdb")
        t0 = time.time()
        rc, out = harness.backfill(os.path.join(self.bdir, "data.om"), tsdb)
        if rc != 0:
            tap.fail("promtool backfill", tail(out))
            return
        tap.setup("promtool backfill of the bytes scenario (%.1fs)" % (time.time() - t0))
        self.prom = harness.Prometheus(self.work, tsdb)
        try:
            self.prom.start(timeout=30)
        except RuntimeError as e:
            tap.fail("prometheus ready", e)
            return
        self.eng = harness.Engine(self.args.bin, self.work)
        cl = gc.Cluster(scn_b)
        self.at = gc.fmt_time(cl.win_from + 7200)

        # 1. the bytes preset: the MiB scenario's figures exactly
        self.collect_and_compare("bytes-preset", self.config("bytes", lambda c: None))

        # 2. explicit per-query units and labels win over a MiB preset
        def overrides(c):
            c["exporter"] = {"preset": "dcgm-exporter-4.x", "labels": {"hostname": "hostname"},
                             "queries": {q: {"unit": "bytes"} for q in
                                         ("fb_used", "fb_free", "fb_reserved")}}
        self.collect_and_compare("per-query-overrides", self.config("overrides", overrides))

        # 3. the bytes source declared as MiB: check names the mismatch and the preset
        def as_mib(c):
            c.pop("exporter", None)
            c["memory_source"]["unit"] = "MiB"
            c["collection"]["hostname_label"] = "hostname"
        tap.check("check: a bytes source configured as MiB exits non-zero naming the unit "
                  "mismatch, the queries and the preset dcgm-exporter-bytes",
                  self.check_cmd("as-mib", self.config("as-mib", as_mib), False,
                                 ["unit mismatch", "fb_used", "fb_free", "fb_reserved",
                                  'exporter.preset "dcgm-exporter-bytes"']))

        # 4. a wrong hostname label
        def wrong_host(c):
            c["collection"]["hostname_label"] = "Hostname"
        tap.check("check: the hostname label \"Hostname\" on a source labelled \"hostname\" "
                  "exits non-zero naming the label the series carry and the preset",
                  self.check_cmd("wrong-host", self.config("wrong-host", wrong_host), False,
                                 ['"Hostname"', 'carry "hostname"',
                                  'exporter.preset "dcgm-exporter-bytes"',
                                  'collection.hostname_label "hostname"']))

        # 5. the right preset passes check
        tap.check("check: the bytes preset on the bytes source passes (no unit or label finding)",
                  self.check_cmd("right", self.config("right", lambda c: None), True, []))

        # 6. config errors name the key
        def bad_preset(c):
            c["exporter"] = {"preset": "dcgm-exporter-9"}

        def conflict(c):
            c["exporter"]["labels"] = {"hostname": "node"}
            c["collection"]["hostname_label"] = "Hostname"
        p = []
        for name, mut, needle in (("bad-preset", bad_preset, "exporter.preset: unknown preset"),
                                  ("conflict", conflict, "exporter.labels.hostname")):
            rc, out, err = self.eng.run(self.config(name, mut), self.path("x.db"), "check")
            if rc == 0 or needle not in err:
                p.append("%s: exit %s, stderr %s" % (name, rc, tail(err, 300)))
        tap.check("config: an unknown preset and a label given twice differently are errors "
                  "naming the key", p)

    def cleanup(self):
        if self.prom:
            self.prom.stop()


def main():
    ap = harness.arguments(__doc__)
    return harness.run_driver(Suite, ap.parse_args(), harness.Tap(limit=2000, shown=6),
                              "presets run", "gpuledger-presets-")


if __name__ == "__main__":
    sys.exit(main())
