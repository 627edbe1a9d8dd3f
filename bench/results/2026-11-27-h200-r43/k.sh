set -uo pipefail
# r43 call k: the helper's spike (packed-sizes-spike.diff on cc7fc070: an object-start bitmap
# for packed blocks, so that malloc_packed's pointers have usable_size and realloc): its GPU
# tests (gpu, gpu_correctness, gpu_host; checks PTX of the spike for the tests that need it),
# then the packed and single benchmarks of HEAD's bench (the bundle built at the time) and the
# spike's, in turn, two rounds.
R=/tmp/r43-k; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/spike/tests/*.gz .devbin/spike/*.gz 2>/dev/null
chmod +x .devbin/spike/veballoc-bench .devbin/spike/tests/* .devbin/veballoc-bench
B=.devbin/veballoc-bench; S=.devbin/spike/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 &
timeout 200 $S single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/ws > /dev/null 2>&1 &
VEBALLOC_PTX_FILE=.devbin/spike/veballoc-checks.ptx timeout 200 $S single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > /dev/null 2>&1 &
wait; echo "jit done $(date +%T)"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/spike/veballoc-checks.ptx
T=.devbin/spike/tests
timeout 250 $T/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$?"
for t in gpu_correctness gpu_host; do timeout 150 $T/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
unset VEBALLOC_CHECKS_PTX_FILE
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -8
tar czf $OUT/r43-k.tgz -C /tmp r43-k
for r in 1 2; do for v in head spike; do
  X=$B; [ $v = spike ] && X=$S
  timeout 100 $X packed --allocators veballoc --sizes 32,64,256,512,1024,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
  timeout 60 $X single --allocators veballoc --sizes 16,64,512,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
done; echo "round $r $(date +%T)"; tar czf $OUT/r43-k.tgz -C /tmp r43-k; done
echo "done $(date +%T)"
