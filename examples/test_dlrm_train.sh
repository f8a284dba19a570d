#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# dlrm_train end to end on a small generated file: the test AUC must beat 0.5 clearly,
# 1 and 2 threads must give the same bits, and a run resumed from its epoch-1 checkpoint must end with the very same test AUC and
# log loss as an uninterrupted run, with SGD and with Adagrad (checkpoints hold every
# parameter and the tables' Adagrad accumulators).
# int8 tables (--emb-dtype int8) likewise. Tiered tables (--tier-dir, caches of 5 % of the
# rows), f32 and int8, resumed from a checkpoint too, with the next batch prefetched
# (the default) or not (--no-prefetch): the in-memory runs' bits. --export
# (int8): the served tables' AUC within 0.003 of the f32 tables'.
# Usage: test_dlrm_train.sh DLRM_TRAIN CRITEO_GEN_PY [PYTHON]
set -eu
train_bin=$1 gen=$2 py=${3:-python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_dlrm_train.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$py" "$gen" --rows 6000 --test-rows 3000 --max-card 300 "$tmp/train.tsv" "$tmp/test.tsv"
opts="--train $tmp/train.tsv --test $tmp/test.tsv --batch 64 --dim 8 --bot 32 --top 32
      --max-ind-range 2000 --lr 0.2 --threads 2"

last() { tail -n 1 "$1"; }
metric() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }

# shellcheck disable=SC2086
"$train_bin" $opts --optimizer sgd --epochs 2 --export "$tmp/serve.st" >"$tmp/full.out"
cat "$tmp/full.out"
auc=$(last "$tmp/full.out" | metric auc)
case $(last "$tmp/full.out") in
"test auc="*" logloss="*" samples_per_s="*) ;;
*) echo "FAIL: last line is not 'test auc=.. logloss=.. samples_per_s=..'"; exit 1 ;;
esac
awk -v a="$auc" 'BEGIN { exit !(a >= 0.6) }' || { echo "FAIL: test AUC $auc < 0.6"; exit 1; }
# --export (int8): rows of D + 8 bytes (D = 8: about half the f32 rows'), served within
# 0.003 AUC of the f32 tables
served=$(grep "^export: " "$tmp/full.out" | metric auc)
[ -s "$tmp/serve.st" ] && [ -n "$served" ] || { echo "FAIL: no export, or no export line"; exit 1; }
grep "^export: " "$tmp/full.out" | awk -v a="$auc" -v s="$served" '
    { pct = $0; sub(/.* bytes, /, "", pct); sub(/ %.*/, "", pct) }
    END { d = a - s; exit !(pct + 0 < 55 && d < 0.003 && d > -0.003) }' ||
    { echo "FAIL: export: served AUC $served against $auc, or the file too big"; exit 1; }
echo "ok: int8 export: served auc=$served (f32 tables: $auc)"

# the same bits on 1 and 2 threads, with a bottom MLP deep enough (4 layers) that the
# layers' gradient buffers are reused within a block
deep="--bot 32-32-32"
# shellcheck disable=SC2086
t1=$("$train_bin" $opts $deep --threads 1 | tail -n 1 | sed 's/ samples_per_s=.*//')
# shellcheck disable=SC2086
t2=$("$train_bin" $opts $deep --threads 2 | tail -n 1 | sed 's/ samples_per_s=.*//')
[ -n "$t1" ] && [ "$t1" = "$t2" ] || { echo "FAIL: 1 thread '$t1', 2 threads '$t2'"; exit 1; }
echo "ok: 1 and 2 threads: $t2"

for optimizer in sgd adagrad; do
    rm -rf "$tmp/ck"
    # shellcheck disable=SC2086
    [ $optimizer = sgd ] || "$train_bin" $opts --optimizer $optimizer --epochs 2 >"$tmp/full.out"
    # shellcheck disable=SC2086
    "$train_bin" $opts --optimizer $optimizer --epochs 1 --checkpoint-dir "$tmp/ck" >"$tmp/part1.out"
    ls "$tmp/ck" | grep -q . || { echo "FAIL: no checkpoint written"; exit 1; }
    # shellcheck disable=SC2086
    "$train_bin" $opts --optimizer $optimizer --epochs 2 --checkpoint-dir "$tmp/ck" --resume \
        >"$tmp/part2.out"
    cat "$tmp/part2.out"
    grep -q "^epoch 1:" "$tmp/part2.out" && { echo "FAIL: the resumed run trained epoch 1 again"; exit 1; }
    full=$(last "$tmp/full.out" | sed 's/ samples_per_s=.*//')
    resumed=$(last "$tmp/part2.out" | sed 's/ samples_per_s=.*//')
    [ "$full" = "$resumed" ] || { echo "FAIL: $optimizer: uninterrupted '$full', resumed '$resumed'"; exit 1; }
    echo "ok: $optimizer: $full (uninterrupted and resumed)"
done

