set -uo pipefail
# r31 call D: mask classes' mallocs out of line (malloc_mask_slice; the small classes' loop has
# no partial take): base (6eb3f4c's code), new, nocheck (call C's PTX without any partial take),
# three rounds in turn, single and mixed; then every GPU test and churn at 70% on new.
R=/tmp/r31-split; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for round in 1 2 3; do
  for v in base new nocheck; do
    b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx
    [ $v = base ] && { b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; }
    [ $v = nocheck ] && p=.devbin/exp/nocheck.ptx
    for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/$v-$round > $R/$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
  done
done
for f in $R/*-*-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-18s %s\n", $1, t, $2 }'
done | sort -s -k1,1V | awk '{k=$1" "substr($2,1,index($2,"-")-1); a[k]=a[k]" "$3; f[k]=f[k]" "$4} END {for (k in a) print k, "alloc", a[k], "free", f[k]}' | sort -k1,1V -k2
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 170 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -20
timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live 0.7 --out $R/churn-0.7 > $R/churn-0.7.txt 2>&1; echo "churn 0.7: $(grep -a 'null' $R/churn-0.7.txt | tail -2 | head -1)"
tar czf $OUT/r31-split.tgz -C $R .
