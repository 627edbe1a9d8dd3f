set -uo pipefail
# r31 call I (2e572a9 + the diagnostic test): where the range of a 2^20-thread burst of
# 16..64 B beyond the live bytes comes from (gpu_small_size_burst_spread).
R=/tmp/r31-spread; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 .devbin/tests/gpu --ignored --test-threads=1 --nocapture gpu_small_size_burst_spread > $R/spread.txt 2>&1; echo "rc=$?"
grep -a "spread\|test result\|panicked" $R/spread.txt
tar czf $OUT/r31-spread.tgz -C $R .