# int8 tables (--emb-dtype): learns, the same bits on 1 and 2 threads (stochastic rounding
# keyed by table, row and step), and resumes from its checkpoint (U8 rows) to the same end
q="--emb-dtype int8 --optimizer adagrad"
# shellcheck disable=SC2086
q1=$("$train_bin" $opts $q --epochs 2 --threads 1 | tail -n 1 | sed 's/ samples_per_s=.*//')
# shellcheck disable=SC2086
q2=$("$train_bin" $opts $q --epochs 2 --threads 2 | tail -n 1 | sed 's/ samples_per_s=.*//')
[ -n "$q1" ] && [ "$q1" = "$q2" ] || { echo "FAIL: int8: 1 thread '$q1', 2 threads '$q2'"; exit 1; }
auc=$(echo "$q2" | metric auc)
awk -v a="$auc" 'BEGIN { exit !(a >= 0.6) }' || { echo "FAIL: int8: test AUC $auc < 0.6"; exit 1; }
rm -rf "$tmp/ck"
# shellcheck disable=SC2086
"$train_bin" $opts $q --epochs 1 --checkpoint-dir "$tmp/ck" >/dev/null
# shellcheck disable=SC2086
qr=$("$train_bin" $opts $q --epochs 2 --checkpoint-dir "$tmp/ck" --resume | tail -n 1 |
    sed 's/ samples_per_s=.*//')
[ "$q2" = "$qr" ] || { echo "FAIL: int8: uninterrupted '$q2', resumed '$qr'"; exit 1; }
echo "ok: int8 tables: $q2 (1 and 2 threads, resumed)"

# tiered tables: the tables of more than 100 rows on disk, caches of 5 % of their rows
tier="--tier-dir $tmp/tiers --tier-cache 0.05 --tier-min 100"
mkdir "$tmp/tiers"
# shellcheck disable=SC2086
tq=$("$train_bin" $opts $q $tier --epochs 2 | tail -n 1 | sed 's/ samples_per_s=.*//')
[ "$tq" = "$q2" ] || { echo "FAIL: tiered int8: '$tq', in memory '$q2'"; exit 1; }
# shellcheck disable=SC2086
tn=$("$train_bin" $opts $q $tier --epochs 2 --no-prefetch | tail -n 1 | sed 's/ samples_per_s=.*//')
[ "$tn" = "$q2" ] || { echo "FAIL: tiered int8 --no-prefetch: '$tn', in memory '$q2'"; exit 1; }
rm -rf "$tmp/ck"
# shellcheck disable=SC2086
"$train_bin" $opts --optimizer adagrad $tier --epochs 1 --checkpoint-dir "$tmp/ck" >/dev/null
# shellcheck disable=SC2086
tr=$("$train_bin" $opts --optimizer adagrad $tier --epochs 2 --checkpoint-dir "$tmp/ck" --resume |
    tail -n 1 | sed 's/ samples_per_s=.*//')
[ "$tr" = "$full" ] || { echo "FAIL: tiered f32 resumed '$tr', in memory '$full'"; exit 1; }
ls "$tmp/tiers" | grep -q '\.tier$' || { echo "FAIL: no tiered table's file"; exit 1; }
echo "ok: tiered tables: int8 $tq, f32 resumed $tr"
if "$train_bin" $opts $tier --tier-cache 2 >/dev/null 2>&1; then
    echo "FAIL: --tier-cache 2 accepted"; exit 1
fi
if "$train_bin" $opts --emb-dtype int3 >/dev/null 2>&1; then
    echo "FAIL: --emb-dtype int3 accepted"; exit 1
fi

# gzip-compressed input (where built with zlib): the plain file's bits; progress lines
# (samples, %, samples/s, ETA, loss) in a log file
gzip -c "$tmp/train.tsv" >"$tmp/train.tsv.gz"
gzip -c "$tmp/test.tsv" >"$tmp/test.tsv.gz"
gzopts=$(echo "$opts" | sed "s|$tmp/train.tsv|$tmp/train.tsv.gz|; s|$tmp/test.tsv|$tmp/test.tsv.gz|")
# shellcheck disable=SC2086
if "$train_bin" $gzopts --optimizer sgd --epochs 2 --progress-every 0.000001 \
    >"$tmp/gz.out" 2>"$tmp/gz.log"; then
    gz=$(last "$tmp/gz.out" | sed 's/ samples_per_s=.*//')
    plain=$("$train_bin" $opts --optimizer sgd --epochs 2 | tail -n 1 | sed 's/ samples_per_s=.*//')
    [ "$gz" = "$plain" ] || { echo "FAIL: .gz '$gz', plain '$plain'"; exit 1; }
    grep -Eq '^epoch 2: [0-9]+ samples \([0-9.]+ %, ETA [0-9]+m[0-9]+s\), [0-9]+ samples/s, loss [0-9.]+$' \
        "$tmp/gz.log" || { echo "FAIL: no progress line in the log:"; head "$tmp/gz.log"; exit 1; }
    echo "ok: .gz input: $gz, $(grep -c samples/s "$tmp/gz.log") progress lines"
