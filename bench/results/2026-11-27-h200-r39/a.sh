# r39 call a (probe): class rows that start narrow and widen (VEBALLOC_FAN=narrow,us: rows
# start with row_shards >> narrow slots, double when a run lasts under us microseconds),
# against FAN unset (the same PTX) and HEAD's PTX (head.ptx), in turn, two rounds: frag of
# 16 and 64 B (and the three mixed), 2^20 single and mixed, 64 and 512 B at 2^10 and 2^15.
set -u
R=/tmp/r39-a; mkdir -p $R
gunzip -f .devbin/*.ptx.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
( timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 ) &
( VEBALLOC_PTX_FILE=.devbin/var/head.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w2 > /dev/null 2>&1 ) &
wait
echo "jit done $(date +%T)"
run() { # name, then env assignments
  local n=$1; shift
  env "$@" timeout 90 $B frag --rounds 1 --allocators veballoc --sizes 16,64 --out /tmp/f > $R/frag-$n-$r.txt 2>&1
  env "$@" timeout 60 $B single --allocators veballoc --sizes 16,32,64,128,512,4096 --out /tmp/s > $R/big-$n-$r.txt 2>&1
  env "$@" timeout 60 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $R/mixed-$n-$r.txt 2>&1
  env "$@" timeout 60 $B single --allocators veballoc --threads 1024,32768 --sizes 64,512 --out /tmp/s > $R/small-$n-$r.txt 2>&1
}
for r in 1 2; do
  run base X=1
  run head VEBALLOC_PTX_FILE=.devbin/var/head.ptx
  run f3-20 VEBALLOC_FAN=3,20
  run f3-50 VEBALLOC_FAN=3,50
  run f2-20 VEBALLOC_FAN=2,20
  echo "round $r $(date +%T)"; tar czf $OUT/r39-a.tgz -C /tmp r39-a
done
