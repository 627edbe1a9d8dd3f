set -uo pipefail
# r46 call c: call b's packed slots did not help (claims got slower); call a's ncu showed ~46
# local loads and stores a warp on the 16 B path, and every 64-bit atomic with a shared-memory
# CAS loop beside it (generic addresses). Variants: g = HEAD with the atomics shim in the
# .global state space; gs = g plus take_in_row's waiting loop out of line (the bundle: the GPU
# tests run on it). Speed in turn, three rounds, 2^20 threads; ncu of gs at 16 B and mixed <=32.
R=/tmp/r46-c; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/*.ptx | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r46-c.tgz -C /tmp r46-c; }
V="head g gs"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > $R/jit-checks.txt 2>&1 &
wait; echo "jit done $(date +%T)"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 170 .devbin/tests/gpu --ignored --test-threads=1 --nocapture > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(date +%T)"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$? $(date +%T)"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 gpu_ > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$? $(date +%T)"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -20
pack
for r in 1 2 3; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,64,256,1024,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,128,256,512,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
for live in 0.5 0.7; do VEBALLOC_PTX_FILE=.devbin/var/gs.ptx timeout 60 $B churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live rc=$?"; grep -a "churn:" $R/churn-$live.txt | tail -1; done
S=(--section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --section InstructionStats --metrics gpu__time_duration.sum --warp-sampling-interval 0)
for w in "mixed 32 m32" "single 16 s16"; do set -- $w
  VEBALLOC_PTX_FILE=.devbin/var/gs.ptx timeout 100 ncu --kernel-name vb_malloc --launch-skip 1 --launch-count 1 "${S[@]}" --export $R/ncu-$3 $B $1 --sizes $2 --iters 1 --allocators veballoc --out /tmp/n > $R/ncu-$3.txt 2>&1; echo "ncu $3 rc=$? $(date +%T)"
  ncu --import $R/ncu-$3.ncu-rep > $R/det-$3.txt 2>&1
  ncu --import $R/ncu-$3.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/src-$3.csv.gz
  rm -f $R/*.ncu-rep; pack
done
echo "done $(date +%T)"
