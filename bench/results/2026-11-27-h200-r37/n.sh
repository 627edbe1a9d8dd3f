# r37 call n: the booted segment's take-back once 3/4 of a segment's blocks are out
# (tb4.ptx, TAKE_BACK_FROM = 4) against half (head.ptx, fdb9276), in turn: frag (one round),
# 64 B at 2^13..2^17 threads, 2^20 x 16..64 B and mixed.
set -u
R=/tmp/r37-n; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(head tb4)
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2 3; do for v in ${V[@]}; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 90 $B frag --rounds 1 --allocators veballoc --sizes 16,24,32,48,64,100,128,256 --out /tmp/f > $R/frag-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,24,32,48,64,128 --out /tmp/s > $R/big-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B mixed --allocators veballoc --sizes 64,512 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
  for n in 8192 16384 32768 65536 131072; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 32,48,64 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
done; done
echo "ab done $(date +%T)"
cd /tmp && tar czf $OUT/r37-n.tgz r37-n
