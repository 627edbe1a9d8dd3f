# r37 call c: the booted segment's take-back at format time (fmt.ptx; fmt512: with the 512 ns
# install-wait cap) against base and no take-back (exp-notb), in turn: frag (one round),
# 1M-thread speed, small launches.
set -u
R=/tmp/r37-c; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(base fmt fmt512)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt; date -u +%FT%TZ >> $R/device.txt
for v in ${V[@]} exp-notb; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2; do for v in base fmt exp-notb; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 90 $B frag --rounds 1 --allocators veballoc --out /tmp/f > $R/frag-$v-$r.txt 2>&1
done; done
echo "frag done $(date +%T)"
for r in 1 2; do for v in ${V[@]}; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,32,64,128,256,512,1024,4096 --out /tmp/s > $R/big-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
  for n in 64 8192 16384 65536; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 64,512,8192 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
done; done
echo "ab done $(date +%T)"
cd /tmp && tar czf $OUT/r37-c.tgz r37-c
