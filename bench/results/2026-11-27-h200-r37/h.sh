# r37 call h: install traces of 16/32/64 B at 2^18..2^20 threads (fdb9276 + trace).
set -u
R=/tmp/r37-h; mkdir -p $R
gunzip -f .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
VEBALLOC_PTX_FILE=.devbin/var/tr.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
for n in 262144 524288 1048576; do
  VEBALLOC_PTX_FILE=.devbin/var/tr.ptx timeout 60 $B single --threads $n --sizes 16,32,64 --iters 2 --trace --allocators veballoc --out /tmp/t > $R/trace-$n.txt 2>&1
  VEBALLOC_PTX_FILE=.devbin/var/head.ptx timeout 60 $B single --threads $n --sizes 16,32,64 --allocators veballoc,floor --out /tmp/t > $R/s-$n.txt 2>&1
done
cd /tmp && tar czf $OUT/r37-h.tgz r37-h
