# r36 call 3: the tree claims inlined into claim_blocks (inl.ptx, feature exp-inline-claim)
# against 27b546c (g24.ptx): small launches (scaling) and 1M-thread speed, in turn.
set -u
R=/tmp/r36-c3; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt; date -u +%FT%TZ >> $R/device.txt
for v in g24 inl; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2; do for v in g24 inl; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,64,512,4096 --out /tmp/s > $R/single-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B mixed --allocators veballoc --sizes 64,4096 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads 1 --iters 9 --sizes 64,512,8192 --out /tmp/s1 > $R/one-$v-$r.txt 2>&1
done; done
echo "speed done $(date +%T)"
for v in g24 inl; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 150 $B scaling --iters 3 --allocators veballoc --out /tmp/sc-$v > $R/scaling-$v.txt 2>&1; done
echo "scaling done $(date +%T)"
cd /tmp && tar czf $OUT/r36-c3.tgz r36-c3
