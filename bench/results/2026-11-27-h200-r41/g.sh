set -uo pipefail
# r41 call g: ncu of 2^20 mixed <=64, vb_malloc and vb_free, HEAD's PTX (head.ptx) against
# c3 (mixed warps' groups on slots shared by 8 multiprocessors, call f's c3.ptx): what the
# shared slots cost (f/: alloc +71%, free +48%).
R=/tmp/r41-g; mkdir -p $R
gunzip -f .devbin/*.ptx.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
S=(--section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section SpeedOfLight --metrics gpu__time_duration.sum --warp-sampling-interval 0)
for v in head c3; do for k in vb_malloc vb_free; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 150 ncu --kernel-name $k --launch-skip 1 --launch-count 1 "${S[@]}" --export $R/$v-$k $B mixed --sizes 64 --iters 1 --allocators veballoc --out /tmp/n > $R/ncu-$v-$k.txt 2>&1; echo "ncu $v $k rc=$?"
  ncu --import $R/$v-$k.ncu-rep > $R/det-$v-$k.txt 2>&1
  ncu --import $R/$v-$k.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/src-$v-$k.csv.gz
  rm -f $R/$v-$k.ncu-rep
done; done
tar czf $OUT/r41-g.tgz -C $R .
echo "done $(date +%T)"
