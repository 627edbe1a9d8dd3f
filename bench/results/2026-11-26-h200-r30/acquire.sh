set -uo pipefail
# r30 call K: the recycle's acquire by a load instead of fence.acq_rel (uncommitted, on 8ce4f46)
# against ce85276 (.devbin/base4): vb_free under ncu at 2 and 4 KiB (3 launches after the
# warm-up's), and single sizes at 2^20 threads, three rounds in turn.
R=/tmp/r30-acq; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt
for v in base new; do
  if [ $v = base ]; then b=.devbin/base4/veballoc-bench; p=.devbin/base4/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  for s in 2048 4096; do
    VEBALLOC_PTX_FILE=$PWD/$p timeout 120 ncu --kernel-name vb_free --launch-skip 1 --launch-count 3 --section SpeedOfLight $b single --sizes $s --iters 3 --allocators veballoc --out /tmp/n$v$s > $R/ncu-$v-$s.txt 2>&1
    echo "$v $s: $(grep -E '^\s+Duration' $R/ncu-$v-$s.txt | awk '{print $3}' | tr '\n' ' ')"
  done
done
for round in 1 2 3; do for v in base new; do
  if [ $v = base ]; then b=.devbin/base4/veballoc-bench; p=.devbin/base4/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b single --allocators veballoc --iters 5 --out $R/ab-$v-$round > $R/ab-$v-$round.txt 2>&1 || echo "exit $? $v"
done; done
for f in $R/ab-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-12s %s\n", $1, t, $2 }'
done | sort -s -k1,1V
tar czf $OUT/r30-acq.tgz -C $R .
