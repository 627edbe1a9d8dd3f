set -uo pipefail
# r32 call E: where a small launch's time goes with the boot on (f6ac363): the trace PTX at
# 16 B and 64 B, 2^13..2^17 threads (install counts and times, claim and tree time, waits).
R=/tmp/r32-trace; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for size in 16 64; do for l in 0 13 14 15 17; do
  VEBALLOC_PTX_FILE=$PWD/.devbin/var/trace.ptx timeout 60 .devbin/veballoc-bench single --sizes $size --threads $((1 << l)) --allocators veballoc --iters 2 --trace --out $R/t-$size-$l > $R/t-$size-$l.txt 2>&1 || echo "exit $? $size $l"
  timeout 60 .devbin/veballoc-bench single --sizes $size --threads $((1 << l)) --allocators veballoc --iters 5 --out $R/p-$size-$l > $R/p-$size-$l.txt 2>&1 || echo "exit $? plain $size $l"
  echo "== $size B 2^$l: plain $(grep -a '|' $R/p-$size-$l.txt | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{print $2}')"
  grep -av '^GPU' $R/t-$size-$l.txt | tr -d '\r' | grep -a -i 'install\|claim\|tree\|wait\|format\|sleep\|full' | tail -12
done; done
tar czf $OUT/r32-trace.tgz -C $R .
