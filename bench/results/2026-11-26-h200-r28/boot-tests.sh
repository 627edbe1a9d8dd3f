set -uo pipefail
# r28 boot, second call: gpu_host (fixed for the boot) and every GPU test on the checks PTX,
# util and frag with the boot (on by default). One tarball back.
# (Run at cc3a9e3, where heap creation booted by default; at later revisions boot is opt-in:
# export VEBALLOC_BOOT=1 to repeat it.)
R=/tmp/r28-bt; mkdir -p $R/tests
timeout 120 .devbin/tests/gpu_host --ignored --test-threads=1 --nocapture > $R/tests/tests-gpu_host.txt 2>&1; echo "gpu_host rc=$?"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in .devbin/tests/gpu*; do
  n=$(basename $t); skip=(); [ $n = gpu_multi ] && skip=(--skip two_gpus)
  VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $t --ignored --test-threads=1 --nocapture "${skip[@]}" > $R/tests/tests-$n-checks.txt 2>&1
  echo "$n checks rc=$?"
done
grep -H 'test result' $R/tests/*.txt
timeout 120 .devbin/veballoc-bench util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
timeout 170 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
tar czf $OUT/r28-bt.tgz -C $R .
