# r37 call b: the booted segment's take-back inside a burst (exp-notb: none) at 2^13..2^17
# threads, 64/512 B, against base and the 512 ns backoff cap, in turn; traces without it.
set -u
R=/tmp/r37-b; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(base exp-bk512 exp-notb nb512)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt; date -u +%FT%TZ >> $R/device.txt
for v in ${V[@]} nbtr; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for n in 16384 65536; do VEBALLOC_PTX_FILE=.devbin/var/nbtr.ptx timeout 60 $B single --threads $n --sizes 64,512 --iters 2 --trace --allocators veballoc --out /tmp/t > $R/trace-$n.txt 2>&1; done
for r in 1 2 3; do for v in ${V[@]}; do
  for n in 8192 16384 32768 65536 131072; do
    VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B single --allocators veballoc --threads $n --sizes 64,512 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
done; done
echo "ab done $(date +%T)"
cd /tmp && tar czf $OUT/r37-b.tgz r37-b
