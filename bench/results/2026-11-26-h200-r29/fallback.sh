set -uo pipefail
# r29 call E (fallback of two doublings above 4 KiB): the 90%-full churn test (nulls, time),
# util at 16 B and 4097 B and the [16, 4096] range (null-path time), churn at 70%.
R=/tmp/r29-fb; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 100 .devbin/tests/gpu --ignored --nocapture gpu_churn_at_90 > $R/churn90-new.txt 2>&1; echo "churn90 rc=$?"
grep -a 'pressure\|result' $R/churn90-new.txt
timeout 60 .devbin/veballoc-bench util --allocators veballoc --sizes 16,4097,70000 --util-ranges 16-4096,4096-1048576 --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
grep -a -o '[0-9-]* |  *[0-9]*  *[0-9]* |  *[0-9]*  *[0-9.]*% |  *[0-9.]*%.*' $R/util.txt | tr -s ' '
for k in 1 2; do timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live 0.7 --out $R/churn-0.7-$k > $R/churn-0.7-$k.txt 2>&1; echo "churn 0.7: $(grep -a 'null' $R/churn-0.7-$k.txt | tail -2 | head -1)"; done
tar czf $OUT/r29-fb.tgz -C $R .
