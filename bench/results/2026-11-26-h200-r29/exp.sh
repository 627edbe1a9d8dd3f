set -uo pipefail
# r29 call C (FALLBACK_CLASSES back to one doubling, 8 classes): the 90%-full churn test timed,
# util at 16/100/4097 B (null-path time), churn at 70% twice with the default pin budget and
# twice with half of it (VEBALLOC_PIN_SHIFT=4), single and mixed with half the pin budget.
R=/tmp/r29-exp; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt
s=$(date +%s); timeout 150 .devbin/tests/gpu --ignored --test-threads=1 --nocapture gpu_churn_at_90 > $R/tests-gpu-churn90.txt 2>&1; echo "churn90 rc=$? in $(( $(date +%s) - s )) s"
grep -a 'pressure\|test result' $R/tests-gpu-churn90.txt
timeout 60 .devbin/veballoc-bench util --allocators veballoc --sizes 16,100,4097 --util-ranges 16-4096 --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
grep -a -o '[0-9-]* |  *[0-9]*  *[0-9]* |  *[0-9]*  *[0-9.]*% |  *[0-9.]*%.*' $R/util.txt | tr -s ' '
for pin in 3 4; do for k in 1 2; do
  VEBALLOC_PIN_SHIFT=$pin timeout 60 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live 0.7 --out $R/churn-pin$pin-$k > $R/churn-pin$pin-$k.txt 2>&1
  echo "pin $pin run $k: $(grep -a 'null' $R/churn-pin$pin-$k.txt | tail -2 | head -1)"
done; done
for cmd in single mixed; do
  VEBALLOC_PIN_SHIFT=4 timeout 100 .devbin/veballoc-bench $cmd --allocators veballoc --iters 5 --out $R/pin4 > $R/pin4-$cmd.txt 2>&1
  timeout 100 .devbin/veballoc-bench $cmd --allocators veballoc --iters 5 --out $R/pin3 > $R/pin3-$cmd.txt 2>&1
done
for f in $R/pin*-single.txt $R/pin*-mixed.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ split($2, a, " "); printf "%-8s %-12s %s / %s\n", $1, t, a[1], a[2] }'
done | sort -s -k1,1V
tar czf $OUT/r29-exp.tgz -C $R .
