# r39 call c: the install path with fewer dependent round trips (the claim's search loads
# level 1's first word beside the first leaf word; the elected installer's slices come with
# its swap; the booted take-back after the swap) against HEAD's PTX (head.ptx), in turn,
# three rounds: 64/512/8192 B at 1, 64, 1024, 16384 threads, 2^20 single and mixed.
set -u
R=/tmp/r39-c; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
( timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 ) &
( VEBALLOC_PTX_FILE=.devbin/var/head.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w2 > /dev/null 2>&1 ) &
wait
echo "jit done $(date +%T)"
run() { local n=$1; shift
  for t in 1 64 1024 16384; do
    env "$@" timeout 60 $B single --allocators veballoc --threads $t --sizes 64,512,8192 --out /tmp/s > $R/t$t-$n-$r.txt 2>&1
  done
  env "$@" timeout 60 $B single --allocators veballoc --sizes 16,32,64,128,512,4096 --out /tmp/s > $R/big-$n-$r.txt 2>&1
  env "$@" timeout 60 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $R/mixed-$n-$r.txt 2>&1
}
for r in 1 2 3; do
  run new X=1
  run head VEBALLOC_PTX_FILE=.devbin/var/head.ptx
  echo "round $r $(date +%T)"; tar czf $OUT/r39-c.tgz -C /tmp r39-c
done
