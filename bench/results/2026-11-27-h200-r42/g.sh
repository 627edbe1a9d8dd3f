set -u
# r42 call g (a5844ba5: DeviceHeap is Copy only in device code; HeapArg carries the handle's
# three words; the PTX is byte-identical to 576e4d13's): every GPU test (the checks PTX for
# the tests that need it; the two-GPU tests skipped: one GPU), the collections and graph
# examples, and one frag / single / mixed pass as a smoke test of the launches.
R=/tmp/r42-g; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz 2>/dev/null
chmod +x .devbin/collections-example .devbin/graph-example
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 &
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > /dev/null 2>&1 &
wait; echo "jit done $(date +%T)"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
T=.devbin/tests
timeout 250 $T/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$?"
for t in gpu_correctness gpu_host; do timeout 150 $T/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 $T/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
timeout 120 .devbin/collections-example > $R/collections.txt 2>&1; echo "collections rc=$?"
timeout 120 .devbin/graph-example > $R/graph.txt 2>&1; echo "graph rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -12
tar czf $OUT/r42-g.tgz -C /tmp r42-g
timeout 60 $B frag --rounds 1 --allocators veballoc --sizes 16,64,512,4096 --out $R/f > $R/frag.txt 2>&1; echo "frag rc=$?"
timeout 60 $B single --allocators veballoc --sizes 16,64,512,4096 --out $R/s > $R/single.txt 2>&1; echo "single rc=$?"
timeout 60 $B mixed --allocators veballoc --sizes 64,512,4096 --out $R/m > $R/mixed.txt 2>&1; echo "mixed rc=$?"
tar czf $OUT/r42-g.tgz -C /tmp r42-g
echo "done $(date +%T)"
