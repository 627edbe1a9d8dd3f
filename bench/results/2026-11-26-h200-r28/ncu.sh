set -uo pipefail
# r28: vb_malloc at 512 B under ncu, old (d1ac0b8: its harness and PTX) against new (05f087f),
# two launches each (the warm-up's alloc skipped): instructions, local memory, stalls.
R=/tmp/ncu; mkdir -p $R
S=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section SourceCounters --section InstructionStats)
for v in old new; do
  if [ $v = old ]; then b=.devbin/old/veballoc-bench; p=.devbin/old/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  for s in 512 1024; do
    VEBALLOC_PTX_FILE=$PWD/$p timeout 150 ncu --kernel-name vb_malloc --launch-skip 1 --launch-count 2 "${S[@]}" $b single --sizes $s --iters 2 --allocators veballoc --out /tmp/n$v$s > $R/ncu-$v-$s.txt 2>&1; echo "$v $s rc=$?"
  done
done
for f in $R/*.txt; do echo "== $(basename $f)"; grep -E '^\s+(Duration|Executed Instructions  |Achieved Occupancy|Warp Cycles Per Issued Instruction|Registers Per Thread|Local Memory Spilling Requests  )' $f; done
tar czf $OUT/ncu.tgz -C /tmp ncu
