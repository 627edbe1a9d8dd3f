# r34 call 3: speed A/B of the lazy install and the claim-spread window (two rounds in turn,
# single and mixed sizes at 2^20 threads, and small launches), and ncu of a one-thread 64 B malloc.
set -u
O=$OUT/ab2; mkdir -p $O
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
date -u +%FT%TZ >> $O/device.txt
for r in 1 2; do for v in base lazy-spread8 lazy spread8; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P $B single --allocators veballoc --sizes 16,32,64,128,256,1024,4096 --out /tmp/s > $O/single-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P $B mixed --allocators veballoc --sizes 64,256,512,4096 --out /tmp/m > $O/mixed-$v-$r.txt 2>&1
done; done
for v in base lazy-spread8; do for t in 1024 32768; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx $B single --threads $t --allocators veballoc --sizes 16,64,512,8192 --out /tmp/t > $O/small-$v-$t.txt 2>&1
done; done
timeout 150 ncu --kernel-name vb_malloc --launch-skip 1 --launch-count 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight --warp-sampling-interval 0 --import-source yes -o /tmp/vb-m64-1 $B single --sizes 64 --threads 1 --iters 2 --allocators veballoc --out /tmp/o1 > $O/ncu-run.txt 2>&1
ncu -i /tmp/vb-m64-1.ncu-rep --page source --csv --print-source sass > $O/vb-m64-1-sass.csv 2>&1
ncu -i /tmp/vb-m64-1.ncu-rep --page details > $O/vb-m64-1-details.txt 2>&1
gzip $O/*.csv
cd $OUT && tar czf ab2.tgz ab2
