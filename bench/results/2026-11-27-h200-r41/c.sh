set -uo pipefail
# r41 call c: frag maps (segment by segment, round 0) of the three mixed ranges with HEAD's
# PTX (head.ptx) and with mixed warps' groups on slots shared by 4 / 32 multiprocessors (s2,
# s5 of call b): where the range of mixed <=512 goes when light rows keep few current blocks.
R=/tmp/r41-c; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz 2>/dev/null
cp .devbin/veballoc.ptx .devbin/var/s2.ptx
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="head s2 s5"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done; wait
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B frag --rounds 1 --frag-map --allocators veballoc --sizes 16 --out $R/f-$v > $R/frag-$v.txt 2>&1 || echo "exit $? frag $v"
done
tar czf $OUT/r41-c.tgz -C $R .
echo "done $(date +%T)"
