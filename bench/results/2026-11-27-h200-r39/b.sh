# r39 call b: the take path's slot from the handle (SlotMap, a kernel argument) against the
# layout's words (lay.ptx: feature exp-layout-slots, the same host), in turn, three rounds:
# 2^20 single and mixed, 16/64/512 B at 2^10 and 2^15 threads; then gpu_correctness and
# gpu_host on the new build.
set -u
R=/tmp/r39-b; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
( timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 ) &
( VEBALLOC_PTX_FILE=.devbin/var/lay.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w2 > /dev/null 2>&1 ) &
wait
echo "jit done $(date +%T)"
run() { local n=$1; shift
  env "$@" timeout 60 $B single --allocators veballoc --sizes 16,32,64,128,512,4096 --out /tmp/s > $R/big-$n-$r.txt 2>&1
  env "$@" timeout 60 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $R/mixed-$n-$r.txt 2>&1
  env "$@" timeout 60 $B single --allocators veballoc --threads 1024,32768 --sizes 16,64,512 --out /tmp/s > $R/small-$n-$r.txt 2>&1
}
for r in 1 2 3; do
  run map X=1
  run lay VEBALLOC_PTX_FILE=.devbin/var/lay.ptx
  echo "round $r $(date +%T)"; tar czf $OUT/r39-b.tgz -C /tmp r39-b
done
for t in gpu_correctness gpu_host; do timeout 100 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -14
tar czf $OUT/r39-b.tgz -C /tmp r39-b
