set -uo pipefail
# r43 call f: the mixed-to-packed probe, third form: knobs as call e, plus VEBALLOC_PACK_RED=1 (rr:
# a packed credit of a warp that served any object ignores the add's result: a red) and
# VEBALLOC_PACK_UNIT32=1 (u: band 0 packs 32-byte units in 128 KiB blocks, half the installs;
# not the 16-byte rounding the issue asks for: an experiment on installs only).
R=/tmp/r43-f; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="head l512r l512rr l512rru l256rr"
for v in $V l512rrt l512rrut; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done
wait; echo "jit done $(date +%T)"
for r in 1 2; do for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
done; echo "packed round $r $(date +%T)"; tar czf $OUT/r43-f.tgz -C /tmp r43-f; done
for r in 1 2; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 60 $B single --allocators veballoc --sizes 16,32,64,128,256,512,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,256,512,4096 --out $R/u-$v-$r > $R/mixed64k-$v-$r.txt 2>&1 || echo "exit $? m64k $v $r"
done; unset VEBALLOC_PTX_FILE; echo "speed round $r $(date +%T)"; tar czf $OUT/r43-f.tgz -C /tmp r43-f; done
for v in l512rrt l512rrut; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B mixed --allocators veballoc --sizes 64,256,512 --iters 2 --trace --out $R/tm-$v > $R/trace-mixed-$v.txt 2>&1; echo "trace $v rc=$?"
done
tar czf $OUT/r43-f.tgz -C /tmp r43-f
echo "done $(date +%T)"
