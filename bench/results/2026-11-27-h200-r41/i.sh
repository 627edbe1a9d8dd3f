set -uo pipefail
# r41 call i (probe): capped sharing for mixed warps (S 3 or 5, M 3) with longer runs on shared
# slots (slice::SHARED_RUN: a shared slot's runs may double up to R blocks): variants
# (S, M, R) c3 (3,3,1), r3 (3,3,4), r3b (3,3,8), r5 (5,3,8), against HEAD's PTX (head.ptx,
# 615937b3). Frag two rounds (maps in the first), then two rounds in turn of 2^20 single /
# mixed speed and mixed at 2^16.
R=/tmp/r41-i; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="head c3 r3 r3b r5"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2; do for v in $V; do
  M=""; [ $r = 1 ] && M="--frag-map"
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B frag --rounds 1 $M --allocators veballoc --sizes 16,24,32,48,64,128,256,1024,4096 --out $R/f-$v-$r > $R/frag-$v-$r.txt 2>&1 || echo "exit $? frag $v"
done; done
echo "frag done $(date +%T)"; tar czf $OUT/r41-i.tgz -C $R .
for r in 1 2; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 60 $B single --allocators veballoc --sizes 16,64,128,256,512,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 60 $B mixed --allocators veballoc --sizes 64,128,256,512,2048,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,512,4096 --out $R/u-$v-$r > $R/mixed64k-$v-$r.txt 2>&1 || echo "exit $? m64k $v $r"
done; echo "round $r $(date +%T)"; tar czf $OUT/r41-i.tgz -C $R .; done
unset VEBALLOC_PTX_FILE
echo "done $(date +%T)"
