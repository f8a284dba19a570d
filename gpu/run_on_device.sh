#!/bin/sh
# One go on a GPU machine (about 4-7 minutes): builds a release build, runs the GPU tests
# (test_gpu against the CPU library), the GPU bench and its PyTorch peer for two table
# configurations, then test_gpu --quick under compute-sanitizer memcheck (time permitting),
# and prints a short table last. Logs go to $OUT (or /tmp/emb_out).
#   gpu/run_on_device.sh            everything
#   QUICK=1 gpu/run_on_device.sh    tests only
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/emb_out}
mkdir -p "$OUT"
B=build-device
PY=${PYTHON:-python3}
[ -x /usr/local/cuda/bin/nvcc ] && PATH=$PATH:/usr/local/cuda/bin && export PATH

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem \
    --format=csv,noheader > "$OUT/gpu.txt" 2>&1
nvcc --version | tail -2 >> "$OUT/gpu.txt" 2>&1
if ! { [ -d $B ] || meson setup $B -Dbuildtype=release -Dcuda=enabled; } > "$OUT/setup.log" 2>&1; then
    tail -30 "$OUT/setup.log"; echo "SETUP FAILED"; exit 1
fi
if ! ninja -C $B > "$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
start=$(date +%s)
$B/gpu/test_gpu > "$OUT/test_gpu.log" 2>&1
test_rc=$?
meson test -C $B --print-errorlogs > "$OUT/meson_test.log" 2>&1
meson_rc=$?
test_s=$(( $(date +%s) - start ))

# name rows dim dtype: two tables of 4 GiB, batch 16384 bags x 64 ids
CONFIGS="f32-d128:8388608:128:f32 bf16-d128:16777216:128:bf16"
if [ -z "${QUICK:-}" ]; then
    for c in $CONFIGS; do
        IFS=: read name rows dim dt <<EOC
$c
EOC
        $B/gpu/gpu_bench --rows "$rows" --dim "$dim" --dtype "$dt" --bags 16384 --bag 64 \
            --ids "$OUT/ids_$name.bin" > "$OUT/bench_$name.log" 2>&1
        timeout 180 $PY perf/gpu_peer_torch.py --rows "$rows" --dim "$dim" --dtype "$dt" \
            --bags 16384 --bag 64 --ids "$OUT/ids_$name.bin" > "$OUT/torch_$name.log" 2>&1
        rm -f "$OUT/ids_$name.bin"
    done
fi

memcheck="not run"
if [ -z "${QUICK:-}" ] && command -v compute-sanitizer >/dev/null 2>&1; then
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/gpu/test_gpu --quick \
        > "$OUT/memcheck.log" 2>&1
    case $? in 0) memcheck="clean" ;; 9) memcheck="ERRORS (memcheck.log)" ;;
        124) memcheck="timed out" ;; *) memcheck="failed (memcheck.log)" ;; esac
fi

echo "---- logs in $OUT; failures:"
grep -h "FAIL" "$OUT/test_gpu.log" | head -20
grep -h -E "^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)" "$OUT/meson_test.log" | head
echo "---- summary"
cat "$OUT/gpu.txt"
echo "test_gpu rc=$test_rc ($(tail -1 "$OUT/test_gpu.log")); meson test rc=$meson_rc; ${test_s}s"
echo "compute-sanitizer memcheck of test_gpu --quick: $memcheck"
printf "%-10s %8s %9s %6s %9s %6s %9s %9s %6s %9s %9s %6s\n" config copyGB/s fwdGB/s fwd% \
    bwdGB/s bwd% fwd_ms torch_ms x bwd_ms torch_ms x
for c in $CONFIGS; do
    name=${c%%:*}
    r=$(grep -h '^RESULT' "$OUT/bench_$name.log" 2>/dev/null)
    t=$(grep -h '^TORCH' "$OUT/torch_$name.log" 2>/dev/null)
    [ -z "$r" ] && { echo "$name: bench failed: $(tail -2 "$OUT/bench_$name.log" 2>/dev/null)"; continue; }
    echo "$r $t" | awk -v n="$name" '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        tf = v["fwd_ms"] + 0; tb = v["bwd_ms"]; split($0, parts, "TORCH");
        pf = "-"; pb = "-"; xf = "-"; xb = "-";
        if (index($0, "TORCH")) {
            m = split(parts[2], q, " ");
            for (j = 1; j <= m; j++) { split(q[j], kv, "="); w[kv[1]] = kv[2] }
            pf = w["fwd_ms"]; pb = w["bwd_ms"];
        }
        ours_f = 0; ours_b = 0; m = split(parts[1], q, " ");
        for (j = 1; j <= m; j++) { split(q[j], kv, "="); u[kv[1]] = kv[2] }
        if (pf != "-") { xf = sprintf("%.2f", pf / u["fwd_ms"]); xb = sprintf("%.2f", pb / u["bwd_ms"]) }
        printf "%-10s %8.0f %9.0f %5.0f%% %9.0f %5.0f%% %9.4f %9s %6s %9.4f %9s %6s\n", n,
            u["copy_gbs"], u["fwd_gbs"], 100 * u["fwd_gbs"] / u["copy_gbs"], u["bwd_gbs"],
            100 * u["bwd_gbs"] / u["copy_gbs"], u["fwd_ms"], pf, xf, u["bwd_ms"], pb, xb }'
done
echo "goals: fwd >= 80% and bwd+SGD >= 40% of copy; x (torch ms / ours) >= 1.5"
