#!/usr/bin/env bash
# Runs on the GPU machine (no Rust there): the PTX check, every GPU test binary that
# scripts/device-bundle.sh put in .devbin/tests/ (all their tests are #[ignore]d where there
# is no GPU: run with --ignored, one at a time), and the benchmark harness.
# Usage: scripts/device-run.sh OUTDIR [harness args...]
# Exits non-zero when a PTX check or a GPU test binary failed (after running everything).
set -uo pipefail
out=${1:?output folder}; shift
mkdir -p "$out"
timeout_s=${GPU_TEST_TIMEOUT:-400} # per test binary
failed=0
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  date -u +%Y-%m-%dT%H:%M:%SZ
} | tee "$out/device.txt"
: > "$out/ptxas.txt"
for ptx in .devbin/veballoc.ptx .devbin/veballoc-checks.ptx; do
  echo "== ptxas -arch=sm_90 on $ptx"
  ptxas -arch=sm_90 -v "$ptx" -o /tmp/vb.cubin > /tmp/vb-ptxas.txt 2>&1 || { echo "ptxas FAILED on $ptx"; failed=1; }
  grep -E "error|Compiling entry|registers" /tmp/vb-ptxas.txt | head -40 | tee -a "$out/ptxas.txt"
done
# The tests that need the safety checks load this PTX when the default one has none.
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
ls .devbin/tests/gpu* >/dev/null || { echo "no GPU test binaries in .devbin/tests: run scripts/device-bundle.sh"; failed=1; }
for t in .devbin/tests/gpu*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  echo "== GPU tests: $name"
  skip=()
  if [ "$name" = gpu_multi ] && [ "$(nvidia-smi -L | wc -l)" -lt 2 ]; then
    # The two-GPU tests fail on purpose with fewer GPUs; run them on a 2-GPU machine.
    echo "only one GPU here: skipping gpu_multi's two_gpus_* tests (run them on nvidia-h200-x2)" | tee "$out/tests-$name-skipped.txt"
    skip=(--skip two_gpus)
  fi
  timeout "$timeout_s" "$t" --ignored --test-threads=1 --nocapture "${skip[@]}" 2>&1 | tee "$out/tests-$name.txt"
  rc=${PIPESTATUS[0]}
  echo "$name exit: $rc" | tee -a "$out/tests-$name.txt"
  [ "$rc" = 0 ] || failed=1
done
if [ $# -gt 0 ]; then
  echo "== harness: $*"
  timeout 500 .devbin/veballoc-bench "$@" --out "$out/bench" 2>&1 | tee "$out/bench.txt"
  echo "bench exit: ${PIPESTATUS[0]}" | tee -a "$out/bench.txt"
fi
echo "== GPU test results"
grep -h "^test result:" "$out"/tests-*.txt 2>/dev/null
exit "$failed"
