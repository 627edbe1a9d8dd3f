set -uo pipefail
# r43 call c (c4612837's device code; the harness's packed/collective now print range / live
# per iteration, every iteration a fresh heap): how malloc_packed compares with per-class
# malloc in speed and range / live for mixed sizes, at 2^20 threads and at 65536; and the
# collectives at 16/64/512 B.
R=/tmp/r43-c; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
echo "jit done $(date +%T)"
for r in 1 2; do
  timeout 200 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,4096 --iters 5 --out $R/p-$r > $R/packed-$r.txt 2>&1; echo "packed $r rc=$? $(date +%T)"
  tar czf $OUT/r43-c.tgz -C /tmp r43-c
done
timeout 100 $B packed --allocators veballoc --threads 65536 --sizes 64,512,4096 --iters 5 --out $R/p64k > $R/packed-64k.txt 2>&1; echo "packed64k rc=$?"
timeout 100 $B collective --allocators veballoc --sizes 16,64,512 --iters 5 --out $R/coll > $R/collective.txt 2>&1; echo "coll rc=$?"
tar czf $OUT/r43-c.tgz -C /tmp r43-c
echo "done $(date +%T)"
