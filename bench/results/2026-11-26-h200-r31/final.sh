set -uo pipefail
# r31 call K (26a0173, the final kernel code): every GPU test, churn at 50% and 70%, frag,
# util; A/B against 2e572a9 (.devbin/prev), two rounds, single and mixed; Gallatin side by
# side with the floors (single, mixed, scaling).
R=/tmp/r31-final; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 200 .devbin/tests/gpu --ignored --test-threads=1 --nocapture > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked\|^spread' $R/tests/*.txt | tail -20
for live in 0.5 0.7; do timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live: $(grep -a 'null' $R/churn-$live.txt | tail -2 | head -1)"; done
timeout 90 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -22
timeout 150 .devbin/veballoc-bench util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
for round in 1 2; do
  for v in prev final; do
    b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx
    [ $v = prev ] && { b=.devbin/prev/veballoc-bench; p=.devbin/prev/veballoc.ptx; }
    for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/$v-$round > $R/$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
  done
done
for f in $R/*-[12]-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-18s %s\n", $1, t, $2 }'
done | sort -s -k1,1V | awk '{k=$1" "substr($2,1,index($2,"-")-1); a[k]=a[k]" "$3; f[k]=f[k]" "$4} END {for (k in a) print k, "alloc", a[k], "free", f[k]}' | sort -k1,1V -k2
peers=$(scripts/peers-dir.sh)
for cmd in single mixed; do timeout 90 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"; done
timeout 300 .devbin/veballoc-bench scaling --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1 || echo "exit $? scaling"
for f in $R/peers-*.txt; do grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{ printf "%-8s %s | %s\n", $1, $2, $NF }'; done
tar czf $OUT/r31-final.tgz -C $R .
