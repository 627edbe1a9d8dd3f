#!/usr/bin/env bash
# Runs on the GPU machine (no Rust there): GPU tests, PTX check, and the benchmark harness.
# Usage: scripts/device-run.sh OUTDIR [harness args...]
set -uo pipefail
out=${1:?output folder}; shift
mkdir -p "$out"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  date -u +%Y-%m-%dT%H:%M:%SZ
} | tee "$out/device.txt"
echo "== ptxas -arch=sm_90 on the PTX"
ptxas -arch=sm_90 -v .devbin/veballoc.ptx -o /tmp/vb.cubin 2>&1 | grep -E "error|Compiling entry|registers" | head -40 | tee "$out/ptxas.txt"
echo "== GPU tests"
timeout 400 .devbin/gpu-tests --test-threads=1 --nocapture 2>&1 | tee "$out/gpu-tests.txt"
echo "gpu-tests exit: ${PIPESTATUS[0]}" | tee -a "$out/gpu-tests.txt"
if [ $# -gt 0 ]; then
  echo "== harness: $*"
  timeout 500 .devbin/veballoc-bench "$@" --out "$out/bench" 2>&1 | tee "$out/bench.txt"
  echo "bench exit: ${PIPESTATUS[0]}" | tee -a "$out/bench.txt"
fi
