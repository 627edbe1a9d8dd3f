# Sourced at the top of a device-call script (bench/results/*/X.sh) on the GPU machine:
#   R=/tmp/NAME; source scripts/device-prelude.sh
# Unpacks the carried .devbin (scripts/device-bundle.sh's output, gzipped to travel), records
# the device, the date and the PTX files' md5 sums in $R, and defines
#   B            the harness binary;
#   pack         packs $R into $OUT/NAME.tgz (plots and JSON dropped: the tool brings back
#                at most 8 files), to call after each step so that a timeout keeps the rest;
#   warm V...    JIT-compiles each variant .devbin/var/V.ptx (and the bundle's own module and
#                its checks module) in parallel, once, so that timed runs find the JIT cache;
#   suites       runs the bundle's GPU test suites (gpu with the checks PTX for its double-free
#                test, gpu_correctness, gpu_host, gpu_multi's one-GPU tests) into $R/tests;
#   churns       churn at 50% and 70% of the heap live, 20 rounds each, into $R/churn-*.
set -uo pipefail
: "${R:?set R=/tmp/NAME before sourcing}"
mkdir -p "$R/tests"
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/* 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$R/device.txt"
date -u +%FT%TZ | tee -a "$R/device.txt"
md5sum .devbin/var/*.ptx .devbin/*.ptx 2>/dev/null | tee "$R/ptx-md5.txt"
pack() { rm -rf "$R"/*/*.svg "$R"/*/*.json; tar czf "$OUT/$(basename "$R").tgz" -C "$(dirname "$R")" "$(basename "$R")"; }
warm() {
  local v
  for v in "$@"; do
    VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > "$R/jit-$v.txt" 2>&1 &
  done
  VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-checks > "$R/jit-checks.txt" 2>&1 &
  timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-bundle > "$R/jit-bundle.txt" 2>&1 &
  wait
  echo "jit done $(date +%T)"
}
suites() {
  export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
  timeout 200 .devbin/tests/gpu --ignored --test-threads=1 --nocapture > "$R/tests/gpu.txt" 2>&1; echo "gpu rc=$? $(date +%T)"
  local t
  for t in gpu_correctness gpu_host; do
    timeout 60 .devbin/tests/$t --ignored --test-threads=1 > "$R/tests/$t.txt" 2>&1; echo "$t rc=$? $(date +%T)"
  done
  timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 gpu_ > "$R/tests/gpu_multi.txt" 2>&1; echo "gpu_multi rc=$? $(date +%T)"
  grep -ah 'test result\|FAILED\|panicked' "$R"/tests/*.txt | tail -20
}
churns() {
  local live
  for live in 0.5 0.7; do
    timeout 60 $B churn --churn-rounds 20 --churn-live $live --out "$R/churn-$live" > "$R/churn-$live.txt" 2>&1; echo "churn $live rc=$?"
    grep -a "churn:" "$R/churn-$live.txt" | tail -1
  done
}
