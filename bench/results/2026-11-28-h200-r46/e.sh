set -uo pipefail
# r46 call e: where free's time goes at 4 KiB (0.55x Gallatin's speed in d/, 16 B 1.87x):
# the trace counters (recycles) for single 16 B..4 KiB, and ncu of vb_free at 16 B and 4 KiB,
# on the tree as committed (cv, c000e623's kernels).
R=/tmp/r46-e; mkdir -p $R
gunzip -f .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r46-e.tgz -C /tmp r46-e; }
for v in cv cv-trace; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
wait; echo "jit done $(date +%T)"
VEBALLOC_PTX_FILE=.devbin/var/cv-trace.ptx timeout 60 $B single --allocators veballoc --sizes 16,256,1024,4096 --iters 2 --trace --out $R/ts > $R/trace-single.txt 2>&1; echo "trace rc=$? $(date +%T)"
pack
S=(--section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --section InstructionStats --section MemoryWorkloadAnalysis --metrics gpu__time_duration.sum --warp-sampling-interval 0)
for w in "4096 f4096" "16 f16" "1024 f1024"; do set -- $w
  VEBALLOC_PTX_FILE=.devbin/var/cv.ptx timeout 100 ncu --kernel-name vb_free --launch-skip 1 --launch-count 1 "${S[@]}" --export $R/ncu-$2 $B single --sizes $1 --iters 1 --allocators veballoc --out /tmp/n > $R/ncu-$2.txt 2>&1; echo "ncu $2 rc=$? $(date +%T)"
  ncu --import $R/ncu-$2.ncu-rep > $R/det-$2.txt 2>&1
  ncu --import $R/ncu-$2.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/src-$2.csv.gz
  rm -f $R/*.ncu-rep; pack
done
echo "done $(date +%T)"
