set -uo pipefail
# r43 call j: the packed-routing probe l512rr with a longer (or shorter) longest sleep for the
# packed rows' waiters (VEBALLOC_PACK_POLL_NS: 2048, 8192, 128 ns; every other row keeps 512 ns
# where slots are per multiprocessor), against head and l512rr, in turn, two rounds.
R=/tmp/r43-j; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="head l512rr l512rrp2 l512rrp8 l512rrp128"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done
wait; echo "jit done $(date +%T)"
for r in 1 2; do for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,2048,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
done; echo "packed round $r $(date +%T)"; tar czf $OUT/r43-j.tgz -C /tmp r43-j; done
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,256,512,4096 --out $R/u-$v-1 > $R/mixed64k-$v-1.txt 2>&1 || echo "exit $? m64k $v"
done
tar czf $OUT/r43-j.tgz -C /tmp r43-j
echo "done $(date +%T)"
