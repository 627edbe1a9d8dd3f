set -uo pipefail
# r43 call d: the mixed-to-packed probe (VEBALLOC_PACK_MIXED_MAX=M: a warp's lanes of at most
# M bytes that want more than one class among them take malloc_packed's runs). Variants pmM
# (pm0: off), one PTX build each of one tree, in turn, one process per point.
R=/tmp/r43-d; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="pm0 pm64 pm128 pm256 pm512"
for v in $V pm0t pm256t; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done
wait; echo "jit done $(date +%T)"
for r in 1 2; do for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
done; echo "packed round $r $(date +%T)"; tar czf $OUT/r43-d.tgz -C /tmp r43-d; done
for r in 1 2; do for v in pm0 pm256 pm512; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 60 $B single --allocators veballoc --sizes 16,32,64,128,256,512,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,256,512,4096 --out $R/u-$v-$r > $R/mixed64k-$v-$r.txt 2>&1 || echo "exit $? m64k $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 4096 --sizes 64,256,512,4096 --out $R/t-$v-$r > $R/mixed4k-$v-$r.txt 2>&1 || echo "exit $? m4k $v $r"
done; unset VEBALLOC_PTX_FILE; echo "speed round $r $(date +%T)"; tar czf $OUT/r43-d.tgz -C /tmp r43-d; done
for v in pm0t pm256t; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B mixed --allocators veballoc --sizes 64,256 --iters 2 --trace --out $R/tm-$v > $R/trace-mixed-$v.txt 2>&1; echo "trace $v rc=$?"
done
for v in pm0 pm256; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B frag --rounds 1 --frag-map --allocators veballoc --sizes 16,24,64,128,4096 --out $R/f-$v > $R/frag-$v.txt 2>&1 || echo "exit $? frag $v"
done
tar czf $OUT/r43-d.tgz -C /tmp r43-d
for v in pm0 pm256; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 150 $B churn --allocators veballoc --churn-rounds 10 --churn-live 0.7 --out $R/c-$v > $R/churn-$v.txt 2>&1 || echo "exit $? churn $v"
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 150 $B util --allocators veballoc --sizes 100 --util-ranges 16-4096 --out $R/ut-$v > $R/util-$v.txt 2>&1 || echo "exit $? util $v"
  echo "churn/util $v $(date +%T)"; tar czf $OUT/r43-d.tgz -C /tmp r43-d
done
echo "done $(date +%T)"
