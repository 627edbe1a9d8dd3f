set -uo pipefail
# r32 call N (d020e6a, the code of 634f035: every new heap boots): compute-sanitizer memcheck on
# gpu_correctness and gpu_host (plain PTX; checks PTX for the tests that need it), and on the
# harness's single sizes (65536 threads, 16 B .. 4 KiB) and mixed (16..4096), one iteration.
R=/tmp/r32-san; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in gpu_correctness gpu_host; do
  timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 .devbin/tests/$t --ignored --test-threads=1 > $R/memcheck-$t.txt 2>&1; echo "memcheck $t rc=$?"
  grep -a "ERROR SUMMARY\|test result" $R/memcheck-$t.txt | tail -3
done
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 .devbin/veballoc-bench single --threads 65536 --sizes 16,128,4096 --iters 1 --allocators veballoc --out $R/single > $R/memcheck-single.txt 2>&1; echo "memcheck single rc=$?"
grep -a "ERROR SUMMARY" $R/memcheck-single.txt | tail -2
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 .devbin/veballoc-bench mixed --threads 65536 --sizes 4096 --iters 1 --allocators veballoc --out $R/mixed > $R/memcheck-mixed.txt 2>&1; echo "memcheck mixed rc=$?"
grep -a "ERROR SUMMARY" $R/memcheck-mixed.txt | tail -2
tar czf $OUT/r32-san.tgz -C $R .
