set -uo pipefail
# r35 call 6: the runtime's kernels in their own module (Gpu::new loads 11 kernels; the tests'
# and benchmarks' module is loaded on the first launch of one of them). The JIT's cost with the
# driver's cache off (CUDA_CACHE_DISABLE=1): one host test (Gpu::new, a heap, host claims)
# with the runtime module, then with the whole module as every process loaded it before
# (VEBALLOC_PTX_FILE=.devbin/veballoc.ptx); then every GPU test and a benchmark point.
R=/tmp/r35-split; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
T=gpu_heap_base_is_segment_aligned
for r in 1 2; do
  s=$(date +%s%N); CUDA_CACHE_DISABLE=1 timeout 120 .devbin/tests/gpu_host --ignored --exact $T > $R/jit-runtime-$r.txt 2>&1; echo "runtime module, cache off: rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms"
  s=$(date +%s%N); CUDA_CACHE_DISABLE=1 VEBALLOC_PTX_FILE=.devbin/veballoc.ptx timeout 120 .devbin/tests/gpu_host --ignored --exact $T > $R/jit-whole-$r.txt 2>&1; echo "whole module, cache off: rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms"
done
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 330 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 100 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -12
timeout 60 .devbin/veballoc-bench single --allocators veballoc,floor --sizes 16,64,4096 --out $R/single > $R/single.txt 2>&1; echo "single rc=$?"
grep -a '|' $R/single.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -3
tar czf $OUT/r35-split.tgz -C $R .
