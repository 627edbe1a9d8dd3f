set -uo pipefail
# r29 call A (eight classes per doubling): every GPU test (plain and on the checks PTX), util at
# every size, churn at 50% and 70% live (70% also with half the pin budget), frag; one tarball.
T=/tmp/r29; mkdir -p $T/tests
GPU_TEST_TIMEOUT=200 scripts/device-run.sh $T/tests > $T/tests/plain.log 2>&1; echo "plain rc=$?"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in .devbin/tests/gpu*; do
  n=$(basename $t); skip=(); [ $n = gpu_multi ] && skip=(--skip two_gpus)
  VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 150 $t --ignored --test-threads=1 --nocapture "${skip[@]}" > $T/tests/tests-$n-checks.txt 2>&1
  echo "$n checks rc=$?"
done
grep -H 'test result' $T/tests/*.txt; grep -h 'FAILED\|panicked' $T/tests/*.txt | head
timeout 100 .devbin/veballoc-bench util --allocators veballoc --out $T/util > $T/util.txt 2>&1; echo "util rc=$?"
grep -a -o '[0-9-]* |  *[0-9]*  *[0-9]* |  *[0-9]*  *[0-9.]*% |  *[0-9.]*%' $T/util.txt
for live in 0.5 0.7; do
  timeout 60 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live $live --out $T/churn-$live > $T/churn-$live.txt 2>&1; echo "churn $live rc=$?"
  grep -a 'null' $T/churn-$live.txt | tail -2
done
VEBALLOC_PIN_SHIFT=4 timeout 60 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live 0.7 --out $T/churn-0.7-pin4 > $T/churn-0.7-pin4.txt 2>&1; echo "churn 0.7 pin4 rc=$?"
grep -a 'null' $T/churn-0.7-pin4.txt | tail -2
timeout 120 .devbin/veballoc-bench frag --allocators veballoc --out $T/frag > $T/frag.txt 2>&1; echo "frag rc=$?"
tar czf $OUT/r29-mem.tgz -C $T .
