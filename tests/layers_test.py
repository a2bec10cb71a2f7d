#!/usr/bin/env python3
"""The engine's layers hold: every folder of engine/ includes only itself and
the folders below it (the table LAYERS, which engine/README.md explains), no
two files include each other in a loop, and SQLite is called only in the
ledger. The tests hold the same line: only tests/integration/ledger_db.py
(their one view of the schema) opens the database with Python's sqlite3
module or the sqlite3 command. Reads the sources as text; prints TAP.

    python3 tests/layers_test.py [--root DIR]
"""
import argparse
import os
import re
import sys

# folder -> the folders it may include besides itself, lowest first. The
# order of this table is the order of the floors (engine/README.md).
LAYERS = {
    "base": [],
    "source": ["base"],
    "ledger": ["base"],
    "attribute": ["base", "source"],
    "bill": ["base", "ledger"],
    "collect": ["base", "source", "attribute", "ledger"],
    "render": ["base", "ledger", "bill"],
    "run": ["base", "source", "attribute", "ledger", "bill", "collect", "render"],
    "cli": ["base", "source", "attribute", "ledger", "bill", "collect", "render", "run"],
}

# Headers the build generates (meson.build) and the folder that owns them.
GENERATED = {"gl_build.h": "base", "gl_vcs.h": "cli", "schema_sql.h": "ledger"}

# Only these folders may name SQLite (the ledger owns the database).
SQLITE_FOLDERS = {"ledger"}

# The one test file that opens the database itself (relative to the root).
TESTS_DB_MODULE = "tests/integration/ledger_db.py"
# Python opening SQLite: an import of the module (also inside a function or
# among other names), its import by name, or the sqlite3 command as an argv
SQLITE_IN_PYTHON = re.compile(r"^\s*(?:import\s+(?:[\w.]+\s*,\s*)*sqlite3\b|from\s+sqlite3\b)"
                              r"|\b(?:__import__|import_module)\(\s*[\"']sqlite3\b"
                              r"|[\[(,]\s*[\"']sqlite3[\"']\s*[,)\]]", re.M)

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXT = (".c", ".h", ".cpp")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = ap.parse_args()
    engine = os.path.join(os.path.abspath(args.root), "engine")

    files = {}  # relative path from engine/ -> text
    for dirpath, _, names in os.walk(engine):
        for n in names:
            if n.endswith(SOURCE_EXT):
                p = os.path.join(dirpath, n)
                with open(p, encoding="utf-8") as f:
                    files[os.path.relpath(p, engine)] = f.read()

    checks = []  # (ok, name, detail)

    def check(ok, name, detail=""):
        checks.append((bool(ok), name, detail))

    # every source file lives in a layer folder
    loose = sorted(p for p in files if os.path.dirname(p) not in LAYERS)
    check(not loose, "every engine source file is in a layer folder",
          "outside the layer folders: " + ", ".join(loose))

    by_name = {}
    for p in files:
        by_name.setdefault(os.path.basename(p), []).append(p)
    dup = sorted(n for n, ps in by_name.items() if len(ps) > 1 and n.endswith(".h"))
    check(not dup, "header names are unique across the layers",
          "twice: " + ", ".join(dup))

    def folder(p):
        return os.path.dirname(p)

    sources = {os.path.splitext(p)[0] for p in files if not p.endswith(".h")}

    def unit(p):
        """A .c (or .cpp) with its .h is one unit; a header with no source
        of its own (store_sql.h) belongs to the unit its name extends."""
        u = os.path.splitext(p)[0]
        if u in sources or not p.endswith(".h"):
            return u
        head = u
        while "_" in os.path.basename(head):
            head = head.rsplit("_", 1)[0]
            if head in sources:
                return head
        return u

    up, unknown = [], []
    edges = {}
    for p, text in sorted(files.items()):
        body = strip_comments(text)
        for m in INCLUDE.finditer(body):
            name = m.group(1)
            line = body.count("\n", 0, m.start()) + 1
            base = os.path.basename(name)
            if base in GENERATED or re.fullmatch(r"schema\w*_sql\.h", base):
                target_folder = GENERATED.get(base, "ledger")
                target = None
            elif base in by_name:
                target = by_name[base][0]
                target_folder = folder(target)
            else:
                unknown.append(f"{p}:{line}: {name}")
                continue
            here = folder(p)
            if here in LAYERS and target_folder != here and target_folder not in LAYERS[here]:
                up.append(f"engine/{p}:{line} includes {name} ({here} -> {target_folder})")
            if target is not None and unit(target) != unit(p):
                edges.setdefault(unit(p), set()).add(unit(target))
    check(not unknown, "every quoted include names a header of the engine",
          "; ".join(unknown))
    check(not up, "no include runs up or sideways out of its layer", "; ".join(up))

    # cycles between units (a .c with its .h is one unit)
    cycles = []
    state = {}

    def visit(u, stack):
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                cycles.append(" -> ".join(stack[stack.index(v):] + [v]))
            elif v not in state:
                visit(v, stack)
        stack.pop()
        state[u] = 2

    for u in sorted(edges):
        if u not in state:
            visit(u, [])
    check(not cycles, "no two engine files include each other in a loop", "; ".join(cycles))

    sql = sorted(p for p, t in files.items()
                 if folder(p) not in SQLITE_FOLDERS and re.search(r"\bsqlite3_\w+|<sqlite3\.h>", strip_comments(t)))
    check(not sql, "only the ledger calls SQLite", "outside the ledger: " + ", ".join(sql))

    root = os.path.dirname(engine)
    opened = []
    for dirpath, _, names in os.walk(os.path.join(root, "tests")):
        for n in sorted(names):
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            if not n.endswith(".py") or rel == TESTS_DB_MODULE:
                continue
            with open(p, encoding="utf-8") as f:
                m = SQLITE_IN_PYTHON.search(f.read())
            if m:
                opened.append("%s: %s" % (rel, m.group(0).strip()))
    check(not opened, "only %s opens the database among the tests" % TESTS_DB_MODULE,
          "; ".join(sorted(opened)))

    print(f"1..{len(checks)}")
    failed = 0
    for i, (ok, name, detail) in enumerate(checks, 1):
        if ok:
            print(f"ok {i} - {name}")
        else:
            failed += 1
            print(f"not ok {i} - {name}: {detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
