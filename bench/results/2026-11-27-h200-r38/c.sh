# r38 call c: group 0 and 1 claims (16-32 B) pick among the word's lowest free bits by a hash
# of the thread (hr16: the (h % 16)-th free bit, hr32: h % 32) instead of the first free bit at
# or after a hashed position (head, 4df8590), in turn, three rounds: frag (16-32 B and mixed),
# 2^20 single 16-64 B, mixed 64/512, 16-32 B at 2^10..2^17 threads.
set -u
R=/tmp/r38-c; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(head hr16 hr32)
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2 3; do for v in ${V[@]}; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 90 $B frag --rounds 1 --allocators veballoc --sizes 16,24,32 --out /tmp/f > $R/frag-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,24,32,48,64 --out /tmp/s > $R/big-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B mixed --allocators veballoc --sizes 64,512 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
  for n in 1024 8192 32768 131072 524288; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 16,24,32 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
done; echo "round $r $(date +%T)"; tar czf $OUT/r38-c.tgz -C /tmp r38-c; done
