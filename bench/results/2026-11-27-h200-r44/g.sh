set -uo pipefail
# r44 call g: the review's fixes (fix: a routed request the packed rows cannot serve goes on
# to its class; a warp with any slice request above 512 B, a mask class's too, keeps the class
# path; the review's GPU churn test of usable sizes) against final (call e's) and head, in
# turn: GPU tests (default PTX, then gpu on the checks PTX), packed / single / mixed at 65536
# threads, two rounds; frag one round.
R=/tmp/r44-g; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/veballoc.ptx | tee $R/ptx-md5.txt
V="head final fix"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > $R/jit-checks.txt 2>&1 &
wait; echo "jit done $(date +%T)"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 240 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(date +%T)"
for t in gpu_correctness gpu_host; do timeout 120 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$? $(date +%T)"; done
VEBALLOC_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx timeout 240 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu-checks.txt 2>&1; echo "gpu on checks rc=$? $(date +%T)"
unset VEBALLOC_CHECKS_PTX_FILE
grep -ah 'test result\|FAILED\|panicked\|bad words' $R/tests/*.txt | tail -14
tar czf $OUT/r44-g.tgz -C /tmp r44-g
for r in 1 2; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
  timeout 60 $B single --allocators veballoc --sizes 16,64,256,1024,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,256,512,4096 --out $R/t65536-$v-$r > $R/mixed65536-$v-$r.txt 2>&1 || echo "exit $? m $v $r"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; rm -rf $R/*/*.svg; tar czf $OUT/r44-g.tgz -C /tmp r44-g; done
VEBALLOC_PTX_FILE=.devbin/var/fix.ptx timeout 120 $B frag --rounds 1 --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$? $(date +%T)"
rm -rf $R/*/*.svg; tar czf $OUT/r44-g.tgz -C /tmp r44-g
echo "done $(date +%T)"
