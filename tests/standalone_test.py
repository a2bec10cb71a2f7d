#!/usr/bin/env python3
"""The repository stands alone: no tracked file reads a path outside it.

Every file git tracks (the vendored FOCUS rule data aside, whose README
names its upstream repositories) is searched for absolute paths of the
machines this project was developed on and for relative paths that climb
out of the checkout. TAP: one check per pattern, the offending file:line
named on failure.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# what a file must not name: the developers' workspace, a sibling of the
# checkout, or a climb above it from the repository's top-level folders.
# The words are assembled here so that this file does not name them itself.
UP = re.escape("..") + "/"
WORKSPACE = "/" + "work" + "/"
PATTERNS = [
    ("an absolute path of the development machines' workspace", re.compile(WORKSPACE)),
    ("the shared folder beside the checkout", re.compile(UP + "shared" + r"\b")),
    ("a relative path climbing out of the repository (three levels or more)",
     re.compile("(%s){3,}" % UP)),
]
EXEMPT = ("tests/fixtures/focus/",)


def tracked():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], stdout=subprocess.PIPE,
                         check=True).stdout.decode("utf-8", "replace")
    return [p for p in out.split("\0") if p and not p.startswith(EXEMPT)]


def main():
    files = tracked()
    failed = 0
    if len(files) < 50:
        print("not ok - git ls-files lists the repository: only %d files" % len(files))
        return 1
    for name, rx in PATTERNS:
        hits = []
        for p in files:
            try:
                with open(os.path.join(ROOT, p), encoding="utf-8", errors="replace") as f:
                    for i, line in enumerate(f, 1):
                        if rx.search(line):
                            hits.append("%s:%d" % (p, i))
            except (IsADirectoryError, FileNotFoundError):
                continue
        if hits:
            failed += 1
            print("not ok - no tracked file names %s: %s%s" % (
                name, ", ".join(hits[:8]), " (+%d more)" % (len(hits) - 8) if len(hits) > 8 else ""))
        else:
            print("ok - no tracked file names %s (%d files)" % (name, len(files)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
