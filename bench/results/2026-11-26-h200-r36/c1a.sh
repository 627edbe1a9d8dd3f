# r36 call 1a: every GPU test at 2b11cfe (0b8f48c's host change: one kernel lookup per launch);
# the JITs of every PTX of this call and the next side by side first.
set -u
R=/tmp/r36-c1a; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w0 > /dev/null 2>&1 &
for v in g24 trace; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-c > /dev/null 2>&1 &
wait; echo "jit done $(date +%T)"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 330 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 100 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -14
tar czf $OUT/r36-c1a.tgz -C $R .
