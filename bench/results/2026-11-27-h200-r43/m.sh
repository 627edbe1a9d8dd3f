set -uo pipefail
# r43 call m: the routing probe with 16-byte units for every routed warp up to 16 KiB
# (PACK_UNITS_PER_WARP=1024: band 0 covers every ≤512 warp, so no routed request rounds up by
# more than 15 bytes, as issue 9 asks) against the same tree with 512 (l512rrchk: call f's
# l512rr knobs on the saved diff's last form), call f's l512rr build, and head; in turn, two rounds.
R=/tmp/r43-m; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="head l512rr l512rrchk l512rru1k"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done
wait; echo "jit done $(date +%T)"
for r in 1 2; do for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B packed --allocators veballoc --sizes 64,128,256,512,1024,2048,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
done; echo "packed round $r $(date +%T)"; tar czf $OUT/r43-m.tgz -C /tmp r43-m; done
for v in head l512rru1k; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,256,512,4096 --out $R/u-$v-1 > $R/mixed64k-$v-1.txt 2>&1 || echo "exit $? m64k $v"
done
tar czf $OUT/r43-m.tgz -C /tmp r43-m
echo "done $(date +%T)"
