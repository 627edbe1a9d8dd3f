set -uo pipefail
T=/tmp/t6; mkdir -p $T/tests
GPU_TEST_TIMEOUT=200 scripts/device-run.sh $T/tests > $T/plain.log 2>&1; echo "plain rc=$?"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in .devbin/tests/gpu*; do
  n=$(basename $t); skip=(); [ $n = gpu_multi ] && skip=(--skip two_gpus)
  VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $t --ignored --test-threads=1 --nocapture "${skip[@]}" > $T/tests/tests-$n-checks.txt 2>&1
  echo "$n checks rc=$?"
done
grep -H 'test result' $T/tests/*.txt; grep -h 'FAILED\|panicked' $T/tests/*.txt | head
timeout 60 .devbin/veballoc-bench churn --churn-rounds 20 --out $T/tests/churn > $T/tests/churn-0.5.txt 2>&1; echo "churn rc=$?"; grep -a 'null' $T/tests/churn-0.5.txt | tail -1
timeout 60 .devbin/veballoc-bench util --sizes 16,100,20971520 --allocators veballoc --out $T/tests/util > $T/tests/util.txt 2>&1; echo "util rc=$?"
tar czf $OUT/t6.tgz -C $T tests
