#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One go on a GPU machine: builds (release, build-device/), runs the GPU tests against the
# CPU library, compute-sanitizer memcheck, and the benchmarks with their PyTorch peers, and
# prints a short summary last. At most 8 files go to $OUT (the device tool's limit):
#   gpu.txt        the GPU, driver, clocks (before and after), nvcc; ptxas resource report
#   build.log      setup + build
#   tests.log      test_gpu (full) and meson test (every suite, the GPU ones included)
#   memcheck.log   compute-sanitizer memcheck of test_gpu --quick
#   bench.log      gpu_bench: one 4 GiB table (f32, bf16, f16; SGD, row-wise Adagrad, Adam)
#                  and the 26-table Criteo ensemble (f32, bf16; batch 2048 and 16384)
#   torch.log      torch's embedding_bag on the same shapes and ids (perf/gpu_peer_torch.py)
#   summary.txt    the table printed last
# Usage: gpu/run_on_device.sh [all|tests|bench]   (about 4 + 5 minutes; split the stages over
# two calls when one call's 10 minutes are tight: the build directory stays on a warm machine)
# EMB_DRY=1 gpu/run_on_device.sh bench: a rehearsal without a GPU, on build/'s emulated
# gpu_bench_emu with tiny sizes (checks the script and its summary, not the device).
set -u
cd "$(dirname "$0")/.."
STAGE=${1:-all}
OUT=${OUT:-/tmp/emb_out}
mkdir -p "$OUT"
B=build-device
PY=${PYTHON:-python3}
TMP=${TMPDIR:-/tmp}/emb_device.$$
mkdir -p "$TMP"
[ -x /usr/local/cuda/bin/nvcc ] && PATH=$PATH:/usr/local/cuda/bin && export PATH
SMI="nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv"

{ echo "== before"; $SMI; nvcc --version | tail -2; } >> "$OUT/gpu.txt" 2>&1
start=$(date +%s)
S=1 # size divisor (the rehearsal)
[ -n "${EMB_DRY:-}" ] && B=build S=2048
if [ -n "${EMB_DRY:-}" ]; then :
elif ! { [ -d $B ] || meson setup $B -Dbuildtype=release -Dcuda=enabled; } > "$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log"; echo "SETUP FAILED"; exit 1
fi
if [ -z "${EMB_DRY:-}" ] && ! ninja -C $B >> "$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
# registers, spills and stack of every kernel (ptxas), for the notes
[ -z "${EMB_DRY:-}" ] && for f in gpu_lookup gpu_backward; do
    nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -Iinclude -Igpu -I$B \
        -Xptxas -v -c gpu/$f.cu -o "$TMP/$f.o" 2>&1 | grep -E "Compiling|registers|spill" \
        >> "$OUT/gpu.txt"
done
echo "build: $(( $(date +%s) - start ))s" > "$OUT/summary.txt"

test_rc=- meson_rc=- memcheck="not run"
if [ "$STAGE" != bench ]; then
    start=$(date +%s)
    timeout 240 $B/tests/test_gpu > "$OUT/tests.log" 2>&1
    test_rc=$?
    timeout 240 meson test -C $B --print-errorlogs >> "$OUT/tests.log" 2>&1
    meson_rc=$?
    if command -v compute-sanitizer >/dev/null 2>&1; then
        timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/test_gpu --quick \
            > "$OUT/memcheck.log" 2>&1
        case $? in 0) memcheck="clean" ;; 9) memcheck="ERRORS (memcheck.log)" ;;
            124) memcheck="timed out" ;; *) memcheck="failed (memcheck.log)" ;; esac
    fi
    {
        echo "test_gpu rc=$test_rc ($(grep -h 'gpu checks' "$OUT/tests.log" | tail -1)); meson test rc=$meson_rc; $(( $(date +%s) - start ))s"
        grep -h "FAIL" "$OUT/tests.log" | head -20
        echo "compute-sanitizer memcheck of test_gpu --quick: $memcheck"
    } >> "$OUT/summary.txt"
fi

