# r35 call 2: ranks modulo 64 (ac-r64) and 16 (ac-r16, feature rank16) against the spread (ac-spread),
# all with the installer's own take and the leaf word loaded once (A, C); ac-r64-poll with install
# polls of at most 256 ns (feature poll256); base 24ddfca. frag (one round, twice), speed in turn
# (two rounds), scaling.
set -u
O=$OUT/ab2; mkdir -p $O
gunzip .devbin/var/*.gz
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
date -u +%FT%TZ >> $O/device.txt
V="base ac-spread ac-r64 ac-r64-poll ac-r16"
for r in 1 2; do for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B frag --rounds 1 --allocators veballoc --out /tmp/f-$v > $O/frag-$v-$r.txt 2>&1
done; done
echo "frag done $(date +%T)"
for r in 1 2; do for v in $V; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 40 $B single --allocators veballoc --sizes 16,32,64,256,1024,4096 --out /tmp/s > $O/single-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 40 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $O/mixed-$v-$r.txt 2>&1
done; done
echo "speed done $(date +%T)"
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 90 $B scaling --iters 3 --allocators veballoc --out /tmp/sc-$v > $O/scaling-$v.txt 2>&1
done
echo "scaling done $(date +%T)"
cd $OUT && tar czf ab2.tgz ab2
