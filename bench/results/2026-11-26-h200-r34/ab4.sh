# r34 call 5: the on-demand install as committed (lazy.ptx) and with claims lowest-first until
# a race is lost (lazy-sr.ptx, feature spread-retry) against the base (4a11b22): frag, speed
# in turn (two rounds), small launches.
set -u
O=$OUT/ab4; mkdir -p $O
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
date -u +%FT%TZ >> $O/device.txt
V="base lazy lazy-sr"
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx $B frag --rounds 2 --frag-map --allocators veballoc --sizes 16,24,32,48,64,128,256,1024 --out /tmp/f-$v > $O/frag-$v.txt 2>&1
done
for r in 1 2; do for v in $V; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P $B single --allocators veballoc --sizes 16,32,64,256,1024,4096 --out /tmp/s > $O/single-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $O/mixed-$v-$r.txt 2>&1
done; done
for v in $V; do for t in 1024 32768; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx $B single --threads $t --allocators veballoc --sizes 16,64,512,8192 --out /tmp/t > $O/small-$v-$t.txt 2>&1
done; done
cd $OUT && tar czf ab4.tgz ab4
