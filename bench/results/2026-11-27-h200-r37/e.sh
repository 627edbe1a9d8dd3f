# r37 call e: a slot's first run holds >= 512 slices (first.ptx, feature exp-first: 8192 B
# 4 blocks, 4096 B 2) against fdb9276 (head.ptx), in turn: small launches of 3000-8192 B,
# 1M x 4096 B, frag of the sizes it changes.
set -u
R=/tmp/r37-e; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(head first)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt; date -u +%FT%TZ >> $R/device.txt
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2 3; do for v in ${V[@]}; do
  P=.devbin/var/$v.ptx
  for n in 1 64 256 1024 2048 4096 8192 16384; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 3000,4096,8192 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 2048,3000,4096 --out /tmp/s > $R/big-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads 65536 --sizes 4097,6000,8192,10000 --out /tmp/s > $R/mid-$v-$r.txt 2>&1
done; done
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 90 $B frag --rounds 1 --allocators veballoc --sizes 2048,3000,4096,4097,6000,10000 --out /tmp/f > $R/frag-$v.txt 2>&1; done
echo "ab done $(date +%T)"
cd /tmp && tar czf $OUT/r37-e.tgz r37-e
