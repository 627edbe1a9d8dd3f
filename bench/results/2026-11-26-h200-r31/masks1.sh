set -uo pipefail
# r31 call A (f7c92b2: free masks for the classes of at most 64 slices a block): every GPU
# test (gpu_multi's two-GPU tests skipped: one GPU), churn at 50% and 70%, util, frag; 2^18 x
# 8 KiB and 2^16 x 40000 B with Gallatin side by side.
R=/tmp/r31-masks1; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 170 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -20
for live in 0.5 0.7; do timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live: $(grep -a 'null' $R/churn-$live.txt | tail -2 | head -1)"; done
timeout 120 .devbin/veballoc-bench util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
grep -a -o '[0-9-]* |  *[0-9]*  *[0-9]* |  *[0-9]*  *[0-9.]*% |  *[0-9.]*%.*' $R/util.txt | tr -s ' '
timeout 90 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -24
peers=$(scripts/peers-dir.sh)
for pt in 8192:262144 40000:65536; do
  timeout 60 .devbin/veballoc-bench single --sizes ${pt%:*} --threads ${pt#*:} --allocators veballoc --iters 5 --peers $peers --peers-list gallatin --out $R/mid > $R/mid-${pt/:/-}.txt 2>&1 || echo "exit $? $pt"
  grep -a '|' $R/mid-${pt/:/-}.txt | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//'
done
tar czf $OUT/r31-masks1.tgz -C $R .
