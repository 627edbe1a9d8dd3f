set -uo pipefail
# r30 call O (5076ed2's bundle): compute-sanitizer synccheck (warp-synchronous primitives:
# match.any, bar.warp.sync, shuffles with masks) and racecheck (shared memory: malloc_block)
# on gpu_correctness and on the harness's single and mixed sizes at 65536 threads.
R=/tmp/r30-san2; mkdir -p $R
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for tool in synccheck racecheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 .devbin/tests/gpu_correctness --ignored --test-threads=1 --skip gpu_mid_sizes > $R/$tool-gpu_correctness.txt 2>&1; echo "$tool gpu_correctness rc=$?"
  grep -a "ERROR SUMMARY\|RACECHECK SUMMARY\|test result" $R/$tool-gpu_correctness.txt | tail -3
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 .devbin/veballoc-bench single --threads 65536 --sizes 16,4096 --iters 1 --allocators veballoc --out $R/$tool-single > $R/$tool-single.txt 2>&1; echo "$tool single rc=$?"
  grep -a "ERROR SUMMARY\|RACECHECK SUMMARY" $R/$tool-single.txt | tail -2
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 .devbin/veballoc-bench collective --threads 65536 --sizes 64 --iters 1 --allocators veballoc --out $R/$tool-coll > $R/$tool-coll.txt 2>&1; echo "$tool collective rc=$?"
  grep -a "ERROR SUMMARY\|RACECHECK SUMMARY" $R/$tool-coll.txt | tail -2
done
tar czf $OUT/r30-san2.tgz -C $R .
