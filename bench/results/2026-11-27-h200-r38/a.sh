# r38 call a: PTX variants of 46fb47a in turn, three rounds: base; tbg (the booted segment's
# take-back at half for group 0, three quarters for the others); sp32 / sp16 (group 0 and 1
# claims spread over the word's lowest 32 / 16 positions, not 64). frag (one round, 16-256 B
# and mixed), 2^20 single 16-128 B, mixed 64/512, 16-64 B at 2^10..2^17 threads.
set -u
R=/tmp/r38-a; mkdir -p $R
gunzip -f .devbin/var/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(base tbg sp32 sp16)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2 3; do for v in ${V[@]}; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 90 $B frag --rounds 1 --allocators veballoc --sizes 16,24,32,48,64,128,256 --out /tmp/f > $R/frag-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,24,32,48,64,128 --out /tmp/s > $R/big-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B mixed --allocators veballoc --sizes 64,512 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
  for n in 1024 8192 16384 32768 65536 131072; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 16,32,64 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
done; echo "round $r $(date +%T)"; tar czf $OUT/r38-a.tgz -C /tmp r38-a; done
echo "ab done $(date +%T)"
