#!/usr/bin/env python3
"""busy-bound: after the generator, samples the parse skips on hosts whose
hours the hourly sums would otherwise take whole:

  * the idle GPU of node b2: DCGM_FI_PROF_GR_ENGINE_ACTIVE 1.0000001 (above
    the busy ratio's bound 1) at every step of 01:00-02:00, and -0.25 at
    02:30 (NaN would do for Prometheus, but VictoriaMetrics drops NaN
    samples on import); it is the device's only compute aggregate with a valid
    preference, and no pod has memory on it, so the figures alone never
    look at its busy ratio;
  * the busy GPU of node b1: DCGM_FI_DEV_GPU_UTIL 150 (above 100 %) at every
    step of 00:00-01:00, a lower-preference compute query (b1's pod is
    billed from GR_ENGINE_ACTIVE).

Raw mode skips them (out_of_bounds 60 + 60, negative 1) and logs them by
query, chunk and reason; server mode must report the same.
Usage: busy-bound.post.py GEN_DIR (rewrites GEN_DIR/data.om in place)."""
import calendar
import os
import sys
import time

START = calendar.timegm(time.strptime("2026-11-05T00:00:00Z", "%Y-%m-%dT%H:%M:%SZ"))
B1 = 'UUID="GPU-b1000000-0000-4000-8000-000000000001"'
B2 = 'UUID="GPU-b2000000-0000-4000-8000-000000000002"'

path = os.path.join(sys.argv[1], "data.om")
lines = open(path).read().split("\n")
changed = {"gr": 0, "negative": 0, "util": 0}
for i, ln in enumerate(lines):
    if ln.startswith("#") or not ln:
        continue
    head, value, ts = ln.rsplit(" ", 2)
    t = int(ts)
    if ln.startswith("DCGM_FI_PROF_GR_ENGINE_ACTIVE{") and B2 in head:
        if START + 3600 <= t < START + 7200:
            lines[i] = "%s 1.0000001 %s" % (head, ts)
            changed["gr"] += 1
        elif t == START + 9000:
            lines[i] = "%s -0.25 %s" % (head, ts)
            changed["negative"] += 1
    elif ln.startswith("DCGM_FI_DEV_GPU_UTIL{") and B1 in head and START <= t < START + 3600:
        lines[i] = "%s 150 %s" % (head, ts)
        changed["util"] += 1
if changed != {"gr": 60, "negative": 1, "util": 60}:
    sys.exit("busy-bound.post.py: rewrote %s samples in %s, expected 60, 1 and 60"
             % (changed, path))
with open(path, "w") as f:
    f.write("\n".join(lines))
