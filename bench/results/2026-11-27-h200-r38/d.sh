# r38 call d: group 0 and 1 claims (16-32 B) pick among the word's lowest free bits by a hash
# r38 call d: c again with hr24 (the (h % 24)-th free bit), four rounds in turn.
set -u
R=/tmp/r38-d; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(head hr16 hr24 hr32)
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2 3 4; do for v in ${V[@]}; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 90 $B frag --rounds 1 --allocators veballoc --sizes 16,24,32 --out /tmp/f > $R/frag-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B frag --rounds 1 --threads 524288 --allocators veballoc --sizes 16,24,32 --out /tmp/f > $R/f19-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,24,32,48,64 --out /tmp/s > $R/big-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B mixed --allocators veballoc --sizes 64,512 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
  for n in 1024 32768 131072; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 16,24,32 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
done; echo "round $r $(date +%T)"; tar czf $OUT/r38-d.tgz -C /tmp r38-d; done
