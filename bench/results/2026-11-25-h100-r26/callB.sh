set -uo pipefail
cp .devbin/ab/base.ptx .devbin/ab/old.ptx; cp .devbin/veballoc.ptx .devbin/ab/new.ptx
R=/tmp/res; mkdir -p $R
scripts/device-ab.sh $R r26 2 .devbin/ab/old.ptx .devbin/ab/new.ptx 2>&1 | tail -60
for v in old new; do
  VEBALLOC_PTX_FILE=.devbin/ab/$v.ptx timeout 120 ncu --kernel-name vb_free --launch-skip 1 --launch-count 1 --section Occupancy --section LaunchStats --section SpeedOfLight .devbin/veballoc-bench single --sizes 512 --iters 1 --allocators veballoc --out /tmp/ncu-$v > $R/r26/ncu-free-512-$v.txt 2>&1
  echo "ncu $v rc=$?"; grep -E 'Registers Per|Achieved Occupancy|Theoretical Occupancy|^ +Duration' $R/r26/ncu-free-512-$v.txt
done
tar czf $OUT/r26.tgz -C $R r26
