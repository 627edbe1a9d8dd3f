set -uo pipefail
# r29 call F: base (e44a930) against the variant whose rows above 4 KiB get half the pin share
# (FINE_ROW_SHARE_SHIFT = 1, e44a930-dirty): churn at 70%, single at 8192..65536 B (2^20 threads) and 8192 B at 4096 and 65536 threads
# for both; the 90%-full churn test and every GPU test on the checks PTX for the variant.
R=/tmp/r29-pin; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for v in base fine; do
  if [ $v = base ]; then b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  export VEBALLOC_PTX_FILE=$PWD/$p
  timeout 40 $b churn --churn-rounds 20 --churn-live 0.7 --out $R/churn-$v > $R/churn-$v.txt 2>&1; echo "$v churn 0.7: $(grep -a 'null' $R/churn-$v.txt | tail -2 | head -1)"
  for n in 4096 65536; do timeout 30 $b single --sizes 8192 --threads $n --allocators veballoc --iters 5 --out $R/small-$n-$v > $R/small-$n-$v.txt 2>&1 || echo "exit $? $v small $n"; done
  timeout 60 $b single --sizes 8192,16384,65536 --allocators veballoc --iters 5 --out $R/single-$v > $R/single-$v.txt 2>&1 || echo "exit $? $v single"
done
unset VEBALLOC_PTX_FILE
for f in $R/small-*.txt $R/single-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-16s %-14s %s\n", $1, t, $2 }'
done | sort -s -k1,1V -k2,2n
timeout 100 .devbin/tests/gpu --ignored --nocapture gpu_churn_at_90 > $R/tests/churn90-fine.txt 2>&1; echo "churn90 rc=$?"
grep -a 'pressure\|result' $R/tests/churn90-fine.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in .devbin/tests/gpu*; do
  n=$(basename $t); skip=(--skip gpu_churn_at_90); [ $n = gpu_multi ] && skip+=(--skip two_gpus)
  VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 100 $t --ignored --test-threads=1 "${skip[@]}" > $R/tests/$n-checks.txt 2>&1; echo "$n checks rc=$?"
done
grep -ah 'test result\|FAILED\|panicked' $R/tests/*-checks.txt | head
tar czf $OUT/r29-pin.tgz -C $R .
