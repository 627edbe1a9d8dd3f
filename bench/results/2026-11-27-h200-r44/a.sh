set -uo pipefail
# r44 call a: malloc_packed with per-lane bands (each request rounded to its own size's unit:
# 16 B up to 256 B, 64 up to 1 KiB, 256 up to 4 KiB; one take a band), its GPU tests, and the
# r43 routing probe on top of it (mixed warps' lanes up to 512 / 1024 / 4096 B to malloc_packed;
# PACK_LATE, RELAXED, RED), against HEAD's PTX (head, e2bbd1ac = c4612837's kernels), in
# turn, two rounds. `pl` is this tree with every probe knob off (the bundle's PTX).
R=/tmp/r44-a; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="head pl r512 r1024 r4096"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > /dev/null 2>&1 &
wait; echo "jit done $(date +%T)"; tail -n 3 $R/jit-*.txt | grep -i "error\|fail" || true
timeout 200 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$?"
for t in gpu_correctness gpu_host; do timeout 120 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
grep -ah 'test result\|FAILED\|panicked\|packed 1\.\.' $R/tests/*.txt | tail -12
tar czf $OUT/r44-a.tgz -C /tmp r44-a
for r in 1 2; do for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,2048,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
done; echo "packed round $r $(date +%T)"; tar czf $OUT/r44-a.tgz -C /tmp r44-a; done
for v in head r4096; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 60 $B single --allocators veballoc --sizes 16,64,256,512,4096 --out $R/s-$v-1 > $R/single-$v-1.txt 2>&1 || echo "exit $? single $v"
  timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,256,512,4096 --out $R/u-$v-1 > $R/mixed64k-$v-1.txt 2>&1 || echo "exit $? m64k $v"
  unset VEBALLOC_PTX_FILE
done
tar czf $OUT/r44-a.tgz -C /tmp r44-a
echo "done $(date +%T)"
