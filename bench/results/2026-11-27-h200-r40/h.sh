set -u
# r40 call h (the working tree after 15e15db4: malloc, malloc_packed and free group a warp's
# lanes by heap as well; new kernels vb_malloc_two_heaps / vb_free_two_heaps and the GPU test
# gpu_lanes_of_one_warp_on_two_heaps_each_get_their_own_heap_s_memory). before.ptx: the
# same tree with the old grouping (class alone; packed: the active lanes; free: the block's
# index in its heap); after.ptx: the fix. The test on each, then A/B of speed, three rounds
# in turn, then every gpu_correctness test on the fix.
R=/tmp/r40-h; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; T=.devbin/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for v in before after; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for v in before after; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 120 $T/gpu_correctness --ignored --test-threads=1 two_heaps > $R/test-$v.txt 2>&1; echo "two-heaps test on $v: rc=$?"
done
for r in 1 2 3; do for v in before after; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 100 $B single --allocators veballoc --sizes 16,32,64,256,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 100 $B mixed --allocators veballoc --sizes 64,512,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v $r"
done; done
unset VEBALLOC_PTX_FILE
echo "ab done $(date +%T)"
tar czf $OUT/r40-h.tgz -C $R .
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 200 $T/gpu_correctness --ignored --test-threads=1 > $R/gpu_correctness.txt 2>&1; echo "gpu_correctness rc=$?"
timeout 250 $T/gpu --ignored --test-threads=1 > $R/gpu.txt 2>&1; echo "gpu rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/*.txt | tail -12
tar czf $OUT/r40-h.tgz -C $R .
