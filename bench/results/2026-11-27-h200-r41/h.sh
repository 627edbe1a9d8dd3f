set -u
# r41 call h (7ed8c0f8: no device code changed since 615937b3 but the SAFETY comments, PTX
# byte-identical; host code: two unsafe blocks bound to a `let`): every GPU test (the checks
# PTX for the tests that need it; the two-GPU tests skipped: one GPU), the collections and
# graph examples; then the install-path trace counters (`--features trace` PTX) of mixed
# <=64 and <=512 at 2^20 for HEAD, c3 (mixed warps on slots shared by 8) and x3 (c3 with the
# spare run): which wait the shared slots add.
R=/tmp/r41-h; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/collections-example .devbin/graph-example
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 &
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > /dev/null 2>&1 &
for v in head c3 x3; do VEBALLOC_PTX_FILE=.devbin/var/$v-trace.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done
wait; echo "jit done $(date +%T)"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
T=.devbin/tests
timeout 250 $T/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$?"
for t in gpu_correctness gpu_host; do timeout 150 $T/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 $T/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
timeout 120 .devbin/collections-example > $R/collections.txt 2>&1; echo "collections rc=$?"
timeout 120 .devbin/graph-example > $R/graph.txt 2>&1; echo "graph rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -12
tar czf $OUT/r41-h.tgz -C /tmp r41-h
for v in head c3 x3; do
  VEBALLOC_PTX_FILE=.devbin/var/$v-trace.ptx timeout 60 $B mixed --allocators veballoc --sizes 64,512 --iters 1 --trace --out $R/tr-$v > $R/trace-$v.txt 2>&1; echo "trace $v rc=$?"
done
tar czf $OUT/r41-h.tgz -C /tmp r41-h
echo "done $(date +%T)"
