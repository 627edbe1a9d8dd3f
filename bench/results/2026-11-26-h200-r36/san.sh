set -uo pipefail
# r36 call san (the kernels of d34fa19 = fcab8bc's: 24 B in group 0): compute-sanitizer
# memcheck on gpu_correctness, and on the harness's single sizes 16/24/32 B and mixed up to
# 64 B (65536 threads, one iteration: group 0 serving 16 and 24 B side by side).
R=/tmp/r36-san; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 .devbin/veballoc-bench single --threads 65536 --sizes 16,24,32 --iters 1 --allocators veballoc --out $R/single > $R/memcheck-single.txt 2>&1; echo "memcheck single rc=$?"
grep -a "ERROR SUMMARY" $R/memcheck-single.txt | tail -2
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 .devbin/veballoc-bench mixed --threads 65536 --sizes 64 --iters 1 --allocators veballoc --out $R/mixed > $R/memcheck-mixed.txt 2>&1; echo "memcheck mixed rc=$?"
grep -a "ERROR SUMMARY" $R/memcheck-mixed.txt | tail -2
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 .devbin/tests/gpu_correctness --ignored --test-threads=1 > $R/memcheck-gpu_correctness.txt 2>&1; echo "memcheck gpu_correctness rc=$?"
grep -a "ERROR SUMMARY\|test result" $R/memcheck-gpu_correctness.txt | tail -3
tar czf $OUT/r36-san.tgz -C $R .
