# r38 call h: two booted segments for the 48-64 B group with its take-back at three quarters
# (b2) and at half (b2h) against head (af2b35d), in turn, three rounds: frag (every size,
# 2^20; 32-64 B at 2^18), 2^20 single, mixed, 48/64 B at 2^14..2^18 threads.
set -u
R=/tmp/r38-h; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(head b2 b2h)
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2 3; do for v in ${V[@]}; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 120 $B frag --rounds 1 --allocators veballoc --out /tmp/f > $R/frag-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B frag --rounds 1 --threads 262144 --allocators veballoc --sizes 32,48,64 --out /tmp/f > $R/f18-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,32,48,64,128 --out /tmp/s > $R/big-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
  for n in 16384 65536 262144; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 48,64 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
done; echo "round $r $(date +%T)"; tar czf $OUT/r38-h.tgz -C /tmp r38-h; done
