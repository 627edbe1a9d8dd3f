set -uo pipefail
# r31 call H (ca267f6, the review fixes): every GPU test, churn at 50% and 70%, util, frag,
# mid sizes with Gallatin; allocation A/B against b784c40 (.devbin/band) and aa73b1c
# (.devbin/masks), two rounds in turn, single and mixed.
R=/tmp/r31-review; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 170 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -20
for live in 0.5 0.7; do timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live: $(grep -a 'null' $R/churn-$live.txt | tail -2 | head -1)"; done
timeout 150 .devbin/veballoc-bench util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
grep -a -o '[0-9-]* |  *[0-9]*  *[0-9]* |  *[0-9]*  *[0-9.]*% |  *[0-9.]*%.*' $R/util.txt | tr -s ' '
timeout 90 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -24
peers=$(scripts/peers-dir.sh)
for pt in 8192:262144 40000:65536; do
  timeout 60 .devbin/veballoc-bench single --sizes ${pt%:*} --threads ${pt#*:} --allocators veballoc --iters 5 --peers $peers --peers-list gallatin --out $R/mid > $R/mid-${pt/:/-}.txt 2>&1 || echo "exit $? $pt"
  grep -a '|' $R/mid-${pt/:/-}.txt | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//'
done
for round in 1 2; do
  for v in masks band final; do
    b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx
    [ $v != final ] && { b=.devbin/$v/veballoc-bench; p=.devbin/$v/veballoc.ptx; }
    for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/$v-$round > $R/$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
  done
done
for f in $R/*-[12]-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-18s %s\n", $1, t, $2 }'
done | sort -s -k1,1V | awk '{k=$1" "substr($2,1,index($2,"-")-1); a[k]=a[k]" "$3; f[k]=f[k]" "$4} END {for (k in a) print k, "alloc", a[k], "free", f[k]}' | sort -k1,1V -k2
tar czf $OUT/r31-review.tgz -C $R .
