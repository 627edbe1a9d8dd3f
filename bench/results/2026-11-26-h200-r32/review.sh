set -uo pipefail
# r32 call J (634f035, after the review's fixes): every GPU test (boot on, the default), gpu_host
# again with VEBALLOC_BOOT=0, util (runs of segments: 1.5, 5, 20 MiB), frag, churn at 70%,
# oom, single and mixed (one round).
R=/tmp/r32-review; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 200 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
VEBALLOC_BOOT=0 timeout 60 .devbin/tests/gpu_host --ignored --test-threads=1 > $R/tests/gpu_host-boot0.txt 2>&1; echo "gpu_host (VEBALLOC_BOOT=0) rc=$?"
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -12
timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live 0.7 --out $R/churn-0.7 > $R/churn-0.7.txt 2>&1; echo "churn 0.7: $(grep -a 'null' $R/churn-0.7.txt | tail -2 | head -1)"
timeout 100 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -21 | awk -F'|' '{split($2,a,","); printf "%s:%s ", $1, a[1]} END {print ""}' | tr -s ' '
timeout 150 .devbin/veballoc-bench util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
tr '\r' '\n' < $R/util.txt | grep -a '|' | grep -v batch | tail -17
timeout 60 .devbin/veballoc-bench oom --allocators veballoc --out $R/oom > $R/oom.txt 2>&1; echo "oom rc=$?"; tr '\r' '\n' < $R/oom.txt | grep -a '|' | tail -8
for cmd in single mixed; do timeout 60 .devbin/veballoc-bench $cmd --allocators veballoc --iters 5 --out $R/vb > $R/vb-$cmd.txt 2>&1 || echo "exit $? $cmd"; done
for f in $R/vb-*.txt; do grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{printf "%s:%s ", $1, $2} END {print ""}' | tr -s ' '; done
tar czf $OUT/r32-review.tgz -C $R .
