# r38 call b: the booted segment's take-back at three quarters for the group of 48-64 B only
# (late.ptx, the working tree) against base (46fb47a), in turn, three rounds: frag of 48/64 B
# at 2^16..2^20 threads and every size at 2^20 (one round), 2^20 single 16-128 B, mixed,
# 48/64 B at 2^12..2^18 threads.
set -u
R=/tmp/r38-b; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(base late)
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2 3; do for v in ${V[@]}; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 120 $B frag --rounds 1 --allocators veballoc --out /tmp/f > $R/frag-$v-$r.txt 2>&1
  for n in 65536 131072 262144 524288; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B frag --rounds 1 --threads $n --allocators veballoc --sizes 48,64 --out /tmp/f > $R/f$n-$v-$r.txt 2>&1
  done
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,32,48,64,128 --out /tmp/s > $R/big-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
  for n in 4096 8192 16384 24576 32768 65536 262144; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 48,64 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
done; echo "round $r $(date +%T)"; tar czf $OUT/r38-b.tgz -C /tmp r38-b; done
