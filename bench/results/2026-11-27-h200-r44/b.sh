set -uo pipefail
# r44 call b: the mixed-warp routing as landed (working tree after 3c963bb8: malloc sends a
# mixed warp's requests up to 512 B to malloc_packed's runs; packed objects' bounds in a bitmap
# for usable_size/realloc; the held credit a red; the run search's fix): GPU tests (checks PTX
# for the tests that need it), then against head (e2bbd1ac's PTX) in turn, two rounds:
# packed (malloc and malloc_packed at mixed ranges, with range / live), single sizes, mixed at
# 4096 / 65536 threads; then frag (one round), churn 50/70%, util of the new build.
R=/tmp/r44-b; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="head new"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > $R/jit-checks.txt 2>&1 &
wait; echo "jit done $(date +%T)"; grep -il "error\|fail" $R/jit-*.txt || true
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 200 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(date +%T)"
for t in gpu_correctness gpu_host gpu_multi; do timeout 120 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$? $(date +%T)"; done
unset VEBALLOC_CHECKS_PTX_FILE
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -12
tar czf $OUT/r44-b.tgz -C /tmp r44-b
for r in 1 2; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,2048,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
  timeout 60 $B single --allocators veballoc --sizes 16,32,64,128,256,512,1024,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  for t in 4096 65536; do timeout 60 $B mixed --allocators veballoc --threads $t --sizes 64,256,512,4096 --out $R/u$t-$v-$r > $R/mixed$t-$v-$r.txt 2>&1 || echo "exit $? m$t $v $r"; done
  unset VEBALLOC_PTX_FILE
done; echo "speed round $r $(date +%T)"; tar czf $OUT/r44-b.tgz -C /tmp r44-b; done
export VEBALLOC_PTX_FILE=.devbin/var/new.ptx
timeout 120 $B frag --rounds 1 --allocators veballoc --out $R/frag > $R/frag-new.txt 2>&1; echo "frag rc=$? $(date +%T)"
tar czf $OUT/r44-b.tgz -C /tmp r44-b
for live in 0.5 0.7; do timeout 60 $B churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live rc=$? $(date +%T)"; done
tar czf $OUT/r44-b.tgz -C /tmp r44-b
timeout 150 $B util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$? $(date +%T)"
rm -rf $R/*/*.svg; tar czf $OUT/r44-b.tgz -C /tmp r44-b
echo "done $(date +%T)"
