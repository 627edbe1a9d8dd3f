set -uo pipefail
# r46 call h: g/'s vE left 16 B as slow as today's tree, but its loop over 1..=WARP_ROUNDS
# (RangeInclusive) compiled unlike 96d39af9's; vE3 = the same rule (a lane on its last round
# matches under LEAVING_KEY, then leaves) over 0..WARP_ROUNDS: the SASS's hot part has 23
# BMOV like 96d39af9's form (today's tree 39). Speed in turn against cv (the tree at
# c000e623), four rounds; then the GPU suites on vE3 (VEBALLOC_PTX_FILE; the checks PTX is
# c000e623's, for the double-free test only).
R=/tmp/r46-h; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/*.ptx | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r46-h.tgz -C /tmp r46-h; }
V="cv vE3"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > $R/jit-checks.txt 2>&1 &
wait; echo "jit done $(date +%T)"
for r in 1 2 3 4; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,32,64,256,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,256,512,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx VEBALLOC_PTX_FILE=$PWD/.devbin/var/vE3.ptx
timeout 200 .devbin/tests/gpu --ignored --test-threads=1 --nocapture > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(date +%T)"
for t in gpu_correctness; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$? $(date +%T)"; done
grep -ah 'test result\|FAILED\|panicked\|PTX' $R/tests/*.txt | sort | uniq -c | tail -12
pack; echo "done $(date +%T)"
