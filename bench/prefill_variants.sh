#!/usr/bin/env bash
# Prefill attention on the GPU machine, every kernel variant in one call: the attention parity
# tests (CUDA vs CPU reference) and the issue #10 perf shapes, per BRISK_PREFILL_KERNEL value
# (prefill_attention.h: hopper, hopper-overlap, hopper-serial, mma). Needs the bundle of
# `scripts/gpu-check --bundle` (BRISK_BUNDLE, default build/gpu); logs go to $OUT, a table to
# stdout.
#   run(command="BRISK_BUNDLE=build/gpu-x bench/prefill_variants.sh", carry=["build/gpu-x"])
set -u
cd "$(dirname "$0")/.."
BUNDLE=${BRISK_BUNDLE:-build/gpu}
OUT=${OUT:-build/prefill-variants-out}
KERNELS=${PREFILL_KERNELS:-hopper hopper-overlap hopper-serial mma}
mkdir -p "$OUT"
if [ -e "$BUNDLE/ops_parity.xz" ]; then
  xz -d -f "$BUNDLE/ops_parity.xz" 2>/dev/null ||
    python3 -c "import lzma, sys; open(sys.argv[1][:-3], 'wb').write(lzma.open(sys.argv[1]).read())" "$BUNDLE/ops_parity.xz"
fi
chmod +x "$BUNDLE/ops_parity"
export LD_LIBRARY_PATH=$PWD/$BUNDLE:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export BRISK_TEST_DATA_DIR=$PWD/tests/data
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
for kernel in $KERNELS; do
  BRISK_PREFILL_KERNEL=$kernel timeout "${PARITY_TIMEOUT:-150}" "$BUNDLE/ops_parity" \
    --gtest_filter='*Attention*:-*Perf*' > "$OUT/parity_$kernel.log" 2>&1
  rc=$?
  echo "parity [$kernel] rc=$rc: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/parity_$kernel.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure|error|mismatch' "$OUT/parity_$kernel.log" | head -8
  BRISK_PREFILL_KERNEL=$kernel BRISK_OPS_PERF=1 timeout "${PERF_TIMEOUT:-120}" "$BUNDLE/ops_parity" \
    --gtest_filter='PrefillAttentionPerf.*' > "$OUT/perf_$kernel.log" 2>&1
  echo "perf [$kernel] rc=$?"
  grep '^\[perf\]' "$OUT/perf_$kernel.log"
done
