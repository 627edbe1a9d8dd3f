#!/usr/bin/env bash
# On the GPU machine: the GPU tests on the PTX with safety checks, compute-sanitizer
# memcheck (scaled-down GPU tests) and racecheck (the thread-block collective, the one user
# of shared memory), and the cost of the checks on the single-size benchmark.
# Usage: scripts/device-safety.sh OUT [iters]
set -uo pipefail
out=${1:?output folder}; iters=${2:-5}
mkdir -p "$out"
checks=.devbin/veballoc-checks.ptx
echo "== GPU tests, PTX with checks"
VEBALLOC_PTX_FILE=$checks timeout 300 .devbin/gpu-tests --test-threads=1 --nocapture 2>&1 | tee "$out/gpu-tests-checks.txt"
echo "gpu-tests (checks) exit: ${PIPESTATUS[0]}" | tee -a "$out/gpu-tests-checks.txt"
echo "== compute-sanitizer memcheck (VEBALLOC_TEST_SCALE=64)"
VEBALLOC_TEST_SCALE=64 VEBALLOC_PTX_FILE=$checks timeout 240 compute-sanitizer --tool memcheck --leak-check no \
  .devbin/gpu-tests --test-threads=1 --nocapture gpu_every_size gpu_packed gpu_collective gpu_double gpu_calloc 2>&1 \
  | tee "$out/memcheck.txt" | tail -5
echo "memcheck exit: ${PIPESTATUS[0]}" | tee -a "$out/memcheck.txt"
echo "== compute-sanitizer racecheck (thread-block collective)"
VEBALLOC_TEST_SCALE=64 timeout 120 compute-sanitizer --tool racecheck \
  .devbin/gpu-tests --test-threads=1 --nocapture gpu_collective 2>&1 | tee "$out/racecheck.txt" | tail -5
echo "racecheck exit: ${PIPESTATUS[0]}" | tee -a "$out/racecheck.txt"
echo "== cost of the checks: single-size benchmark without and with them"
timeout 150 .devbin/veballoc-bench single --allocators veballoc --iters "$iters" --out "$out/single-plain" 2>&1 | tee "$out/single-plain.txt"
VEBALLOC_PTX_FILE=$checks timeout 150 .devbin/veballoc-bench single --allocators veballoc --iters "$iters" --out "$out/single-checks" 2>&1 | tee "$out/single-checks.txt"
