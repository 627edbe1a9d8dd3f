#!/usr/bin/env bash
# On the GPU machine: every GPU test binary (.devbin/tests/gpu*) on the PTX with safety
# checks, compute-sanitizer memcheck (scaled-down GPU tests) and racecheck (the thread-block
# collective, the one user of shared memory), and the cost of the checks on the single-size
# benchmark. GPU tests are #[ignore]d where there is no GPU: they run here with --ignored.
# Usage: scripts/device-safety.sh OUT [iters]
# Exits non-zero when a GPU test binary failed under the checks (after running everything).
set -uo pipefail
out=${1:?output folder}; iters=${2:-5}
mkdir -p "$out"
timeout_s=${GPU_TEST_TIMEOUT:-300} # per test binary
failed=0
checks=.devbin/veballoc-checks.ptx
export VEBALLOC_CHECKS_PTX_FILE=$PWD/$checks
ls .devbin/tests/gpu* >/dev/null || { echo "no GPU test binaries in .devbin/tests: run scripts/device-bundle.sh"; failed=1; }
for t in .devbin/tests/gpu*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  echo "== GPU tests, PTX with checks: $name"
  VEBALLOC_PTX_FILE=$checks timeout "$timeout_s" "$t" --ignored --test-threads=1 --nocapture 2>&1 \
    | tee "$out/tests-$name-checks.txt"
  rc=${PIPESTATUS[0]}
  echo "$name (checks) exit: $rc" | tee -a "$out/tests-$name-checks.txt"
  [ "$rc" = 0 ] || failed=1
done
# Sanitizer runs: the big allocation tests of tests/gpu.rs, by name.
main=.devbin/tests/gpu
echo "== compute-sanitizer memcheck (VEBALLOC_TEST_SCALE=64)"
VEBALLOC_TEST_SCALE=64 VEBALLOC_PTX_FILE=$checks timeout 240 compute-sanitizer --tool memcheck --leak-check no \
  "$main" --ignored --test-threads=1 --nocapture gpu_every_size gpu_packed gpu_collective gpu_double gpu_calloc 2>&1 \
  | tee "$out/memcheck.txt" | tail -5
echo "memcheck exit: ${PIPESTATUS[0]}" | tee -a "$out/memcheck.txt"
echo "== compute-sanitizer racecheck (thread-block collective)"
VEBALLOC_TEST_SCALE=64 timeout 120 compute-sanitizer --tool racecheck \
  "$main" --ignored --test-threads=1 --nocapture gpu_collective 2>&1 | tee "$out/racecheck.txt" | tail -5
echo "racecheck exit: ${PIPESTATUS[0]}" | tee -a "$out/racecheck.txt"
echo "== cost of the checks: single-size benchmark without and with them"
timeout 150 .devbin/veballoc-bench single --allocators veballoc --iters "$iters" --out "$out/single-plain" 2>&1 | tee "$out/single-plain.txt"
VEBALLOC_PTX_FILE=$checks timeout 150 .devbin/veballoc-bench single --allocators veballoc --iters "$iters" --out "$out/single-checks" 2>&1 | tee "$out/single-checks.txt"
echo "== GPU test results (checks)"
grep -h "^test result:" "$out"/tests-*-checks.txt 2>/dev/null
exit "$failed"
