set -uo pipefail
# r31 call J: runs of one block for the classes of 4096 slices a block (RUN_SLICES 4096, PTX
# only: .devbin/exp/run1.ptx) against 2e572a9 (.devbin/veballoc.ptx), two rounds in turn:
# frag at 16..64 B and mixed, single-size allocation.
R=/tmp/r31-run1; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for round in 1 2; do
  for v in final run1; do
    p=.devbin/veballoc.ptx; [ $v = run1 ] && p=.devbin/exp/run1.ptx
    VEBALLOC_PTX_FILE=$PWD/$p timeout 90 .devbin/veballoc-bench frag --sizes 16,32,64 --allocators veballoc --out $R/frag-$v-$round > $R/frag-$v-$round.txt 2>&1 || echo "exit $? $v frag"
    echo "$v $round frag: $(grep -a '|' $R/frag-$v-$round.txt | grep -a 'x,' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{printf "%s:%s ", $1, $2}' | tr -s ' ')"
    VEBALLOC_PTX_FILE=$PWD/$p timeout 60 .devbin/veballoc-bench single --sizes 16,32,64,128,256 --allocators veballoc --iters 5 --out $R/single-$v-$round > $R/single-$v-$round.txt 2>&1 || echo "exit $? $v single"
    VEBALLOC_PTX_FILE=$PWD/$p timeout 60 .devbin/veballoc-bench mixed --sizes 64,128,256 --allocators veballoc --iters 5 --out $R/mixed-$v-$round > $R/mixed-$v-$round.txt 2>&1 || echo "exit $? $v mixed"
    echo "$v $round alloc/free: $(grep -a '|' $R/single-$v-$round.txt $R/mixed-$v-$round.txt | grep -av 'size\|GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{printf "%s:%s ", $1, $2}' | tr -s ' ')"
  done
done
tar czf $OUT/r31-run1.tgz -C $R .
