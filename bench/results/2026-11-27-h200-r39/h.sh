# r39 call h (07e48b15): every GPU test after the last review's fixes (the parallel trim
# forgets the booted segments; a releasable heap's destroy reports errors; reads need
# AnyBits), and the collections example.
set -u
R=/tmp/r39-h; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz 2>/dev/null
chmod +x .devbin/collections-example
B=.devbin/veballoc-bench
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 &
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > /dev/null 2>&1 &
wait; echo "jit done $(date +%T)"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
T=.devbin/tests
timeout 250 $T/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$?"
for t in gpu_correctness gpu_host; do timeout 150 $T/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 $T/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
timeout 120 .devbin/collections-example > $R/collections.txt 2>&1; echo "collections rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -14
tar czf $OUT/r39-h.tgz -C /tmp r39-h
