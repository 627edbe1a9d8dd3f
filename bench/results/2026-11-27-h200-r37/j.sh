# r37 call j: ncu of vb_malloc at 2^19 x 16 B (no install in the kernel: the boot's blocks),
# fdb9276, source counters and warp states; and the floor's kernel for comparison.
set -u
R=/tmp/r37-j; mkdir -p $R
gunzip -f .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; export VEBALLOC_PTX_FILE=.devbin/var/head.ptx
S=(--section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --warp-sampling-interval 0)
timeout 200 ncu --kernel-name vb_malloc --launch-skip 1 --launch-count 1 "${S[@]}" --export $R/vb16 $B single --threads 524288 --sizes 16 --iters 1 --allocators veballoc --out /tmp/n > $R/ncu-vb16.txt 2>&1; echo "vb rc=$?"
ncu --import $R/vb16.ncu-rep --page source --csv --print-source sass > $R/src-vb16.csv 2>&1
ncu --import $R/vb16.ncu-rep > $R/det-vb16.txt 2>&1
gzip $R/src-vb16.csv; rm -f $R/*.ncu-rep
cd /tmp && tar czf $OUT/r37-j.tgz r37-j
