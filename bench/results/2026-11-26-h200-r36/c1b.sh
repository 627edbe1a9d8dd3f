# r36 call 1b: what a small launch waits on. ncu (source counters, warp states) of one-thread
# mallocs at 16/64/8192 B and of Gallatin's; the install profile (trace.ptx) at 1/256/4096
# threads; 24 B from group 0's blocks (g24.ptx) against base in turn: frag, 16-32 B speed.
set -u
R=/tmp/r36-c1b; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; G=.devbin/peers/bin/peer_gallatin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt; date -u +%FT%TZ >> $R/device.txt
S=(--section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --metrics gpu__time_duration.sum --warp-sampling-interval 0)
for s in 16 64 8192; do
  timeout 120 ncu --kernel-name vb_malloc --launch-skip 1 --launch-count 1 "${S[@]}" --export $R/vb-$s $B single --threads 1 --sizes $s --iters 1 --allocators veballoc --out /tmp/n$s > $R/ncu-vb-$s.txt 2>&1; echo "vb $s rc=$?"
  ncu --import $R/vb-$s.ncu-rep --page source --csv --print-source sass > $R/src-vb-$s.csv 2>&1
  ncu --import $R/vb-$s.ncu-rep > $R/det-vb-$s.txt 2>&1
  timeout 60 ncu --kernel-name d_alloc_fixed --launch-skip 1 --launch-count 1 "${S[@]}" $G single 1 $s --iters 1 --warmup 1 > $R/ncu-gal-$s.txt 2>&1; echo "gal $s rc=$?"
done
rm -f $R/*.ncu-rep
for n in 1 256 4096; do VEBALLOC_PTX_FILE=.devbin/var/trace.ptx timeout 60 $B single --threads $n --sizes 16,64,512,8192 --iters 3 --trace --allocators veballoc --out /tmp/t > $R/trace-$n.txt 2>&1; done
echo "trace done $(date +%T)"
for r in 1 2; do for v in base g24; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B frag --rounds 1 --allocators veballoc --out /tmp/f-$v > $R/frag-$v-$r.txt 2>&1
done; done
for r in 1 2; do for v in base g24; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 40 $B single --allocators veballoc --sizes 16,24,32,48 --out /tmp/s > $R/single-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 40 $B mixed --allocators veballoc --sizes 64,512 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
done; done
echo "ab done $(date +%T)"
cd /tmp && tar czf $OUT/r36-c1b.tgz r36-c1b
