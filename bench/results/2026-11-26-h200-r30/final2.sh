set -uo pipefail
# r30 call E (d77a1e8): Gallatin side by side (single, mixed, scaling at 16, 64, 512, 8192 B)
# with the floors; b11e650 (.devbin/base) and d77a1e8 single and mixed in turn.
R=/tmp/r30-final2; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
peers=$(scripts/peers-dir.sh)
for cmd in single mixed; do timeout 90 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"; done
timeout 240 .devbin/veballoc-bench scaling --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1 || echo "exit $? scaling"
for v in base new; do
  if [ $v = base ]; then b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/ab-$v > $R/ab-$v-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
done
for f in $R/peers-*.txt $R/ab-*-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-14s %s | %s\n", $1, t, $2, $NF }'
done | sort -s -k1,1V
grep -a 'vs a' -A200 $R/scaling.txt | grep -a '|' | tr -d '\r' | sed 's/.*\.\.\. *//' | head -100
tar czf $OUT/r30-final2.tgz -C $R .
