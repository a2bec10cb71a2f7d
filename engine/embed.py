#!/usr/bin/env python3
"""Turn a text file into a C header holding it as one string constant."""
import sys

src, out, name = sys.argv[1:4]
with open(src, encoding="utf-8") as f:
    text = f.read()
lines = [f"static const char {name}[] ="]
for line in text.splitlines(keepends=True):
    esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    lines.append(f'    "{esc}"')
lines.append("    ;")
with open(out, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