else
    grep -q "without zlib" "$tmp/gz.log" || { echo "FAIL: .gz refused without a reason:"; cat "$tmp/gz.log"; exit 1; }
    echo "ok: .gz refused (built without zlib): $(cat "$tmp/gz.log")"
fi

# input that yields no sample: refused (exit 2) naming the file and the line
: >"$tmp/empty.tsv"
printf 'bad line\nanother\n' >"$tmp/bad.tsv"
for f in empty bad; do
    # shellcheck disable=SC2086
    if "$train_bin" $opts --train "$tmp/$f.tsv" >/dev/null 2>"$tmp/$f.err"; then
        echo "FAIL: $f input accepted"; exit 1
    fi
    want="$tmp/$f.tsv:1: no sample"
    grep -qF "$want" "$tmp/$f.err" || { echo "FAIL: $f: no '$want' in:"; cat "$tmp/$f.err"; exit 1; }
done
echo "ok: no-sample input refused: $(tail -n 1 "$tmp/bad.err")"

# --checkpoint-every: a run resumed from a checkpoint in the middle of an epoch ends with the
# uninterrupted run's bits; the checkpoint directory (two levels) is created by the saver
rm -rf "$tmp/ck"
# shellcheck disable=SC2086
"$train_bin" $opts --optimizer adagrad --epochs 1 --checkpoint-dir "$tmp/ck/mid" \
    --checkpoint-every 40 >/dev/null
[ -f "$tmp/ck/mid/dlrm-40.safetensors" ] || { echo "FAIL: no step-40 checkpoint"; ls "$tmp/ck/mid"; exit 1; }
sed -i 's/^latest .*/latest dlrm-80.safetensors/' "$tmp/ck/mid/checkpoint" # "killed" after step 80
# shellcheck disable=SC2086
mid=$("$train_bin" $opts --optimizer adagrad --epochs 2 --checkpoint-dir "$tmp/ck/mid" --resume \
    2>"$tmp/mid.err" | tail -n 1 | sed 's/ samples_per_s=.*//')
grep -q "step 80 done" "$tmp/mid.err" || { echo "FAIL: not resumed at step 80:"; cat "$tmp/mid.err"; exit 1; }
[ "$mid" = "$full" ] || { echo "FAIL: resumed mid-epoch '$mid', uninterrupted '$full'"; exit 1; }
echo "ok: resumed at step 80 of 94: $mid"

# --eval-every: held-out lines, the best model kept; --early-stop ends at the first fall
rm -rf "$tmp/ck"
# shellcheck disable=SC2086
"$train_bin" $opts --optimizer sgd --lr 2 --epochs 3 --checkpoint-dir "$tmp/ck" --eval-every 5 \
    --eval-samples 1000 --early-stop >"$tmp/eval.out" 2>"$tmp/eval.err"
grep -q '^step 5: held-out auc=' "$tmp/eval.out" || { echo "FAIL: no held-out line"; cat "$tmp/eval.out"; exit 1; }
grep -q 'held-out AUC fell' "$tmp/eval.err" || { echo "FAIL: no fall reported"; cat "$tmp/eval.err"; exit 1; }
grep -q 'stopping (--early-stop)' "$tmp/eval.err" || { echo "FAIL: no early stop"; exit 1; }
set -- "$tmp"/ck/best/dlrm-*.safetensors
[ -f "$1" ] || { echo "FAIL: no best checkpoint"; exit 1; }
last "$tmp/eval.out" | grep -q '^test auc=' || { echo "FAIL: no final line after the stop"; exit 1; }
echo "ok: --eval-every: $(grep -c held-out "$tmp/eval.out") evaluations, $(grep 'fell' "$tmp/eval.err" | head -n 1)"

# OpenBLAS choosing kernels older than the CPU's (OPENBLAS_CORETYPE unset): a warning
# naming OPENBLAS_CORETYPE exactly when the first line names pre-AVX-512 kernels on an
# AVX-512 CPU (OpenBLAS 0.3.21 takes Prescott's on CPUs it does not know)
# shellcheck disable=SC2086
env -u OPENBLAS_CORETYPE "$train_bin" $opts --epochs 0 >"$tmp/blas.out" 2>"$tmp/blas.err"
core=$(head -n 1 "$tmp/blas.out" | sed -n 's/.*BLAS: OpenBLAS [^ ]* \([A-Za-z0-9]*\) .*/\1/p')
avx512=1
for f in avx512f avx512bw avx512dq avx512vl; do grep -qw $f /proc/cpuinfo || avx512=0; done
case $core in
"" | SkylakeX | Cooperlake | SapphireRapids) want=0 ;;
*) want=$avx512 ;;
esac
got=0
grep -q 'OPENBLAS_CORETYPE=SkylakeX' "$tmp/blas.err" && got=1
[ "$got" = "$want" ] || { echo "FAIL: OpenBLAS '$core' on avx512=$avx512: warning $got:"; cat "$tmp/blas.err"; exit 1; }
echo "ok: OpenBLAS '$core' kernels (AVX-512 CPU: $avx512): $(cat "$tmp/blas.err")"
