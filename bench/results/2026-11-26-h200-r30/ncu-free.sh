set -uo pipefail
# r30 call A: vb_free at 512 B and 4 KiB (HEAD b11e650) and Gallatin's d_free at the same sizes
# under ncu, the free after the warm-up: details and the per-SASS-instruction stall samples.
R=/tmp/r30-ncu; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
peers=$(scripts/peers-dir.sh); echo "peers=$peers"
for s in 512 4096; do
  timeout 120 ncu --kernel-name vb_free --launch-skip 1 --launch-count 1 --set full --import-source yes -o $R/vb-$s .devbin/veballoc-bench single --sizes $s --iters 2 --allocators veballoc --out /tmp/nvb$s > $R/run-vb-$s.txt 2>&1; echo "vb $s rc=$?"
  timeout 120 ncu --kernel-name d_free --launch-skip 1 --launch-count 1 --set full -o $R/ga-$s $peers/bin/peer_gallatin single 1048576 $s --iters 2 --warmup 1 > $R/run-ga-$s.txt 2>&1; echo "ga $s rc=$?"
done
for f in $R/*.ncu-rep; do
  b=${f%.ncu-rep}
  ncu -i $f --page details > $b-details.txt 2>&1
  ncu -i $f --page source --csv --print-source sass > $b-sass.csv 2>&1
done
for f in $R/*-details.txt; do echo "== $(basename $f)"; grep -E '^\s+(Duration|Executed Instructions  |Achieved Occupancy|Warp Cycles Per Issued Instruction|Registers Per Thread|Local Memory Spilling Requests  |L2 Hit Rate  |Memory Throughput)' $f; done
rm -f $R/*.ncu-rep
tar czf $OUT/r30-ncu.tgz -C $R .
