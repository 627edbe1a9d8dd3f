set -uo pipefail
# r43 call n: a smoke run of the harness after the review's refactor (HostSizes: one draw of
# the threads' sizes for the sizes buffer and range / live; one table format for packed and
# collective), d0902f49 and the next commit: single, mixed, floors, packed, collective and frag.
R=/tmp/r43-n; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1; echo "jit done $(date +%T)"
timeout 60 $B single --allocators veballoc,floor --sizes 16,512 --out $R/s > $R/single.txt 2>&1; echo "single rc=$?"
timeout 60 $B mixed --allocators veballoc,floor --sizes 64,512 --out $R/m > $R/mixed.txt 2>&1; echo "mixed rc=$?"
timeout 60 $B packed --allocators veballoc --sizes 64,512 --out $R/p > $R/packed.txt 2>&1; echo "packed rc=$?"
timeout 60 $B collective --allocators veballoc --sizes 64 --out $R/c > $R/collective.txt 2>&1; echo "collective rc=$?"
timeout 100 $B frag --rounds 1 --allocators veballoc --sizes 64 --out $R/f > $R/frag.txt 2>&1; echo "frag rc=$?"
find $R \( -name "*.svg" -o -name "*.json" \) -delete
tar czf $OUT/r43-n.tgz -C /tmp r43-n
echo "done $(date +%T)"
