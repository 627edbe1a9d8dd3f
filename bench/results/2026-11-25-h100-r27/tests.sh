set -uo pipefail
T=/tmp/t; mkdir -p $T/tests
GPU_TEST_TIMEOUT=260 scripts/device-run.sh $T/tests > $T/plain.log 2>&1; echo "plain rc=$?"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in .devbin/tests/gpu*; do
  n=$(basename $t); skip=(); [ $n = gpu_multi ] && skip=(--skip two_gpus)
  VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $t --ignored --test-threads=1 --nocapture "${skip[@]}" > $T/tests/tests-$n-checks.txt 2>&1
  echo "$n checks rc=$?"
done
grep -H 'test result' $T/tests/*.txt; grep -h 'FAILED\|panicked' $T/tests/*.txt | head
for live in 0.5 0.7; do
  timeout 100 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live $live --out $T/tests/churn-$live > $T/tests/churn-$live.txt 2>&1; echo "churn $live rc=$?"
  grep -a 'null' $T/tests/churn-$live.txt | tail -2
done
tar czf $OUT/tests.tgz -C $T tests
