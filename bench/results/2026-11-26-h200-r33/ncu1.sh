set -uo pipefail
# r33 call 1: where vb_malloc's time goes at 16 B (2^20 and 2^15 threads) against Gallatin's
# d_alloc_fixed, and free at 4 KiB against Gallatin's d_free and the free floor, under ncu
# (the launch after the warm-up's).
R=/tmp/r33-ncu; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
B=.devbin/veballoc-bench; G=.devbin/peers/bin/peer_gallatin
n() { timeout 170 ncu "$@"; echo "rc=$?"; }
n --kernel-name vb_malloc --launch-skip 1 --launch-count 1 --set full --import-source yes -o $R/vb-m16 $B single --sizes 16 --iters 2 --allocators veballoc --out /tmp/o1 > $R/run-vb-m16.txt 2>&1
n --kernel-name d_alloc_fixed --launch-skip 1 --launch-count 1 --set full -o $R/ga-m16 $G single 1048576 16 --iters 2 --warmup 1 > $R/run-ga-m16.txt 2>&1
n --kernel-name vb_malloc --launch-skip 1 --launch-count 1 --set full -o $R/vb-m16s $B single --sizes 16 --threads 32768 --iters 2 --allocators veballoc --out /tmp/o2 > $R/run-vb-m16s.txt 2>&1
n --kernel-name d_alloc_fixed --launch-skip 1 --launch-count 1 --set full -o $R/ga-m16s $G single 32768 16 --iters 2 --warmup 1 > $R/run-ga-m16s.txt 2>&1
n --kernel-name regex:'vb_free|floor_free' --launch-skip 2 --launch-count 2 --section SpeedOfLight --section LaunchStats --section Occupancy -o $R/vb-f4k $B single --sizes 4096 --iters 2 --allocators veballoc,floor --out /tmp/o3 > $R/run-vb-f4k.txt 2>&1
n --kernel-name d_free --launch-skip 1 --launch-count 1 --section SpeedOfLight --section LaunchStats --section Occupancy -o $R/ga-f4k $G single 1048576 4096 --iters 2 --warmup 1 > $R/run-ga-f4k.txt 2>&1
for f in $R/*.ncu-rep; do
  b=${f%.ncu-rep}
  ncu -i $f --page details > $b-details.txt 2>&1
done
ncu -i $R/vb-m16.ncu-rep --page source --csv --print-source sass > $R/vb-m16-sass.csv 2>&1
for f in $R/*-details.txt; do echo "== $(basename $f)"; grep -E '^\s+(vb_|floor|d_)|^\s+(Duration|Executed Instructions  |Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued Instruction|Registers Per Thread|Local Memory Spilling Requests  |No Eligible)' $f; done
gzip $R/*.csv; rm -f $R/*.ncu-rep
tar czf $OUT/r33-ncu1.tgz -C $R .
