set -uo pipefail
# r36 final call e (d34fa19: 24 B from group 0's blocks; a launch looks its kernel up in one
# module): every GPU test; Gallatin side by side with the floors, single and mixed (the
# README's tables). The tarball is rewritten after each step.
R=/tmp/r36-fe; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 &
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > /dev/null 2>&1 &
wait; echo "jit done"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 330 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 100 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
VEBALLOC_BOOT=0 timeout 60 .devbin/tests/gpu_host --ignored --test-threads=1 > $R/tests/gpu_host-noboot.txt 2>&1; echo "gpu_host noboot rc=$?"
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -14
tar czf $OUT/r36-fe.tgz -C $R .
for cmd in single mixed; do
  timeout 150 $B $cmd --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
done
for f in $R/peers-*.txt; do grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{ printf "%-8s %s | %s\n", $1, $2, $NF }'; done
tar czf $OUT/r36-fe.tgz -C $R .
