# r35 call 4: hybrid = the first try in a word ranked by the group ticket modulo 16, a lost try
# spread by the thread hash (so a wave of more racers than ranks does not collide again and
# again), with the claim's leaf word loaded once; rank-a: every try ranked (ab3); spread: the
# thread-hash spread (ab3); base 24ddfca. JITs side by side first, then speed in turn (three
# rounds) and frag (one round, twice).
set -u
O=$OUT/ab4; mkdir -p $O
gunzip -f .devbin/var/*.gz
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
date -u +%FT%TZ >> $O/device.txt
V="base spread rank-a hybrid"
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 &
done
wait; echo "jit done $(date +%T)"
for r in 1 2 3; do for v in $V; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 40 $B single --allocators veballoc --sizes 16,32,64,256,1024,4096 --out /tmp/s > $O/single-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 40 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $O/mixed-$v-$r.txt 2>&1
done; done
echo "speed done $(date +%T)"
for r in 1 2; do for v in base rank-a hybrid; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B frag --rounds 1 --allocators veballoc --sizes 16,24,32,48,64,100,128,256 --out /tmp/f-$v > $O/frag-$v-$r.txt 2>&1
done; done
echo "frag done $(date +%T)"
cd $OUT && tar czf ab4.tgz ab4
