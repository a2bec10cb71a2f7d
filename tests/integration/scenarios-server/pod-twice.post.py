#!/usr/bin/env python3
"""pod-twice: after the generator, a second FB_USED series of pod team-ml/a-0
on its device, as another scrape would relabel it (exported_namespace /
exported_pod, the exporter's own namespace and pod), at a constant 34000 MiB
beside the pod's own swinging series. Raw mode takes the pod's memory per
step as the max of the two; hourly sums of the two series cannot give that.
Usage: pod-twice.post.py GEN_DIR (rewrites GEN_DIR/data.om in place)."""
import os
import sys

path = os.path.join(sys.argv[1], "data.om")
lines = open(path).read().split("\n")
extra = []
for ln in lines:
    if ln.startswith("DCGM_FI_DEV_FB_USED{") and 'pod="a-0"' in ln:
        head, _, ts = ln.rsplit(" ", 2)
        copy = head.replace('namespace="team-ml",pod="a-0"',
                            'exported_namespace="team-ml",exported_pod="a-0",'
                            'namespace="gpu-operator",pod="dcgm-x"')
        extra.append("%s 34000 %s" % (copy.replace('container="c"', 'exported_container="c"'), ts))
if not extra:
    sys.exit("pod-twice.post.py: no FB_USED series of pod a-0 in %s" % path)
out, done = [], False
for i, ln in enumerate(lines):
    out.append(ln)
    last_of_family = ln.startswith("DCGM_FI_DEV_FB_USED{") and not (
        i + 1 < len(lines) and lines[i + 1].startswith("DCGM_FI_DEV_FB_USED{"))
    if last_of_family and not done:
        out.extend(extra)
        done = True
with open(path, "w") as f:
    f.write("\n".join(out))
