set -uo pipefail
# r43 call g: ncu of vb_malloc at 2^20 mixed ≤64, HEAD's PTX against the packed-routing probe
# l512rr (call f's knobs), to see where the routed warps' extra time goes; the launch after
# the warm-up's.
R=/tmp/r43-g; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
S=(--section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section InstructionStats --metrics gpu__time_duration.sum --warp-sampling-interval 0)
prof() { # name ptx kernel timeout cmd...
  local name=$1 ptx=$2 k=$3 t=$4; shift 4
  VEBALLOC_PTX_FILE=.devbin/var/$ptx.ptx timeout $t ncu --kernel-name $k --launch-skip 1 --launch-count 1 "${S[@]}" --export $R/$name "$@" > $R/ncu-$name.txt 2>&1; echo "$name rc=$? $(date +%T)"
  ncu --import $R/$name.ncu-rep > $R/det-$name.txt 2>&1
  ncu --import $R/$name.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/src-$name.csv.gz
  rm -f $R/$name.ncu-rep
}
V=(--iters 1 --allocators veballoc --out /tmp/n)
for v in head l512rr; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
prof head-m64 head vb_malloc 150 $B mixed --sizes 64 "${V[@]}"
prof l512rr-m64 l512rr vb_malloc 150 $B mixed --sizes 64 "${V[@]}"
tar czf $OUT/r43-g.tgz -C /tmp r43-g
prof head-m256 head vb_malloc 150 $B mixed --sizes 256 "${V[@]}"
prof l512rr-m256 l512rr vb_malloc 150 $B mixed --sizes 256 "${V[@]}"
tar czf $OUT/r43-g.tgz -C /tmp r43-g
echo "done $(date +%T)"
