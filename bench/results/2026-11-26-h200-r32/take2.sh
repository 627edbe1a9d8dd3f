set -uo pipefail
# r32 call C: the take-back after a claim that leaves a quarter of its segment (install_next,
# uncommitted on ce84ff9; .devbin). Single and mixed A/B, two rounds in turn: base (2259ad0's
# kernels, own binary), B3 (no take-back call, boot off), D2 (this code) with VEBALLOC_BOOT=0,
# D2 with the boot on; frag and scaling (Gallatin, floors) with the boot on; every GPU test;
# churn at 70%.
R=/tmp/r32-take2; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in gpu_host gpu_correctness; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
for round in 1 2; do
  for v in base B3 off on; do
    b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; e=1
    [ $v = base ] && { b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; e=0; }
    [ $v = B3 ] && { p=.devbin/var/B3.ptx; e=0; }
    [ $v = off ] && e=0
    for cmd in single mixed; do VEBALLOC_BOOT=$e VEBALLOC_PTX_FILE=$PWD/$p timeout 90 $b $cmd --allocators veballoc --iters 5 --out $R/$v-$round > $R/$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
  done
done
for f in $R/*-[12]-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-18s %s\n", $1, t, $2 }'
done | sort -s -k1,1V | awk '{split($2,a,"-"); k=$1" "a[1]; al[k]=al[k]" "$3; fr[k]=fr[k]" "$4} END {for (k in al) print k, "alloc", al[k], "free", fr[k]}' | sort -k1,1V -k2
timeout 100 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -21 | awk -F'|' '{printf "%s:%s  ", $1, $2} END {print ""}' | tr -s ' '
peers=$(scripts/peers-dir.sh)
timeout 200 .devbin/veballoc-bench scaling --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$?"
timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live 0.7 --out $R/churn-0.7 > $R/churn-0.7.txt 2>&1; echo "churn 0.7: $(grep -a 'null' $R/churn-0.7.txt | tail -2 | head -1)"
s=$(date +%s); timeout 200 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
echo "gpu_multi: not carried in this call"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -20
tar czf $OUT/r32-take2.tgz -C $R .
