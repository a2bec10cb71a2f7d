#!/usr/bin/env python3
"""collect_test.py - collection details against a real Prometheus: label
precedence across chunks, the progress line, prices checked against stored
usage.

The specification (Arithmetic): "If two kube_pod_labels series for the same object are present at t,
the one that first appeared later wins." A pod holds 1000 MiB for three hours
(2026-10-07 00:00-03:00, 60 s samples); its kube_pod_labels series with
label_team=alpha is present throughout, a second one with label_team=beta
appears at 00:50 and stays. From 00:50 on, beta wins: alpha is billed 50
minutes and beta 130, whatever the collection's chunks are:
  * one chunk of three hours;
  * chunks of one hour (beta is present from the start of the second and
    third chunks, where only the recorded first appearance can tell);
  * `run` at 02:00 then `run` at 03:00 re-pulling an hour (the re-pulled
    chunk starts with both series present).
Expected figures are worked by hand from the data written here.
It also checks the progress line `collect` draws on a terminal (a pty), and
`prices` / `prices import` against the stored usage: a table that leaves an
hour of a used model without a price, or prices it twice, is refused and the
installed table is left as it was.
"""

import json
import os
import pty
import subprocess
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

T0 = 1791331200  # 2026-10-07T00:00:00Z
STEP = 60
MIB = 1000
DEVICE = ('gpu="0",UUID="GPU-1",pci_bus_id="00000000:07:00.0",device="nvidia0",'
          'modelName="NVIDIA A100-SXM4-80GB",Hostname="n1",DCGM_FI_DRIVER_VERSION="550.54.15"')
POD = 'namespace="ns-x",pod="p",uid="u-1"'
BETA_FROM = T0 + 50 * 60
END = T0 + 3 * 3600


def openmetrics():
    lines = []
    fam = [
        ("DCGM_FI_DEV_FB_USED", DEVICE + ',container="c",namespace="ns-x",pod="p"', T0, MIB),
        ("DCGM_FI_DEV_FB_FREE", DEVICE + ',container="c",namespace="ns-x",pod="p"', T0, 79000),
        ("DCGM_FI_DEV_FB_RESERVED", DEVICE + ',container="c",namespace="ns-x",pod="p"', T0, 920),
    ]
    for name, labels, start, value in fam:
        lines.append("# TYPE %s gauge" % name)
        for t in range(start, END, STEP):
            lines.append("%s{%s} %d %d" % (name, labels, value, t))
    lines.append("# TYPE kube_pod_labels gauge")
    for team, start in (("alpha", T0), ("beta", BETA_FROM)):
        for t in range(start, END, STEP):
            lines.append('kube_pod_labels{%s,label_team="%s"} 1 %d' % (POD, team, t))
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def expected():
    alpha = (BETA_FROM - T0) * MIB
    beta = (END - BETA_FROM) * MIB
    return {"alpha": alpha, "beta": beta}


