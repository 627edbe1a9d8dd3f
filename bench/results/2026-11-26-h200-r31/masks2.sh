set -uo pipefail
# r31 call B (f7c92b2 against 6eb3f4c's code, .devbin/base): single and mixed, two rounds each
# in turn; then Gallatin side by side with the floors (single, mixed).
R=/tmp/r31-masks2; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for round in 1 2; do
  for v in base new; do
    if [ $v = base ]; then b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
    for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/ab-$v-$round > $R/ab-$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
  done
done
peers=$(scripts/peers-dir.sh)
for cmd in single mixed; do timeout 90 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"; done
for f in $R/ab-*-*.txt $R/peers-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-16s %s | %s\n", $1, t, $2, $NF }'
done | sort -s -k1,1V
tar czf $OUT/r31-masks2.tgz -C $R .
