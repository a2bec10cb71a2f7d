#!/usr/bin/env python3
"""The repository stands alone: no tracked file reads a path outside it,
and no tracked text cites the project's internal tracker or history.

Every file git tracks (the vendored FOCUS rule data aside, whose README
names its upstream repositories) is searched for absolute paths of the
machines this project was developed on and for relative paths that climb
out of the checkout. Every tracked text file is searched for references a
reader of the repository cannot follow: numbered issues, findings or stops
of the internal tracker, numbered work sessions, and sections of the
internal specification (docs/specification.md is the reader's copy; name
the rule instead). A third-party citation, such as a section of an RFC, is
allowed by an explicit list. TAP: one check per pattern, the offending
file:line named on failure.
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

# references to the internal tracker, work sessions and specification
# sections; the specification's short name and the section sign are
# assembled so that this file does not match itself. Text files only: a
# PNG's bytes may spell anything.
SECTION = "\u00a7"
REFS = ("a reference to the internal tracker, a work session or a specification section",
        re.compile(r"\b[Ii]ssues? #?[0-9]+|\b[Ss]essions? [0-9]+|\b[Ff]indings? [0-9]+"
                   r"|\b[Ss]tops? [0-9]+\b|\b" + "S" + r"PEC\b|" + SECTION + r" ?[0-9]"))
# third-party citations that look like one: a section of an IETF RFC.
REFS_ALLOWED = (re.compile(r"\bRFC ?[0-9]+ " + SECTION + r" ?[0-9]"),)


def tracked():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], stdout=subprocess.PIPE,
                         check=True).stdout.decode("utf-8", "replace")
    return [p for p in out.split("\0") if p and not p.startswith(EXEMPT)]


def lines_of(path):
    """(text?, lines) of a tracked file; None when it is gone or a folder."""
    try:
        with open(os.path.join(ROOT, path), "rb") as f:
            data = f.read()
    except (IsADirectoryError, FileNotFoundError):
        return None
    return b"\0" not in data[:8192], data.decode("utf-8", "replace").split("\n")


def search(files, rx, text_only=False, allowed=()):
    """file:line of every line rx finds, lines an allowed pattern matches aside."""
    hits = []
    for p in files:
        got = lines_of(p)
        if got is None or (text_only and not got[0]):
            continue
        for i, line in enumerate(got[1], 1):
            if rx.search(line) and not any(a.search(line) for a in allowed):
                hits.append("%s:%d" % (p, i))
    return hits


def main():
    files = tracked()
    failed = 0
    if len(files) < 50:
        print("not ok - git ls-files lists the repository: only %d files" % len(files))
        return 1
    checks = [(name, rx, False, ()) for name, rx in PATTERNS]
    checks.append((REFS[0], REFS[1], True, REFS_ALLOWED))
    for name, rx, text_only, allowed in checks:
        hits = search(files, rx, text_only, allowed)
        if hits:
            failed += 1
            print("not ok - no tracked file names %s: %s%s" % (
                name, ", ".join(hits[:8]), " (+%d more)" % (len(hits) - 8) if len(hits) > 8 else ""))
        else:
            print("ok - no tracked file names %s (%d files)" % (name, len(files)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
