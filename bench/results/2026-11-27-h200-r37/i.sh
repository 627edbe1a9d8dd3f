# r37 call i: the JIT register cap of veballoc's kernels (--maxreg 64/80/96 against the
# default 128), fdb9276, in turn: 1M-thread single and mixed, small launches.
set -u
R=/tmp/r37-i; mkdir -p $R
gunzip -f .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(128 64 80 96); export VEBALLOC_PTX_FILE=.devbin/var/head.ptx
for v in ${V[@]}; do timeout 280 $B single --maxreg $v --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2; do for v in ${V[@]}; do
  timeout 60 $B single --maxreg $v --allocators veballoc --sizes 16,32,64,128,256,512,1024,4096 --out /tmp/s > $R/big-$v-$r.txt 2>&1
  timeout 60 $B mixed --maxreg $v --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
  for n in 1024 16384 131072; do
    timeout 60 $B single --maxreg $v --allocators veballoc --threads $n --sizes 16,64,512,8192 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
done; done
echo "ab done $(date +%T)"
cd /tmp && tar czf $OUT/r37-i.tgz r37-i
