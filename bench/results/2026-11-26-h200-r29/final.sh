set -uo pipefail
# r29 call D, the kept version (f548eb8: four classes per doubling up to 4 KiB, eight above;
# sweeps and steals on used slots only): the 90%-full churn test of old (8eed155) and new for
# 80 s each (rounds reached), every other GPU test, util, churn at 50%/70%, frag, Gallatin side
# by side (single, mixed), old and new single and mixed in turn.
R=/tmp/r29-final; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
VEBALLOC_PTX_FILE=$PWD/.devbin/old/veballoc.ptx timeout 80 .devbin/old/gpu --ignored --nocapture gpu_churn_at_90 > $R/tests/churn90-old.txt 2>&1; echo "old churn90 rc=$?"
timeout 80 .devbin/tests/gpu --ignored --nocapture gpu_churn_at_90 > $R/tests/churn90-new.txt 2>&1; echo "new churn90 rc=$?"
grep -a 'round\|pressure\|result' $R/tests/churn90-*.txt | tail -16
s=$(date +%s); timeout 120 .devbin/tests/gpu --ignored --test-threads=1 --skip gpu_churn_at_90 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt
timeout 90 .devbin/veballoc-bench util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
grep -a -o '[0-9-]* |  *[0-9]*  *[0-9]* |  *[0-9]*  *[0-9.]*% |  *[0-9.]*%.*' $R/util.txt | tr -s ' '
for live in 0.5 0.7; do timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live: $(grep -a 'null' $R/churn-$live.txt | tail -2 | head -1)"; done
timeout 80 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -22
peers=$(scripts/peers-dir.sh)
for cmd in single mixed; do timeout 80 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"; done
for v in old new; do
  if [ $v = old ]; then b=.devbin/old/veballoc-bench; p=.devbin/old/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/ab-$v > $R/ab-$v-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
done
for f in $R/peers-*.txt $R/ab-*-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-14s %s | %s\n", $1, t, $2, $NF }'
done | sort -s -k1,1V
tar czf $OUT/r29-final.tgz -C $R .
