set -uo pipefail
R=/tmp/ncu; mkdir -p $R
S=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section SourceCounters)
for s in 16 128 4096; do
  timeout 120 ncu --kernel-name vb_free --launch-skip 1 --launch-count 1 "${S[@]}" .devbin/veballoc-bench single --sizes $s --iters 1 --allocators veballoc --out /tmp/n$s > $R/ncu-vb-$s.txt 2>&1; echo "vb $s rc=$?"
done
timeout 120 ncu --kernel-name regex:d_free --launch-skip 1 --launch-count 1 "${S[@]}" .devbin/peers/bin/peer_gallatin single 1048576 128 --iters 1 --warmup 1 > $R/ncu-gal-128.txt 2>&1; echo "gal rc=$?"
for f in $R/*.txt; do echo "== $(basename $f)"; grep -E '^\s+(Duration|L1/TEX Hit Rate|L2 Hit Rate|DRAM Throughput|Memory Throughput|Achieved Occupancy|Warp Cycles Per Issued Instruction|Executed Instructions  )' $f; grep -o 'stalled waiting for a scoreboard dependency.*' $f | head -1; grep -oE 'represents about [0-9.]+% of the total average of [0-9.]+ cycles' $f | head -3; done
tar czf $OUT/ncu.tgz -C /tmp ncu
