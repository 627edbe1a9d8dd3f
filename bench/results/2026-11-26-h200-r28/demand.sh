set -uo pipefail
# r28 demand-sized installs: the PTX of 7815fbb (base) and of the change (new) in turn with the
# same harness (the layout is the same), two rounds of scaling (16, 64, 512, 8192 B), single
# and mixed (veballoc and the floors), then frag once each. One tarball back.
R=/tmp/r28-demand; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee $R/device.txt
for r in 1 2; do
  for v in base new; do
    p=.devbin/demand/$v.ptx
    for cmd in scaling single mixed; do
      VEBALLOC_PTX_FILE=$PWD/$p timeout 150 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --out $R/$v-r$r > $R/$v-r$r-$cmd.txt 2>&1 || echo "exit $? $v $cmd"
    done
  done
done
for v in base new; do
  VEBALLOC_PTX_FILE=$PWD/.devbin/demand/$v.ptx timeout 150 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag-$v > $R/frag-$v.txt 2>&1; echo "frag $v rc=$?"
done
tar czf $OUT/r28-demand.tgz -C $R .
