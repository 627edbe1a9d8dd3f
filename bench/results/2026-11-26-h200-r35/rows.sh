# r35 call 7: fewer slots for the 24/32 B rows (group 1, 128 KiB blocks: one partly used block
# per slot was most of a 24 B burst's range, r34 map1/): a temporary host knob,
# VEBALLOC_EXP_ROW_CAP=<group mask>:<log2 slots>, on one binary and one PTX. base (128 slots),
# g1-64 (group 1 at 64), g1-32, g01-64 (groups 0 and 1 at 64). frag (one round) and speed in
# turn, twice.
set -u
O=$OUT/rows; mkdir -p $O
gunzip -f .devbin/*.gz
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
date -u +%FT%TZ >> $O/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1; echo "jit done $(date +%T)"
declare -A CAP=([base]="" [g1-64]="2:6" [g1-32]="2:5" [g01-64]="3:6")
for r in 1 2; do for v in base g1-64 g1-32 g01-64; do
  export VEBALLOC_EXP_ROW_CAP=${CAP[$v]}
  timeout 60 $B frag --rounds 1 --allocators veballoc --out /tmp/f > $O/frag-$v-$r.txt 2>&1
  timeout 40 $B single --allocators veballoc --sizes 16,24,32,64 --out /tmp/s > $O/single-$v-$r.txt 2>&1
  timeout 40 $B mixed --allocators veballoc --sizes 64,512 --out /tmp/m > $O/mixed-$v-$r.txt 2>&1
done; done
unset VEBALLOC_EXP_ROW_CAP
echo "done $(date +%T)"
cd $OUT && tar czf rows.tgz rows
