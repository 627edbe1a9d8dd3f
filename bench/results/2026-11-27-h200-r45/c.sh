set -uo pipefail
# r45 call c: the tree with both fixes (`new`: malloc_slice_in's first round peeled, malloc_warp's
# rounds on a mask that only shrinks) against HEAD's device code with the new vb_churn_drift kernel
# (`head-d2`): the drift tests (malloc_warp's on head too), the GPU suites on new (the checks PTX
# for the double-free test), then single and mixed at 2^20 threads, new and head-d2 in turn.
R=/tmp/r45-c; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
cp .devbin/veballoc.ptx .devbin/var/new.ptx
md5sum .devbin/var/*.ptx .devbin/*.ptx | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r45-c.tgz -C /tmp r45-c; }
for v in new head-d2; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > $R/jit-checks.txt 2>&1 &
wait; echo "jit done $(date +%T)"
VEBALLOC_PTX_FILE=$PWD/.devbin/var/new.ptx timeout 90 .devbin/tests/gpu --ignored --test-threads=1 --nocapture drifting > $R/tests/drift-new.txt 2>&1; echo "drift new rc=$? $(date +%T)"
grep -ah "^test \|seed\|panicked" $R/tests/drift-new.txt | head
VEBALLOC_PTX_FILE=$PWD/.devbin/var/head-d2.ptx timeout 60 .devbin/tests/gpu --ignored --test-threads=1 --nocapture gpu_malloc_warp_with > $R/tests/drift-warp-head.txt 2>&1; echo "drift warp head rc=$? $(date +%T)"
grep -ah "^test \|seed\|panicked\|left\|right" $R/tests/drift-warp-head.txt | head
pack
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 170 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(date +%T)"
for t in gpu_correctness gpu_host; do timeout 90 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$? $(date +%T)"; done
unset VEBALLOC_CHECKS_PTX_FILE
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -12
pack
for v in new head-d2; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,64,256,1024,4096 --out $R/s-$v-1 > $R/single-$v-1.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,256,512,4096 --out $R/m-$v-1 > $R/mixed-$v-1.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE; echo "$v speed $(date +%T)"; pack
done
echo "done $(date +%T)"
