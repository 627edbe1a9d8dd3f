# Sourced at the top of a device-call script (bench/results/*/X.sh) on the GPU machine:
#   R=/tmp/NAME; source scripts/device-prelude.sh
# Unpacks the carried .devbin (scripts/device-bundle.sh's output, gzipped to travel), records
# the device, the date and the PTX files' md5 sums in $R, and defines
#   B            the harness binary;
#   pack         packs $R into $OUT/NAME.tgz (plots and JSON dropped: the tool brings back
#                at most 8 files), to call after each step so that a timeout keeps the rest;
#   warm V...    JIT-compiles each variant .devbin/var/V.ptx (and the bundle's own module and
#                its checks module) in parallel, once, so that timed runs find the JIT cache.
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