if [ "$STAGE" != tests ]; then
    G=$B/perf/gpu_bench
    [ -n "${EMB_DRY:-}" ] && G=$B/perf/gpu_bench_emu
    # one table of 4 GiB, 16384 bags x 64 ids, D = 128: name rows dtype
    for c in f32:8388608 bf16:16777216 f16:16777216; do
        dt=${c%%:*} rows=${c#*:}
        echo "=== single $dt" >> "$OUT/bench.log"
        timeout 150 $G --rows $((rows / S)) --dim 128 --dtype "$dt" --nbags $((16384 / S)) --bag 64 \
            --export "$TMP/$dt" >> "$OUT/bench.log" 2>&1
        echo "=== single $dt" >> "$OUT/torch.log"
        timeout 120 $PY perf/gpu_peer_torch.py --rows $((rows / S)) --dim 128 --dtype "$dt" \
            --nbags $((16384 / S)) --bag 64 --ids "$TMP/$dt/ids.bin" >> "$OUT/torch.log" 2>&1
    done
    # the Criteo ensemble (emb-bench's: 4 GiB of f32, D = 64, Zipf 1.05, bags of 1 and 20)
    for c in f32:2048 bf16:2048 f32:16384 bf16:16384; do
        dt=${c%%:*} batch=${c#*:} mib=4096
        [ "$dt" = bf16 ] && mib=2048 # the same rows, half the bytes
        echo "=== criteo $dt $batch" >> "$OUT/bench.log"
        timeout 150 $G --tables "criteo:$((mib / S + 1)):64:$dt" --batch $((batch / S + 1)) \
            --export "$TMP/c$dt$batch" >> "$OUT/bench.log" 2>&1
        echo "=== criteo $dt $batch" >> "$OUT/torch.log"
        timeout 150 $PY perf/gpu_peer_torch.py --manifest "$TMP/c$dt$batch/manifest.json" \
            >> "$OUT/torch.log" 2>&1
        rm -rf "$TMP/c$dt$batch"
    done
    { echo "== after"; $SMI; } >> "$OUT/gpu.txt" 2>&1
    # summary: ours vs torch, per block of the two logs
    awk -v out="$OUT/summary.txt" '
        FNR == 1 { file++ }
        /^=== / { key = $0; if (file == 1 && key ~ /single/) sk[++ns] = key; next }
        file == 1 && /^COPY/ { split($2, kv, "="); copy[key] = kv[2] }
        file == 1 && /^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); r[key, kv[1]] = kv[2] } }
        file == 1 && /^BWD/ { split($2, o, "="); split($3, m, "="); split($4, g, "=");
                              bwd[key, o[2]] = m[2]; bgb[key, o[2]] = g[2] }
        file == 1 && /^ENSEMBLE/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); e[kv[1]] = kv[2] }
                                   v = e["variant"]; ek[++ne] = key SUBSEP v;
                                   ef[key, v] = e["fwd_ms"]; eb[key, v] = e["bwd_ms"];
                                   efg[key, v] = e["fwd_gbs"]; ebg[key, v] = e["bwd_gbs"] }
        file == 2 && /^TORCH / { for (i = 2; i <= NF; i++) { split($i, kv, "="); t[key, kv[1]] = kv[2] } }
        file == 2 && /^TORCH_ENSEMBLE/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); q[kv[1]] = kv[2] }
                                         tf[key, q["variant"]] = q["fwd_ms"]; tb[key, q["variant"]] = q["bwd_ms"] }
        function x(a, b) { return (a > 0 && b > 0) ? sprintf("%.2fx", a / b) : "-" }
        function pct(a, b) { return b > 0 ? sprintf("%.0f%%", 100 * a / b) : "-" }
        END {
            printf "%-29s %8s %8s %5s %8s %8s %5s %9s %9s %6s %6s\n", "run", "copyGB/s", "fwdGB/s",
                "fwd%", "bwdGB/s", "bwd_ms", "bwd%", "fwd_ms", "torch_fwd", "x_fwd", "x_bwd" >> out
            for (i = 1; i <= ns; i++) { k = sk[i];
                printf "%-29s %8.0f %8.0f %5s %8.0f %8.4f %5s %9.4f %9s %6s %6s\n", substr(k, 5), copy[k],
                    r[k, "fwd_gbs"], pct(r[k, "fwd_gbs"], copy[k]), r[k, "bwd_gbs"], r[k, "bwd_ms"],
                    pct(r[k, "bwd_gbs"], copy[k]), r[k, "fwd_ms"], t[k, "fwd_ms"],
                    x(t[k, "fwd_ms"], r[k, "fwd_ms"]), x(t[k, "bwd_ms"], r[k, "bwd_ms"]) >> out
                printf "%-29s rowwise %.4f ms %.0f GB/s (%s); adam %.4f ms %.0f GB/s (%s)\n", "",
                    bwd[k, "rowwise"], bgb[k, "rowwise"], pct(bgb[k, "rowwise"], copy[k]),
                    bwd[k, "adam"], bgb[k, "adam"], pct(bgb[k, "adam"], copy[k]) >> out
            }
            for (i = 1; i <= ne; i++) { split(ek[i], kv, SUBSEP); k = kv[1]; v = kv[2];
                printf "%-29s %8.0f %8.0f %5s %8.0f %8.4f %5s %9.4f %9s %6s %6s\n",
                    substr(k, 5) " " v, copy[k], efg[k, v], pct(efg[k, v], copy[k]), ebg[k, v],
                    eb[k, v], pct(ebg[k, v], copy[k]), ef[k, v], tf[k, v], x(tf[k, v], ef[k, v]),
                    x(tb[k, v], eb[k, v]) >> out }
        }' "$OUT/bench.log" "$OUT/torch.log"
    echo "goals: fwd >= 80% and bwd+SGD >= 40% (f32 50%) of copy; x (torch ms / ours) >= 2" \
        >> "$OUT/summary.txt"
fi
rm -rf "$TMP"
echo "---- logs in $OUT"
head -3 "$OUT/gpu.txt"
cat "$OUT/summary.txt"
