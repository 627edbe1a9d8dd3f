set -uo pipefail
# r28 demand-sized installs, second A/B: the PTX of 7815fbb (base) and of the change with the
# slot word loaded beside the pace (new), in turn, two rounds of scaling, single and mixed.
R=/tmp/r28-demand2; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee $R/device.txt
for r in 1 2; do
  for v in base new; do
    for cmd in scaling single mixed; do
      VEBALLOC_PTX_FILE=$PWD/.devbin/demand/$v.ptx timeout 150 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --out $R/$v-r$r > $R/$v-r$r-$cmd.txt 2>&1 || echo "exit $? $v $cmd"
    done
  done
done
tar czf $OUT/r28-demand2.tgz -C $R .
