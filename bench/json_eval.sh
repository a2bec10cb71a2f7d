#!/usr/bin/env bash
# JSON parsers for the matrix path: the engine's
# parser against yajl alone, Boost.JSON, simdjson, RapidJSON and cJSON, and zlib against
# libdeflate and ISA-L, on the engine's own query_range bodies of a 6 h
# collect of bench/scale.py's fleets (see bench/json_eval.cpp).
#   bench/json_eval.sh [--bodies DIR] [--sizes 64,1024,4096] [--reps N] [--no-callgrind]
# --bodies DIR: bodies captured before (DIR/<gpus>/, bench/json_capture.py);
# without it they are captured into a temporary directory (deleted after).
# Prints per fleet and parser: instructions (callgrind, only the parse; above
# 1,024 GPUs not for cjson, rapidjson-insitu, rapidjson-iter) and
# CPU (best of N, getrusage) per sample and per MB, and the peak RSS increase
# of parsing the largest body; exits non-zero when the parsers disagree.
# Needs the release build (meson setup build && ninja -C build).
set -eu
cd "$(dirname "$0")/.."
bodies="" sizes="64,1024,4096" reps=5 cg=1
while [ $# -gt 0 ]; do
  case "$1" in
    --bodies) bodies="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --no-callgrind) cg=0; shift ;;
    *) echo "usage: $0 [--bodies DIR] [--sizes LIST] [--reps N] [--no-callgrind]" >&2; exit 2 ;;
  esac
done
missing=""
for p in libsimdjson-dev rapidjson-dev libdeflate-dev libisal-dev valgrind; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "# installing$missing" >&2
  apt-get install -y $missing >/dev/null
fi
ninja -C build >/dev/null
libs="build/libgpuledger_engine.a $(pkg-config --libs simdjson RapidJSON yajl libcjson libpcre2-8 zlib libdeflate libisal) -lboost_json -lm"
cflags="-O2 -Ibench -Ibuild $(for d in engine/*/; do printf -- " -I%s" "$d"; done) $(pkg-config --cflags simdjson RapidJSON yajl libcjson)"
cc -O2 -std=c11 -D_DEFAULT_SOURCE -Ibench -Ibuild $(for d in engine/*/; do printf -- " -I%s" "$d"; done) -c bench/json_eval_engine.c \
  -o build/json_eval_engine.o
# the x86-64 baseline (what a distribution builds: simdjson picks its stage-1
# kernel at run time, On Demand's iteration is compiled for the baseline),
# and -march=haswell (the iteration compiled for AVX2: a control)
c++ -std=c++17 $cflags bench/json_eval.cpp build/json_eval_engine.o $libs -o build/json_eval
c++ -std=c++17 -march=haswell $cflags bench/json_eval.cpp build/json_eval_engine.o $libs \
  -o build/json_eval-haswell
tmp=""
if [ -z "$bodies" ]; then
  tmp=$(mktemp -d /tmp/gpuledger-jsoneval-XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  bodies="$tmp"
  python3 bench/json_capture.py --bin build/gpuledger --out "$bodies" --sizes "$sizes"
fi
parsers="engine yajl boostjson simdjson simdjson-dom rapidjson rapidjson-insitu rapidjson-chunked rapidjson-iter cjson"
inflaters="zlib libdeflate isal"
res=$(mktemp /tmp/gpuledger-jsoneval-res-XXXXXX)
for g in ${sizes//,/ }; do
  d="$bodies/$g"
  build/json_eval check "$d" | sed "s/^/# $g GPUs: /" >&2
  for w in $parsers simdjson-haswell $inflaters; do
    bin=build/json_eval what=$w
    [ "$w" = simdjson-haswell ] && bin=build/json_eval-haswell what=simdjson
    ir=""
    # callgrind is ~50x slow: above 1,024 GPUs, not for the reference rows
    big_skip=0
    case " cjson rapidjson-insitu rapidjson-iter " in *" $w "*) [ "$g" -gt 1024 ] && big_skip=1 ;; esac
    if [ "$cg" = 1 ] && [ "$big_skip" = 0 ]; then
      ir=$(valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file=/dev/null \
             "$bin" count "$what" "$d" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
    fi
    t=$("$bin" time "$what" "$d" "$reps")
    rss="-"
    case " $parsers " in *" $what "*) rss=$("$bin" rss "$what" "$d" | sed 's/.*increase_mib //') ;; esac
    echo "$g $w ${ir:--} $t rss $rss" >>"$res"
    echo "# $g $w ir ${ir:--} $t rss $rss" >&2
  done
done
python3 - "$bodies" "$res" <<'EOF'
import os, sys
bodies, res = sys.argv[1], sys.argv[2]
rows = [l.split() for l in open(res)]
meta = {}
for g in sorted({r[0] for r in rows}, key=int):
    m = [l.rstrip("\n").split("\t") for l in open(os.path.join(bodies, g, "manifest.tsv")) if l.strip()]
    meta[g] = (sum(int(x[5]) for x in m) / 1e6, sum(int(x[6]) for x in m) / 1e6,
               max(int(x[5]) for x in m) / 2**20)
base = {}
print("| GPUs | parser | instr / sample | instr / MB | CPU ns / sample | CPU ms / MB | "
      "peak RSS + MiB (largest body) | vs engine (instr) |")
print("|---:|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    g, w, ir = r[0], r[1], r[2]
    units, cpu = int(r[r.index("units") + 1]), float(r[r.index("cpu_s") + 1])
    rss = r[r.index("rss") + 1]
    mb, zmb, big = meta[g]
    inflate = w in ("zlib", "libdeflate", "isal")
    # inflaters: per sample of the fleet (the engine's count) and per MB of JSON out
    samples = base.get((g, "samples"), units)
    if w == "engine":
        base[(g, "samples")] = units
        base[(g, "ir")] = int(ir) if ir != "-" else None
    per_s = lambda x: x / samples
    irs = "%.0f" % per_s(int(ir)) if ir != "-" else "-"
    irm = "%.1f M" % (int(ir) / mb / 1e6) if ir != "-" else "-"
    rel = ("%.2f" % (int(ir) / base[(g, "ir")])) if ir != "-" and base.get((g, "ir")) else "-"
    print("| %s | %s | %s | %s | %.0f | %.2f | %s | %s |" % (
        g, w + (" (inflate)" if inflate else ""), irs, irm, per_s(cpu) * 1e9, cpu * 1e3 / mb,
        rss, rel))
print()
for g, (mb, zmb, big) in meta.items():
    print("%s GPUs: %.1f MB JSON (%.1f MB as sent, deflate), largest body %.1f MiB, %d samples"
          % (g, mb, zmb, big, base[(g, "samples")]))
EOF
rm -f "$res"
