set -uo pipefail
# r40 call d: A/B of serve_group's bar.warp.sync before the shuffles (sync.ptx, the working
# tree) against HEAD's PTX (head.ptx, 9ecade65), one harness binary, three rounds in turn:
# single 16..4096 and mixed <=64/512/4096 at 2^20 (veballoc only), then ncu of 2^20 x 16 B
# on sync.ptx (is the shuffles' collective form gone?).
R=/tmp/r40-d; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for v in head sync; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1; done
echo "jit done $(date +%T)"
for r in 1 2 3; do for v in head sync; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 100 $B single --allocators veballoc --sizes 16,32,48,64,128,256,512,1024,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 100 $B mixed --allocators veballoc --sizes 64,512,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v $r"
done; done
unset VEBALLOC_PTX_FILE
echo "ab done $(date +%T)"
tar czf $OUT/r40-d.tgz -C $R .
S=(--section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --metrics gpu__time_duration.sum --warp-sampling-interval 0)
for v in sync; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 150 ncu --kernel-name vb_malloc --launch-skip 1 --launch-count 1 "${S[@]}" --export $R/$v-16 $B single --sizes 16 --iters 1 --allocators veballoc --out /tmp/n > $R/ncu-$v-16.txt 2>&1; echo "ncu $v rc=$?"
  ncu --import $R/$v-16.ncu-rep > $R/det-$v-16.txt 2>&1
  ncu --import $R/$v-16.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/src-$v-16.csv.gz
  rm -f $R/$v-16.ncu-rep
done
tar czf $OUT/r40-d.tgz -C $R .
echo "done $(date +%T)"
