# r34 call 2: frag (one round, maps) of the claim-spread window (spread8/16), the lazy install
# (lazy), and their mix with boot-high, against the base PTX; ncu of a one-thread 64 B malloc.
set -u
O=$OUT/ab1; mkdir -p $O
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
date -u +%FT%TZ >> $O/device.txt
S=16,24,32,48,64,128,256
for v in base spread8 spread16 lazy lazy-spread8 boot-high-lazy-spread8; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P $B frag --rounds 2 --frag-map --allocators veballoc --sizes $S --out /tmp/f-$v > $O/frag-$v.txt 2>&1
done
timeout 200 ncu --kernel-name vb_malloc --launch-skip 1 --launch-count 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight --sampling-interval 0 --import-source yes -o /tmp/vb-m64-1 $B single --sizes 64 --threads 1 --iters 2 --allocators veballoc --out /tmp/o1 > $O/ncu-run.txt 2>&1
ncu -i /tmp/vb-m64-1.ncu-rep --page source --csv --print-source sass > $O/vb-m64-1-sass.csv 2>&1
ncu -i /tmp/vb-m64-1.ncu-rep --page details > $O/vb-m64-1-details.txt 2>&1
gzip $O/*.csv
cd $OUT && tar czf ab1.tgz ab1
