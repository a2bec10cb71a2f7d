#!/usr/bin/env python3
"""golden_test.py - every output format of gpuledger against expected files
(curl's tests/data model; tests/golden/README.md).

Usage: python3 tests/integration/golden_test.py --bin build/gpuledger
           [--work DIR] [--keep] [--regen] [--only NAME]

tests/golden/make_db.py writes a fixed database (no Prometheus, no clock):
three months of one cluster with two shared GPUs, a MIG instance, an H100
that runs over its capacity for an hour, a device without memory metrics,
a hostile team id, node and pod names, a price change inside October.
August and September are closed; one late hour of September arrives after
its close (correction lines of October). Each case below runs one command
and compares what it printed (stdout, or "exit N" and stderr for a failing
command) or the folder it wrote with tests/golden/expected/<case>, byte for
byte. A case that differs prints a unified diff excerpt.

--regen writes the actual outputs over tests/golden/expected/ instead of
comparing: review the change with `git diff tests/golden/expected`.
"""

import difflib
import filecmp
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOLDEN = os.path.join(REPO, "tests", "golden")
EXPECTED = os.path.join(GOLDEN, "expected")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import harness  # noqa: E402
import ledger_db  # noqa: E402


def config(policy):
    return {
        "clusters": [{"name": "east", "prometheus": {"url": "http://127.0.0.1:9"}}],
        "collection": {"queries_dir": os.path.join(REPO, "queries")},
        "teams": {"rules": [{"pod_label": "team"}], "default": "unallocated",
                  "catalogue": [{"id": "ml-research", "name": "ML Research",
                                 "cost_center": "cc-1042"},
                                {"id": "vision", "name": "Computer <Vision> | CV",
                                 "cost_center": "cc-2077"},
                                {"id": "platform", "name": "GPU Platform",
                                 "cost_center": "cc-0001"}]},
        "idle_overhead": {"policy": policy, "platform_team": "platform"},
        "run": {"delay_minutes": 10, "repull_hours": 0},
        "prices": {"file": os.path.join(GOLDEN, "prices.csv")},
        "billing": {"currency": "USD", "account_id": "acct-1", "account_name": "GPU Prod",
                    "provider": "Platform Engineering", "service_name": "GPU Platform",
                    "basis": "max"},
    }


