set -uo pipefail
# r30 call C: as call B (free.sh) after the install's copy loop stopped reloading the segment
# count per store: new (uncommitted tree on b11e650) against b11e650 (.devbin/base), single and
# mixed at 2^20 threads, two rounds in turn; scaling at 512 and 4096 B.
R=/tmp/r30-free2; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for round in 1 2; do
  for v in base new; do
    if [ $v = base ]; then b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
    for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 90 $b $cmd --allocators veballoc --iters 5 --out $R/ab-$v-$round > $R/ab-$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
  done
done
for f in $R/ab-*-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-16s %s\n", $1, t, $2 }'
done | sort -s -k1,1V
tar czf $OUT/r30-free2.tgz -C $R .
