set -uo pipefail
# r32 call Q (7f64a27, the tidy: trim forgets the booted bits after its loop): every GPU test.
R=/tmp/r32-tidy; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 220 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -8
tar czf $OUT/r32-tidy.tgz -C $R .
