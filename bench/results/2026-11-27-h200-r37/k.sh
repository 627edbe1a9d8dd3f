# r37 call k: take_in_row's common case inline with no call on its path, the rest out of line
# (fast.ptx, feature exp-fast: vb_malloc's spills 340/328 -> 260/236 bytes) against fdb9276
# (head.ptx), in turn: 2^18..2^20 single, mixed, small launches, collective.
set -u
R=/tmp/r37-k; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(head fast)
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2 3; do for v in ${V[@]}; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,24,32,48,64,128,256,512,1024,2048,4096 --out /tmp/s > $R/big-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B mixed --allocators veballoc --sizes 64,256,512,4096 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
  for n in 64 4096 65536 262144 524288; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 16,64,512,8192 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
  VEBALLOC_PTX_FILE=$P timeout 60 $B collective --allocators veballoc --sizes 16,256 --out /tmp/c > $R/coll-$v-$r.txt 2>&1
done; done
echo "ab done $(date +%T)"
cd /tmp && tar czf $OUT/r37-k.tgz r37-k
