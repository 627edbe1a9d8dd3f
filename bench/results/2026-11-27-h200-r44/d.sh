set -uo pipefail
# r44 call d: the bound marking gathered per warp (new2: one write a bitmap word a warp, a store
# where the take holds the whole word; call b's `new` did two RMWs a lane), its GPU tests (the
# checks PTX for the tests that need it; gpu now reads every pointer's usable_size back), then
# head / new / new2 / nomark in turn, three rounds: packed (2^20 mixed), single sizes, mixed at
# 4096 / 65536 threads.
R=/tmp/r44-d; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/veballoc.ptx | tee $R/ptx-md5.txt
V="head new new2 nomark"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > $R/jit-checks.txt 2>&1 &
wait; echo "jit done $(date +%T)"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 200 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(date +%T)"
for t in gpu_correctness gpu_host; do timeout 120 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$? $(date +%T)"; done
# The GPU tests once more on the checks PTX (the validator then checks every packed bound).
VEBALLOC_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx timeout 200 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu-checks.txt 2>&1; echo "gpu on checks rc=$? $(date +%T)"
unset VEBALLOC_CHECKS_PTX_FILE
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -12
tar czf $OUT/r44-d.tgz -C /tmp r44-d
for r in 1 2 3; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,2048,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
  [ $r -le 2 ] && { timeout 60 $B single --allocators veballoc --sizes 16,32,64,128,256,512,1024,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"; }
  [ $r -le 2 ] && for t in 4096 65536; do timeout 60 $B mixed --allocators veballoc --threads $t --sizes 64,256,512,4096 --out $R/t$t-$v-$r > $R/mixed$t-$v-$r.txt 2>&1 || echo "exit $? m$t $v $r"; done
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; rm -rf $R/*/*.svg; tar czf $OUT/r44-d.tgz -C /tmp r44-d; done
echo "done $(date +%T)"
