# r37 call g: first runs capped at half of a segment over the row's slots (first2.ptx: 4097 to
# 10000 B two blocks, 4096 B one) against fdb9276 (head) and the uncapped first runs (first),
# in turn: small launches of 4096/8192 B, 2^16 x mid sizes, frag of the sizes it changes.
set -u
R=/tmp/r37-g; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(head first first2)
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2 3; do for v in ${V[@]}; do
  P=.devbin/var/$v.ptx
  for n in 1 16 64 128 256 512 1024 2048 4096 8192 16384; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 4096,8192 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads 65536 --sizes 4097,6000,8192,10000 --out /tmp/s > $R/mid-$v-$r.txt 2>&1
done; done
for r in 1 2; do for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 90 $B frag --rounds 1 --allocators veballoc --sizes 4096,4097,6000,8192,10000 --out /tmp/f > $R/frag-$v-$r.txt 2>&1; done; done
echo "ab done $(date +%T)"
cd /tmp && tar czf $OUT/r37-g.tgz r37-g
