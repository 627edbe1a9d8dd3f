set -uo pipefail
# r43 call e: the mixed-to-packed probe, second form. Knobs (one PTX build each of one tree):
# VEBALLOC_PACK_MIXED_MAX=M (lanes of at most M bytes of a mixed warp go packed),
# VEBALLOC_PACK_LATE=1 (decided after malloc's class match, no ballot first: l), else with a
# ballot and a match first (e), VEBALLOC_PACK_RELAXED=1 (the packed leader's credit of unused
# units is a relaxed add, not a release one: r). head = c4612837's PTX; pm0 = this tree, knobs off.
R=/tmp/r43-e; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="head pm0 e256 e256r l256 l256r l512r"
for v in $V l256rt; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done
wait; echo "jit done $(date +%T)"
for r in 1 2; do for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
done; echo "packed round $r $(date +%T)"; tar czf $OUT/r43-e.tgz -C /tmp r43-e; done
for r in 1 2; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 60 $B single --allocators veballoc --sizes 16,32,64,128,256,512,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,256,512,4096 --out $R/u-$v-$r > $R/mixed64k-$v-$r.txt 2>&1 || echo "exit $? m64k $v $r"
done; unset VEBALLOC_PTX_FILE; echo "speed round $r $(date +%T)"; tar czf $OUT/r43-e.tgz -C /tmp r43-e; done
VEBALLOC_PTX_FILE=.devbin/var/l256rt.ptx timeout 60 $B mixed --allocators veballoc --sizes 64,256 --iters 2 --trace --out $R/tm > $R/trace-mixed-l256rt.txt 2>&1; echo "trace rc=$?"
tar czf $OUT/r43-e.tgz -C /tmp r43-e
echo "done $(date +%T)"
