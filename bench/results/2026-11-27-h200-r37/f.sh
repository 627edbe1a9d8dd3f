# r37 call f: install traces of 8192 B small launches, fdb9276 (headtr) and first runs of >= 512
# slices (firsttr).
set -u
R=/tmp/r37-f; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(headtr firsttr)
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
for v in ${V[@]}; do for n in 256 1024 2048 4096; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B single --threads $n --sizes 4096,8192 --iters 2 --trace --allocators veballoc --out /tmp/t > $R/trace-$v-$n.txt 2>&1
done; done
cd /tmp && tar czf $OUT/r37-f.tgz r37-f
