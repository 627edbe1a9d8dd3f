set -uo pipefail
# r43 call h: the packed-routing probe with the routed lanes' malloc_packed inlined
# (VEBALLOC_PACK_INLINE=1: no call, whose saved registers were call g's extra local stores and
# loads); knobs otherwise as call f's l512rr (late routing, relaxed and red credits): l512rri,
# l256rri, l1024rri; head and l512rr beside them, in turn; then ncu of l512rri at mixed ≤64.
R=/tmp/r43-h; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="head l512rr l512rri l256rri l1024rri"
for v in $V l512rrit; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done
wait; echo "jit done $(date +%T)"
for r in 1 2; do for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,2048,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
done; echo "packed round $r $(date +%T)"; tar czf $OUT/r43-h.tgz -C /tmp r43-h; done
for r in 1 2; do for v in head l512rri l256rri; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 60 $B single --allocators veballoc --sizes 16,24,32,48,64,128,256,512,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,256,512,4096 --out $R/u-$v-$r > $R/mixed64k-$v-$r.txt 2>&1 || echo "exit $? m64k $v $r"
done; unset VEBALLOC_PTX_FILE; echo "speed round $r $(date +%T)"; tar czf $OUT/r43-h.tgz -C /tmp r43-h; done
VEBALLOC_PTX_FILE=.devbin/var/l512rrit.ptx timeout 60 $B mixed --allocators veballoc --sizes 64,256,512 --iters 2 --trace --out $R/tm > $R/trace-mixed-l512rrit.txt 2>&1; echo "trace rc=$?"
S=(--section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --section InstructionStats --metrics gpu__time_duration.sum --warp-sampling-interval 0)
VEBALLOC_PTX_FILE=.devbin/var/l512rri.ptx timeout 150 ncu --kernel-name vb_malloc --launch-skip 1 --launch-count 1 "${S[@]}" --export $R/ncu-l512rri-m64 $B mixed --sizes 64 --iters 1 --allocators veballoc --out /tmp/n > $R/ncu-l512rri-m64.txt 2>&1; echo "ncu rc=$?"
ncu --import $R/ncu-l512rri-m64.ncu-rep > $R/det-l512rri-m64.txt 2>&1
ncu --import $R/ncu-l512rri-m64.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/src-l512rri-m64.csv.gz
rm -f $R/*.ncu-rep
tar czf $OUT/r43-h.tgz -C /tmp r43-h
echo "done $(date +%T)"
