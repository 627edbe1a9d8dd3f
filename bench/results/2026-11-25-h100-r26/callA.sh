set -uo pipefail
T=/tmp/t; mkdir -p $T
GPU_TEST_TIMEOUT=260 scripts/device-run.sh $T/tests > $T/plain.log 2>&1; echo "plain rc=$?"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in .devbin/tests/gpu*; do
  n=$(basename $t); skip=(); [ $n = gpu_multi ] && skip=(--skip two_gpus)
  VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 260 $t --ignored --test-threads=1 --nocapture "${skip[@]}" > $T/tests/tests-$n-checks.txt 2>&1
  echo "$n checks rc=$?"
done
grep -H 'test result' $T/tests/*.txt; grep -h 'FAILED\|panicked' $T/tests/*.txt | head
tar czf $OUT/tests.tgz -C $T tests