# name, config, argv, what: "stdout" | "status" (exit + stderr) | "dir" (argv writes OUT)
CASES = [
    ("invoice-2026-08-closed.json", "platform", ["invoice", "--period", "2026-08"], "stdout"),
    ("invoice-2026-09-closed.md", "platform",
     ["invoice", "--period", "2026-09", "--format", "md"], "stdout"),
    ("export-2026-09-closed.csv", "platform", ["export", "--period", "2026-09"], "stdout"),
    ("invoice-2026-10.json", "platform", ["invoice", "--period", "2026-10"], "stdout"),
    ("invoice-2026-10.md", "platform",
     ["invoice", "--period", "2026-10", "--format", "md"], "stdout"),
    ("invoice-2026-10-vision.json", "platform",
     ["invoice", "--period", "2026-10", "--team", "vision"], "stdout"),
    ("invoice-2026-10-files", "platform", ["invoice", "--period", "2026-10", "--out", "OUT"],
     "dir"),
    ("invoice-2026-10-files-md", "platform",
     ["invoice", "--period", "2026-10", "--format", "md", "--out", "OUT"], "dir"),
    ("invoice-2026-09-closed-files", "platform",
     ["invoice", "--period", "2026-09", "--out", "OUT"], "dir"),
    ("export-2026-10.csv", "platform", ["export", "--period", "2026-10"], "stdout"),
    ("export-2026-10-file", "platform",
     ["export", "--period", "2026-10", "--out", "OUT/focus.csv"], "dir"),
    ("export-2026-09-closed-file", "platform",
     ["export", "--period", "2026-09", "--out", "OUT/focus.csv"], "dir"),
    ("summary-2026-10.json", "platform", ["summary", "--period", "2026-10"], "stdout"),
    ("summary-2026-10.md", "platform",
     ["summary", "--period", "2026-10", "--format", "md"], "stdout"),
    ("summary-2026-09.json", "platform", ["summary", "--period", "2026-09"], "stdout"),
    ("anomalies-2026-10.json", "platform", ["anomalies", "--period", "2026-10"], "stdout"),
    ("anomalies-2026-10.md", "platform",
     ["anomalies", "--period", "2026-10", "--format", "md"], "stdout"),
    ("anomalies-2026-10-vision.md", "platform",
     ["anomalies", "--period", "2026-10", "--team", "vision", "--format", "md"], "stdout"),
    ("report-2026-10", "platform", ["report", "--period", "2026-10", "--out", "OUT"], "dir"),
    ("report-2026-10-vision", "platform",
     ["report", "--period", "2026-10", "--team", "vision", "--out", "OUT"], "dir"),
    ("report-2026-08-closed", "platform", ["report", "--period", "2026-08", "--out", "OUT"],
     "dir"),
    ("report-2026-09-closed-changed.status", "platform",
     ["report", "--period", "2026-09", "--out", "OUT"], "status"),
    ("invoice-2026-10-proportional.md", "proportional",
     ["invoice", "--period", "2026-10", "--format", "md"], "stdout"),
    ("invoice-2026-10-proportional.json", "proportional",
     ["invoice", "--period", "2026-10"], "stdout"),
    ("report-2026-10-proportional", "proportional",
     ["report", "--period", "2026-10", "--out", "OUT"], "dir"),
    ("invoice-2026-10-unbilled.json", "unbilled", ["invoice", "--period", "2026-10"],
     "stdout"),
    ("run-out", "platform", ["run", "--out", "OUT", "--now", "2026-10-03T00:10:00Z"], "dir"),
]


def tree(root):
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def text_diff(exp_path, act_path, label):
    def lines(p):
        with open(p, "rb") as f:
            return f.read().decode("utf-8", "replace").splitlines(keepends=True)
    d = difflib.unified_diff(lines(exp_path), lines(act_path), "expected/" + label,
                             "actual/" + label, n=1)
    return "".join(list(d)[:40])


