set -uo pipefail
# r40 call c (HEAD's device code): ncu (warp states, source counters, occupancy, launch stats,
# memory) of the points of issue 11 that miss their target: alloc at 2^20 x 16/32/64 B, mixed
# <=64, 4 KiB (against the floor), free at 16 B (against the free floor) and 2 KiB and mixed
# <=512, small launches of 512 B (1 thread) and 64 B (4096 threads); the floors' kernels
# beside them. The launch after the warm-up's in each. (Gallatin's kernels are not profiled:
# the peer binaries in ../shared/peers/bin are truncated this session and crash, see a/.)
R=/tmp/r40-c; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench; G=.devbin/peers/bin/peer_gallatin
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
( .devbin/peers/bin/peer_cuda single 1024 16 --iters 1 --csv /tmp/pc.csv; echo "peer_cuda rc=$?"; .devbin/peers/bin/peer_gallatin single 1024 16 --iters 1 --csv /tmp/pg.csv; echo "peer_gallatin rc=$?" ) > $R/peers-crash.txt 2>&1
S=(--section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --metrics gpu__time_duration.sum --warp-sampling-interval 0)
prof() { # name kernel timeout cmd...
  local name=$1 k=$2 t=$3; shift 3
  timeout $t ncu --kernel-name $k --launch-skip 1 --launch-count 1 "${S[@]}" --export $R/$name "$@" > $R/ncu-$name.txt 2>&1; echo "$name rc=$? $(date +%T)"
  ncu --import $R/$name.ncu-rep > $R/det-$name.txt 2>&1
  ncu --import $R/$name.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/src-$name.csv.gz
  rm -f $R/$name.ncu-rep
}
V=(--iters 1 --allocators veballoc --out /tmp/n)
F=(--iters 1 --allocators floor --out /tmp/n)
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
for s in 16 32 64 4096; do prof vbm-$s vb_malloc 150 $B single --sizes $s "${V[@]}"; done
prof vbm-mixed64 vb_malloc 150 $B mixed --sizes 64 "${V[@]}"
tar czf $OUT/r40-c.tgz -C $R .
prof flm-16 floor_malloc 100 $B single --sizes 16 "${F[@]}"
prof flf-16 floor_free 100 $B single --sizes 16 "${F[@]}"
prof vbf-16 vb_free 150 $B single --sizes 16 "${V[@]}"
prof vbf-2048 vb_free 150 $B single --sizes 2048 "${V[@]}"
prof vbf-mixed512 vb_free 150 $B mixed --sizes 512 "${V[@]}"
tar czf $OUT/r40-c.tgz -C $R .
prof vbm-512-1 vb_malloc 100 $B single --sizes 512 --threads 1 "${V[@]}"
prof vbm-64-4096 vb_malloc 100 $B single --sizes 64 --threads 4096 "${V[@]}"
tar czf $OUT/r40-c.tgz -C $R .
echo "done $(date +%T)"
