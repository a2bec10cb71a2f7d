#!/usr/bin/env python3
"""The manual stays true to the repository and the binary.

    python3 tests/docs_test.py --bin build/gpuledger

TAP, one check per rule, the offending file:line named on failure:
- README.md is a front page (at most 300 lines) and keeps its two commands;
- every relative link of README.md and docs/*.md names a file of the
  checkout, and a #anchor a heading of the page it points to;
- every key the engine accepts (the key lists of engine/base/config.c, read by
  tests/docs_keys.py) is named in docs/configuration.md, and every `config`
  key of the Helm chart's values.schema.json is one the engine accepts;
- every command of `gpuledger --help` is in README.md's command block and
  in the man page, and docs/gpuledger.1 is what docs/gen-man.py writes today;
- README.md and docs/ cite no specification section numbers, issue or
  session numbers (documents a reader of the repository does not have).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from docs_keys import Unplaced, engine_keys  # noqa: E402

README = os.path.join(ROOT, "README.md")
DOCS = os.path.join(ROOT, "docs")
MAX_README_LINES = 300
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# assembled so that this file does not match its own rule
CITATION = re.compile("S" + "PEC|issue [0-9]|session [0-9]")

failed = 0


def check(ok, name, detail=""):
    global failed
    if ok:
        print("ok - " + name)
    else:
        failed += 1
        print("not ok - " + name + (": " + detail if detail else ""))


def rel(path):
    return os.path.relpath(path, ROOT)


def read(path):
    """A file's text; a missing file is a failed check, and reads as empty."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        check(False, "%s exists" % rel(path))
        return ""


def markdown_files():
    docs = sorted(os.path.join(DOCS, f) for f in os.listdir(DOCS) if f.endswith(".md"))
    return [README] + docs


def prose(path):
    """(line number, line) outside fenced code blocks."""
    fence = False
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.startswith("```"):
                fence = not fence
                continue
            if not fence:
                yield i, line


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped (letters,
    digits, '_', '-' and spaces kept), spaces as hyphens."""
    text = heading.strip().lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for _, line in prose(path):
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


def check_readme():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    n = text.count("\n")
    check(n <= MAX_README_LINES, "README.md has at most %d lines (%d)" % (MAX_README_LINES, n))
    for cmd in ("./examples/demo.sh", "./tests/run.sh"):
        check(("\n" + cmd + " ") in text and os.access(os.path.join(ROOT, cmd), os.X_OK),
              "README.md starts readers with %s, which exists" % cmd)


def check_links():
    bad, count = [], 0
    for path in markdown_files():
        for i, line in prose(path):
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"[a-z]+:", target):
                    continue  # an absolute URL: not checked offline
                count += 1
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                    if file_part else path
                where = "%s:%d %s" % (rel(path), i, target)
                if not dest.startswith(ROOT + os.sep) or not os.path.exists(dest):
                    bad.append(where + " (no such file)")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    bad.append(where + " (no such heading)")
    check(not bad and count > 0, "%d relative links of README.md and docs/ resolve" % count,
          "; ".join(bad))


def check_config_keys():
    with open(os.path.join(ROOT, "engine", "base", "config.c"), encoding="utf-8") as f:
        source = f.read()
    try:
        keys = engine_keys(source)
    except Unplaced as e:
        check(False, "the engine's config key lists are placed", str(e))
        return
    doc = read(os.path.join(DOCS, "configuration.md"))
    missing = [k for k in keys if "`%s`" % k not in doc]
    check(len(keys) > 100 and not missing,
          "docs/configuration.md names every key engine/base/config.c accepts (%d)" % len(keys),
          "missing " + ", ".join(missing))

    with open(os.path.join(ROOT, "charts", "gpuledger", "values.schema.json")) as f:
        schema = json.load(f)
    chart = []

    def walk(node, path):
        if node.get("type") == "array" and isinstance(node.get("items"), dict):
            walk(node["items"], path + "[]")
        for name, sub in (node.get("properties") or {}).items():
            p = path + "." + name if path else name
            chart.append(p)
            walk(sub, p)

    walk(schema["properties"]["config"], "")
    unknown = [p for p in chart if p not in keys]
    check(len(chart) > 10 and not unknown,
          "every config key of the chart's values.schema.json is an engine key (%d)" % len(chart),
          "not accepted by the engine: " + ", ".join(unknown))


def check_commands(binary):
    out = subprocess.run([binary, "--help"], stdout=subprocess.PIPE, check=True).stdout.decode()
    block = out.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    commands = [l.split()[0] for l in block.split("\n") if l.strip()]
    readme = read(README)
    m = re.search(r"## Commands at a glance\n\n```\n(.*?)```", readme, re.S)
    glance = m.group(1) if m else ""
    missing = [c for c in commands if not re.search(r"^  %s " % re.escape(c), glance, re.M)]
    check(len(commands) >= 12 and not missing,
          "README.md's command block lists every command (%s)" % " ".join(commands),
          "missing " + " ".join(missing) if m else "no '## Commands at a glance' block")
    options = sorted(set(re.findall(r"\[(--[a-z-]+)", " ".join(
        subprocess.run([binary, c, "--help"], stdout=subprocess.PIPE).stdout.decode()
        for c in commands))))
    missing = [o for o in options if o not in glance]
    check(len(options) > 10 and not missing,
          "README.md's command block shows every optional option (%d)" % len(options),
          "missing " + " ".join(missing))
    man = os.path.join(DOCS, "gpuledger.1")
    page = read(man)
    # roff writes a command's hyphen as "\-" (unit-cost)
    missing = [c for c in commands if ".B %s\n" % c.replace("-", "\\-") not in page]
    check(not missing, "docs/gpuledger.1 describes every command", "missing " + " ".join(missing))
    r = subprocess.run([sys.executable, os.path.join(DOCS, "gen-man.py"), binary, "--check", man],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    check(r.returncode == 0, "docs/gpuledger.1 is what docs/gen-man.py writes from the binary",
          r.stdout.decode().strip())


def check_citations():
    hits = []
    for base, _, files in os.walk(DOCS):
        for name in sorted(files):
            if name.endswith((".md", ".1", ".py")):
                hits += cited(os.path.join(base, name))
    hits += cited(README)
    check(not hits, "README.md and docs/ cite no specification section, issue or session number",
          ", ".join(hits[:10]))


def cited(path):
    with open(path, encoding="utf-8") as f:
        return ["%s:%d" % (rel(path), i) for i, line in enumerate(f, 1) if CITATION.search(line)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "gpuledger"))
    args = ap.parse_args()
    check_readme()
    check_links()
    check_config_keys()
    check_commands(os.path.abspath(args.bin))
    check_citations()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