class Golden(harness.Suite):
    def main(self):
        tap, args = self.tap, self.args
        eng = harness.Engine(args.bin, self.work)
        db = self.path("golden.db")
        configs = {}
        for policy in ("platform", "proportional", "unbilled"):
            configs[policy] = self.path("gpuledger-%s.json" % policy)
            with open(configs[policy], "w") as f:
                json.dump(config(policy), f, indent=2)

        def make(stage):
            rc, out, err = harness.run_cmd([sys.executable, os.path.join(GOLDEN, "make_db.py"),
                                            db, stage])
            if rc != 0:
                raise RuntimeError("make_db.py %s: %s" % (stage, err))

        make("base")
        for period, now in (("2026-08", "2026-09-05T00:00:00Z"),
                            ("2026-09", "2026-10-05T00:00:00Z")):
            rc, _, err = eng.run(configs["platform"], db, "close", "--period", period,
                                 "--now", now)
            if rc != 0:
                raise RuntimeError("close %s: exit %d: %s" % (period, rc, err))
        make("late")

        actual = self.path("actual")
        os.makedirs(actual)
        for name, policy, argv, what in CASES:
            if args.only and args.only != name:
                continue
            dest = os.path.join(actual, name)
            if what == "dir":
                os.makedirs(dest)
                argv = [a.replace("OUT", dest) for a in argv]
            rc, out, err = eng.run(configs[policy], db, *argv)
            if what == "status":
                with open(dest, "w") as f:
                    f.write("exit %d\n%s" % (rc, err.replace(self.work, "WORK")))
            elif rc != 0:
                tap.fail(name, "exit %d: %s" % (rc, harness.tail(err)))
                continue
            elif what == "stdout":
                with open(dest, "w") as f:
                    f.write(out)
            if args.regen:
                exp = os.path.join(EXPECTED, name)
                if os.path.isdir(exp):
                    shutil.rmtree(exp)
                elif os.path.exists(exp):
                    os.remove(exp)
                os.makedirs(EXPECTED, exist_ok=True)
                (shutil.copytree if what == "dir" else shutil.copyfile)(dest, exp)
                tap.ok("%s (regenerated)" % name)
                continue
            tap.check("%s matches tests/golden/expected/%s" % (name, name),
                      self.compare(name, dest, what))
        if not args.only:
            self.long_models(eng)

    def long_models(self, eng):
        """`prices` checks every model with usage for overlapping price rows,
        also models whose names share a long prefix (it once remembered the
        last model in 512 bytes, so the second of two such models was never
        checked)."""
        sys.path.insert(0, GOLDEN)
        import make_db  # noqa: E402
        db_path = self.path("long-models.db")
        db = make_db.open_db(db_path)
        prefix = "NVIDIA " + "X" * 600
        a, b = prefix + " A", prefix + " B"
        h = make_db.hour("2026-10-01T10")
        for i, model in ((101, a), (102, b)):
            ledger_db.insert_device(db, i, "east", "GPU-long-%d" % i, "", "", model, "node-9",
                                    81920, h, h)
            ledger_db.insert_usage(db, h, "east", "ns", "p%d" % i, i, "ml-research",
                                   "memory_used", 1000 * 3600, 0, h, h + 3540)
        db.commit()
        db.close()
        csv = self.path("long-prices.csv")
        with open(csv, "w") as f:
            f.write("model_pattern,unit,price,currency,valid_from,valid_to\n"
                    "X A$,GB-Hours,0.03,USD,2026-01-01T00:00:00Z,\n"
                    "X B$,GB-Hours,0.04,USD,2026-01-01T00:00:00Z,2026-11-01T00:00:00Z\n"
                    "X B$,GB-Hours,0.05,USD,2026-10-01T00:00:00Z,\n")
        cfg = config("platform")
        cfg["prices"] = {"file": csv}
        cfg_path = self.path("long-models.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        rc, out, err = eng.run(cfg_path, db_path, "prices")
        problems = []
        if rc != 3:
            problems.append("exit %d, expected 3" % rc)
        if "rows 3 and 4 both price GPU model" not in err or " B\"" not in err:
            problems.append("stderr does not name rows 3 and 4 and the B model: %s"
                            % harness.tail(err, 300))
        self.tap.check("prices: two models sharing a 600-character prefix are each checked for "
                       "overlapping rows", problems)

    def compare(self, name, dest, what):
        exp = os.path.join(EXPECTED, name)
        if not os.path.exists(exp):
            return ["no expected file (run with --regen and review the diff)"]
        if what != "dir":
            if filecmp.cmp(exp, dest, shallow=False):
                return []
            return ["differs: " + text_diff(exp, dest, name)]
        problems = []
        e, a = tree(exp), tree(dest)
        if e != a:
            problems.append("files differ: missing %s, unexpected %s" %
                            (sorted(set(e) - set(a)), sorted(set(a) - set(e))))
        for rel in sorted(set(e) & set(a)):
            if not filecmp.cmp(os.path.join(exp, rel), os.path.join(dest, rel), shallow=False):
                problems.append("%s differs: %s" % (rel, text_diff(os.path.join(exp, rel),
                                                                   os.path.join(dest, rel),
                                                                   name + "/" + rel)))
        return problems


def main():
    ap = harness.arguments(__doc__)
    ap.add_argument("--regen", action="store_true",
                    help="write the actual outputs over tests/golden/expected/")
    ap.add_argument("--only", help="run one case")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    tap = harness.Tap()
    return harness.run_driver(lambda a, t: Golden(a, t), args, tap, "golden", "gl-golden-")


if __name__ == "__main__":
    sys.exit(main())
