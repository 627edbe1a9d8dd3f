set -uo pipefail
# r35 call 8: the split after its review (a runtime-only VEBALLOC_PTX_FILE refuses the bench
# kernels; one loader at a time): every GPU test, and the harness's single point.
R=/tmp/r35-split2; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in gpu_host gpu_correctness; do timeout 150 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
s=$(date +%s); timeout 300 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -12
tar czf $OUT/r35-split2.tgz -C $R .
