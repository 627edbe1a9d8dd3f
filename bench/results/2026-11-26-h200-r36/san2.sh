set -uo pipefail
# r36 call san2: Gpu::open tells the bench module from the runtime's by the PTX text (no
# cuModuleGetFunction that fails, which compute-sanitizer reported as an API error in every
# program that opened a GPU, `san/`): memcheck of the new harness (single 16/24 B, 65536
# threads) and of the new gpu_host; the new gpu_host and gpu_correctness without the sanitizer.
R=/tmp/r36-san2; mkdir -p $R
gunzip -f .devbin/*.gz 2>/dev/null; chmod +x .devbin/*-new
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 .devbin/veballoc-bench-new single --threads 65536 --sizes 16,24 --iters 1 --allocators veballoc --out $R/single > $R/memcheck-single.txt 2>&1; echo "memcheck single rc=$?"
grep -a "ERROR SUMMARY" $R/memcheck-single.txt | tail -1
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 .devbin/gpu_host-new --ignored --test-threads=1 > $R/memcheck-gpu_host.txt 2>&1; echo "memcheck gpu_host rc=$?"
grep -a "ERROR SUMMARY\|test result" $R/memcheck-gpu_host.txt | tail -2
for t in gpu_host gpu_correctness; do timeout 100 .devbin/$t-new --ignored --test-threads=1 > $R/$t.txt 2>&1; echo "$t rc=$?"; grep -a "test result" $R/$t.txt; done
timeout 60 .devbin/veballoc-bench-new single --allocators veballoc,floor --threads 1 --iters 9 --sizes 16,64 --out /tmp/x > $R/one.txt 2>&1; grep -a '^ *\[single' $R/one.txt
tar czf $OUT/r36-san2.tgz -C $R .
