set -uo pipefail
# r30 call B: free with the kind copies and no header loads (uncommitted tree on top of
# b11e650) against b11e650 (.devbin/base), single and mixed sizes at 2^20 threads, two rounds
# in turn; Gallatin side by side; vb_free under ncu at 512 B and 4 KiB; the GPU tests.
R=/tmp/r30-free; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 150 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host gpu_multi; do timeout 90 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt
for round in 1 2; do
  for v in base new; do
    if [ $v = base ]; then b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
    for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 90 $b $cmd --allocators veballoc --iters 5 --out $R/ab-$v-$round > $R/ab-$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
  done
done
peers=$(scripts/peers-dir.sh)
for cmd in single mixed; do timeout 90 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"; done
for s in 512 4096; do
  timeout 120 ncu --kernel-name vb_free --launch-skip 1 --launch-count 1 --set full -o $R/vb-$s .devbin/veballoc-bench single --sizes $s --iters 2 --allocators veballoc --out /tmp/nvb$s > $R/ncu-run-$s.txt 2>&1; echo "ncu $s rc=$?"
  ncu -i $R/vb-$s.ncu-rep --page details > $R/vb-$s-details.txt 2>&1
  ncu -i $R/vb-$s.ncu-rep --page source --csv --print-source sass > $R/vb-$s-sass.csv 2>&1
  rm -f $R/vb-$s.ncu-rep
  grep -E '^\s+(Duration|Executed Instructions  |Achieved Occupancy|Warp Cycles Per Issued Instruction|Registers Per Thread)' $R/vb-$s-details.txt
done
for f in $R/peers-*.txt $R/ab-*-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-16s %s | %s\n", $1, t, $2, $NF }'
done | sort -s -k1,1V
tar czf $OUT/r30-free.tgz -C $R .
