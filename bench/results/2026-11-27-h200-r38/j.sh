# r38 call j (probe, 66bf338's bundle): fewer slots per row through the host's pin budget,
# VEBALLOC_PIN_SHIFT 4 and 5 (half and a quarter of each row's slots: 16-24 B rows 128 / 64,
# 32 B 64 / 32, 48-64 B 32 / 16) against the default 3, in turn, two rounds: frag (16-64 B and
# mixed), 2^20 single, mixed, 24-64 B at 2^15 threads.
set -u
R=/tmp/r38-j; mkdir -p $R
gunzip -f .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
echo "jit done $(date +%T)"
for r in 1 2; do for v in 3 4 5; do
  export VEBALLOC_PIN_SHIFT=$v
  timeout 90 $B frag --rounds 1 --allocators veballoc --sizes 16,24,32,48,64 --out /tmp/f > $R/frag-p$v-$r.txt 2>&1
  timeout 60 $B single --allocators veballoc --sizes 16,24,32,48,64,128,4096 --out /tmp/s > $R/big-p$v-$r.txt 2>&1
  timeout 60 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $R/mixed-p$v-$r.txt 2>&1
  timeout 60 $B single --allocators veballoc --threads 32768 --sizes 24,32,64 --out /tmp/s > $R/s32768-p$v-$r.txt 2>&1
done; echo "round $r $(date +%T)"; tar czf $OUT/r38-j.tgz -C /tmp r38-j; done
