set -uo pipefail
# r43 call i: the packed-routing probe with two band-0 packed slots a multiprocessor
# (VEBALLOC_PACK_SPLIT=1: warps by parity, so an install stalls half of them): l512rrs, l256rrs,
# against head, l512rr and l256rr (call f's knobs), in turn; frag with maps for head and l512rrs.
R=/tmp/r43-i; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="head l512rr l512rrs l256rr l256rrs"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done
wait; echo "jit done $(date +%T)"
for r in 1 2; do for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,2048,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
done; echo "packed round $r $(date +%T)"; tar czf $OUT/r43-i.tgz -C /tmp r43-i; done
for r in 1 2; do for v in head l512rr l512rrs; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 60 $B single --allocators veballoc --sizes 16,24,32,48,64,128,256,512,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,256,512,4096 --out $R/u-$v-$r > $R/mixed64k-$v-$r.txt 2>&1 || echo "exit $? m64k $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 4096 --sizes 64,256,512,4096 --out $R/t-$v-$r > $R/mixed4k-$v-$r.txt 2>&1 || echo "exit $? m4k $v $r"
done; unset VEBALLOC_PTX_FILE; echo "speed round $r $(date +%T)"; tar czf $OUT/r43-i.tgz -C /tmp r43-i; done
for v in head l512rr l512rrs; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B frag --rounds 1 --frag-map --allocators veballoc --sizes 16,24,32,48,64,100,128,256,512,1024,4096 --out $R/f-$v > $R/frag-$v.txt 2>&1 || echo "exit $? frag $v"
done
tar czf $OUT/r43-i.tgz -C /tmp r43-i
echo "done $(date +%T)"
