# r48 call g (H100): tb = the bundle (a format takes back the unused booted segment right
# after its group's), prev = 67a59f66 (call e's tree): frag one round, four rounds in turn at
# 32..256 B and 4 KiB; speed in turn, two rounds; the GPU suites on the bundle.
R=/tmp/r48-g; source scripts/device-prelude.sh
cp .devbin/veballoc.ptx .devbin/var/tb.ptx
warm prev tb
for r in 1 2 3 4; do for v in prev tb; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B frag --rounds 1 --iters 1 --sizes 32,48,64,128,256,4096 --allocators veballoc --out $R/frag-$v-$r > $R/frag-$v-$r.txt 2>&1; echo "frag $v $r rc=$?"
  grep -a "x," $R/frag-$v-$r.txt | sed 's/.*\] \.\.\. *//' | tr -d '\r' | awk -F'|' '{print $1 $2}' | tr -s ' ' | tr '\n' ';'; echo
done; done
pack
for r in 1 2; do for v in prev tb; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,32,48,64,128,256,1024,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,128,256,512,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 200 .devbin/tests/gpu --ignored --test-threads=1 --nocapture > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(date +%T)"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$? $(date +%T)"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 gpu_ > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$? $(date +%T)"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -20
for live in 0.5 0.7; do timeout 60 $B churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live rc=$?"; grep -a "churn:" $R/churn-$live.txt | tail -1; done
pack; echo "done $(date +%T)"
