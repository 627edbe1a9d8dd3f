set -uo pipefail
# r28 boot: the cold path with and without the segments formatted ahead at heap creation
# (VEBALLOC_BOOT=0/1, same binaries), two rounds in turn of scaling (16, 64, 512, 8192 B,
# veballoc and the floor) and single; then scaling with Gallatin side by side (boot on), and
# every GPU test with boot on. One tarball back.
R=/tmp/r28-boot; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee $R/device.txt
date -u +%Y-%m-%dT%H:%M:%SZ | tee -a $R/device.txt
for r in 1 2; do
  for b in 0 1; do
    for cmd in scaling single; do
      VEBALLOC_BOOT=$b timeout 200 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --out $R/boot$b-r$r > $R/boot$b-r$r-$cmd.txt 2>&1 || echo "exit $? boot=$b $cmd"
    done
  done
done
timeout 200 .devbin/veballoc-bench scaling --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-scaling.txt 2>&1 || echo "exit $? peers"
GPU_TEST_TIMEOUT=260 scripts/device-run.sh $R/tests > $R/tests/plain.log 2>&1; echo "tests rc=$?"
grep -h 'test result' $R/tests/tests-*.txt
for b in 0 1; do for r in 1 2; do echo "== boot=$b r$r"; grep -a "gallatin\|^ *[0-9]" $R/boot$b-r$r-scaling.txt | tr -d '\r' | grep -v "^\s*\[" | awk -F'|' 'NF>3 {print $1 "|" $2}' | tr -s ' ' | head -90 | paste -sd' ' | cut -c1-900; done; done
tar czf $OUT/r28-boot.tgz -C $R .
