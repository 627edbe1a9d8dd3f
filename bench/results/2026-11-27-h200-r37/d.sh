# r37 call d: install waiters sleep at most 512 ns in rows of >= 64 slots (rc.ptx), and with
# the header's lines prefetched into L1 at each install (rcpf.ptx, feature exp-pf), against
# base (39ba120), in turn: 1M-thread speed (single, mixed) and small launches.
set -u
R=/tmp/r37-d; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(base rc rcpf)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt; date -u +%FT%TZ >> $R/device.txt
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2 3; do for v in ${V[@]}; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,24,32,48,64,128,256,512,1024,4096 --out /tmp/s > $R/big-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
  for n in 1 64 1024 8192 16384 65536 262144; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 16,64,512,8192 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
done; done
echo "ab done $(date +%T)"
cd /tmp && tar czf $OUT/r37-d.tgz r37-d
