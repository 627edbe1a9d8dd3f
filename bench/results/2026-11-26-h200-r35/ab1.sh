# r35 call 1: claims ranked by a group ticket (new.ptx) against the thread-hash spread
# (spread.ptx, feature spread-claims; both with the installer's own take in its swap, the
# claim's leaf word loaded once, and install polls of at most 256 ns) and the base (24ddfca):
# frag (one round, twice), speed in turn (two rounds), scaling.
set -u
O=$OUT/ab1; mkdir -p $O
gunzip .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
date -u +%FT%TZ >> $O/device.txt
V="base spread new"
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
cd $OUT && tar czf ab1.tgz ab1
