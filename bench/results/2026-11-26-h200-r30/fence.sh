set -uo pipefail
# r30 call J: what sm_90 SASS the release forms compile to (ptxas + cuobjdump on the device).
cd bench/results/2026-11-26-h200-r30/fence
mkdir -p $OUT/fence
for f in ld_acquire.ptx fence_acquire.ptx; do ptxas -arch=sm_90 $f -o /tmp/${f%.ptx}.cubin && cuobjdump -sass /tmp/${f%.ptx}.cubin | grep -E "MEMBAR|ERRBAR|ATOM|RED|FENCE|CCTL|STG" > $OUT/fence/${f%.ptx}.sass.txt; echo "== $f"; cat $OUT/fence/${f%.ptx}.sass.txt; done
