# r39 call f (c677ae0c): every GPU test (the checks PTX for the tests that need it), the
# collections and graph examples, and the harness's reviewed paths: CUDA malloc with its
# warm-up, the host test, scaling's nulls warning (8192 B x 2^18 in a 1 GiB heap), a write
# that fails.
set -u
R=/tmp/r39-f; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz 2>/dev/null
chmod +x .devbin/collections-example .devbin/graph-example
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 &
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > /dev/null 2>&1 &
wait; echo "jit done $(date +%T)"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
T=.devbin/tests
timeout 250 $T/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$?"
for t in gpu_correctness gpu_host; do timeout 150 $T/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 $T/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -14
timeout 120 .devbin/collections-example > $R/collections.txt 2>&1; echo "collections rc=$?"
timeout 120 .devbin/graph-example > $R/graph.txt 2>&1; echo "graph rc=$?"
tar czf $OUT/r39-f.tgz -C /tmp r39-f
timeout 120 $B single --allocators veballoc,cuda --sizes 16,256 --threads 65536 --out $R/cuda > $R/cuda.txt 2>&1; echo "cuda rc=$?"
timeout 120 $B host --out $R/host > $R/host.txt 2>&1; echo "host rc=$?"
timeout 120 $B scaling --allocators veballoc --heap-gib 1 --iters 2 --out $R/scal1g > $R/scal1g.txt 2>&1; echo "scaling-1g rc=$?"
touch $R/notadir; timeout 60 $B oom --out $R/notadir/x > $R/badout.txt 2>&1; echo "bad --out rc=$? (want 1)"
grep -a "warning" $R/scal1g.txt | head -3
tar czf $OUT/r39-f.tgz -C /tmp r39-f