class LabelSuite(harness.Suite):
    def __init__(self, args, tap):
        super().__init__(args, tap)
        self.prom = None

    def config(self, name, chunk_hours, run=False, **prom):
        cfg = {
            "prometheus": dict({"url": self.prom.url()}, **prom),
            "collection": {"step_seconds": STEP, "chunk_hours": chunk_hours},
            "teams": {"rules": [{"pod_label": "team"}]},
            "prices": {"entries": [{"model_pattern": "^NVIDIA A100", "unit": "GB-Hours",
                                    "price": "0.05", "currency": "USD",
                                    "valid_from": "2026-01-01T00:00:00Z"}]},
            "idle_overhead": {"policy": "unbilled"},
            "billing": {"currency": "USD"},
        }
        if run:
            cfg["run"] = {"start": "2026-10-07T00:00:00Z", "delay_minutes": 0,
                          "repull_hours": 1, "out_dir": self.path("out-" + name)}
        path = self.path(name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def billed(self, cfg, db):
        rc, out, err = self.engine.run(cfg, db, "invoice", "--period", "2026-10")
        if rc != 0:
            return None, "invoice exit %s: %s" % (rc, harness.tail(err))
        got = {}
        for inv in json.loads(out)["invoices"]:
            for line in inv["lines"]:
                if line["kind"] == "memory_used":
                    got[inv["team"]] = got.get(inv["team"], 0) + int(line["mib_seconds"])
        return got, None

    def compare(self, title, cfg, db):
        got, problem = self.billed(cfg, db)
        want = expected()
        p = [problem] if problem else []
        if got is not None and got != want:
            p.append("MiB.s per team %s, expected %s" % (got, want))
        self.tap.check(title, p)

    def main(self):
        om = self.path("labels.om")
        with open(om, "w") as f:
            f.write(openmetrics())
        tsdb = self.path("tsdb")
        rc, err = harness.backfill(om, tsdb)
        if rc != 0:
            self.tap.fail("promtool backfill", harness.tail(err))
            return
        self.prom = harness.Prometheus(self.work, tsdb)
        self.prom.start()
        self.engine = harness.Engine(os.path.abspath(self.args.bin), self.work)

        cfg = self.config("one-chunk", 3)
        rc, _, err = self.engine.run(cfg, self.path("one.db"), "collect", "--from",
                                     "2026-10-07T00:00:00Z", "--to", "2026-10-07T03:00:00Z")
        self.tap.check("collect in one 3-hour chunk", [] if rc == 0 else [harness.tail(err)])
        self.compare("one chunk: the label series that appeared later (beta, 00:50) wins from "
                     "its first step", cfg, self.path("one.db"))

        # prometheus.compression "on": Prometheus compresses (it answers the
        # engine's Accept-Encoding with a Content-Encoding), the figures stay
        req = urllib.request.Request(
            self.prom.url() + "/api/v1/query_range?query=DCGM_FI_DEV_FB_USED&start=%d&end=%d&step=60"
            % (T0, T0 + 3 * 3600), headers={"Accept-Encoding": "deflate, gzip, br, zstd"})
        with urllib.request.urlopen(req, timeout=30) as r:
            encoding = r.headers.get("Content-Encoding")
        cfg = self.config("compressed", 3, compression="on")
        rc, _, err = self.engine.run(cfg, self.path("compressed.db"), "collect", "--from",
                                     "2026-10-07T00:00:00Z", "--to", "2026-10-07T03:00:00Z")
        self.tap.check("collect with prometheus.compression on (Prometheus answers %s)" % encoding,
                       ([] if rc == 0 else [harness.tail(err)]) +
                       ([] if encoding in ("deflate", "gzip") else
                        ["Prometheus answered Content-Encoding %r" % encoding]))
        self.compare("compressed responses: the same figures", cfg, self.path("compressed.db"))

        cfg = self.config("hourly", 1)
        rc, _, err = self.engine.run(cfg, self.path("hourly.db"), "collect", "--from",
                                     "2026-10-07T00:00:00Z", "--to", "2026-10-07T03:00:00Z")
        self.tap.check("collect in 1-hour chunks", [] if rc == 0 else [harness.tail(err)])
        self.compare("1-hour chunks: beta still wins in the chunks that start with both series "
                     "present (first appearance recorded across chunks)", cfg,
                     self.path("hourly.db"))

        # On a terminal, collect draws a progress line (chunks, samples/s, ETA);
        # redirected, it does not.
        master, slave = pty.openpty()
        cmd = self.engine.cmd(cfg, self.path("pty.db"), "collect", "--from",
                              "2026-10-07T00:00:00Z", "--to", "2026-10-07T03:00:00Z")
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                                env=harness.CHILD_ENV, cwd=self.work)
        os.close(slave)
        chunks = b""
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                break
            if not data:
                break
            chunks += data
        rc = proc.wait(timeout=60)
        os.close(master)
        text = chunks.decode(errors="replace")
        p = [] if rc == 0 else ["exit %s" % rc]
        if "3/3 chunks" not in text or "ETA" not in text or "samples/s" not in text:
            p.append("no progress line on the terminal: %r" % harness.tail(text, 300))
        rc, _, err = self.engine.run(cfg, self.path("pipe.db"), "collect", "--from",
                                     "2026-10-07T00:00:00Z", "--to", "2026-10-07T03:00:00Z")
        if "chunks," in err:
            p.append("a progress line was written to a pipe: %r" % harness.tail(err, 300))
        self.tap.check("collect shows chunks done, samples/s and ETA on a terminal, not in a "
                       "pipe", p)

        # prices [import] against the usage stored by the runs above
        self.check_prices(cfg, self.path("hourly.db"))

        cfg = self.config("runs", 1, run=True)
        db = self.path("runs.db")
        p = []
        for now in ("2026-10-07T02:00:00Z", "2026-10-07T03:00:00Z"):
            rc, _, err = self.engine.run(cfg, db, "run", "--now", now)
            if rc != 0:
                p.append("run --now %s: exit %s: %s" % (now, rc, harness.tail(err)))
        self.tap.check("two runs, the second re-pulling an hour", p)
        self.compare("run then run with re-pull: the re-pulled hour keeps beta", cfg, db)

    def check_prices(self, cfg, db):
        table = self.path("prices.csv")
        good = ("model_pattern,unit,price,currency,valid_from,valid_to\n"
                "^NVIDIA A100,GB-Hours,0.05,USD,2026-01-01T00:00:00Z,\n")
        with open(table, "w") as f:
            f.write(good)
        with open(cfg) as f:
            doc = json.load(f)
        doc["prices"] = {"file": table}
        pcfg = self.path("prices-cfg.json")
        with open(pcfg, "w") as f:
            json.dump(doc, f)
        cases = {
            "late": ("model_pattern,unit,price,currency,valid_from,valid_to\n"
                     "^NVIDIA A100,GB-Hours,0.05,USD,2026-10-07T02:00:00Z,\n",
                     "no price for GPU model \"NVIDIA A100-SXM4-80GB\" at 2026-10-07T00:00:00Z"),
            "overlap": (good + "A100-SXM4,GB-Hours,0.06,USD,2026-10-07T01:00:00Z,\n",
                        "rows 2 and 3 both price GPU model"),
        }
        p = []
        rc, out, err = self.engine.run(pcfg, db, "prices")
        if rc != 0 or "every hour has one price" not in out:
            p.append("prices on a good table: exit %s %r" % (rc, harness.tail(out + err)))
        for name, (text, needle) in cases.items():
            path = self.path("prices-%s.csv" % name)
            with open(path, "w") as f:
                f.write(text)
            rc, out, err = self.engine.run(pcfg, db, "prices", "import", "--file", path)
            if rc != 3 or needle not in err:
                p.append("import %s: exit %s, stderr %r" % (name, rc, harness.tail(err)))
            with open(table) as f:
                if f.read() != good:
                    p.append("import %s replaced the installed table" % name)
        new = good.replace("0.05", "0.07")
        path = self.path("prices-new.csv")
        with open(path, "w") as f:
            f.write(new)
        rc, out, err = self.engine.run(pcfg, db, "prices", "import", "--file", path)
        with open(table) as f:
            if rc != 0 or f.read() != new:
                p.append("a valid import: exit %s, table not installed (%s)" % (rc, harness.tail(err)))
        self.tap.check("prices [import] refuses a table that misses or doubles a price of stored "
                       "usage, installs a good one", p)

    def cleanup(self):
        if self.prom:
            self.prom.stop()


def main():
    args = harness.arguments(__doc__).parse_args()
    tap = harness.Tap()
    return harness.run_driver(LabelSuite, args, tap, "collect test run", "gpuledger-collect-")


if __name__ == "__main__":
    sys.exit(main())
