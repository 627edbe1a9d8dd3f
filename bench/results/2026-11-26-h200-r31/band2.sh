set -uo pipefail
# r31 call F (the band, 2da939c): every GPU test, churn at 50% and 70%; frag of 100 B and the
# mixed sets, aa73b1c (.devbin/masks) and the band in turn, three rounds.
R=/tmp/r31-band2; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for round in 1 2 3; do
  for v in masks band; do
    b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx
    [ $v != band ] && { b=.devbin/$v/veballoc-bench; p=.devbin/$v/veballoc.ptx; }
    VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b frag --sizes 100 --allocators veballoc --out $R/frag-$v-$round > $R/frag-$v-$round.txt 2>&1 || echo "exit $? $v frag"
    echo "$v $round: $(grep -a '|' $R/frag-$v-$round.txt | grep -a 'x,' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{printf "%s:%s ", $1, $2}' | tr -s ' ')"
  done
done
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 170 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -20
for live in 0.5 0.7; do timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live: $(grep -a 'null' $R/churn-$live.txt | tail -2 | head -1)"; done
tar czf $OUT/r31-band2.tgz -C $R .
