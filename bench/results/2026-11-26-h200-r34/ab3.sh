# r34 call 4: the lazy install that installs at once when takers wait (lazy), and the claim
# spread window only for the 24..64 B groups (spread8g, spread16g): frag, then speed in turn.
set -u
O=$OUT/ab3; mkdir -p $O
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
date -u +%FT%TZ >> $O/device.txt
V="base lazy lazy-spread8g lazy-spread16g spread8g"
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx $B frag --rounds 2 --frag-map --allocators veballoc --sizes 16,24,32,48,64,128,256 --out /tmp/f-$v > $O/frag-$v.txt 2>&1
done
for r in 1 2; do for v in $V; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P $B single --allocators veballoc --sizes 16,32,64,256,1024,4096 --out /tmp/s > $O/single-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $O/mixed-$v-$r.txt 2>&1
done; done
cd $OUT && tar czf ab3.tgz ab3
