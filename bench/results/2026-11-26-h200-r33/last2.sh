set -uo pipefail
# r33 call 13 (2784e5b, the session's last kernel code: 3eb4705 + the review's reclaim window
# in retire_boot_slots): every GPU test, churn at 70%, frag.
R=/tmp/r33-last2; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 220 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
VEBALLOC_BOOT=0 timeout 60 .devbin/tests/gpu_host --ignored --test-threads=1 > $R/tests/gpu_host-noboot.txt 2>&1; echo "gpu_host noboot rc=$?"
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -14
timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live 0.7 --out $R/churn-0.7 > $R/churn-0.7.txt 2>&1; echo "churn 0.7: $(grep -a 'null' $R/churn-0.7.txt | tail -2 | head -1)"
timeout 100 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -21 | awk -F'|' '{printf "%s:%s  ", $1, $2} END {print ""}' | tr -s ' '
tar czf $OUT/r33-last2.tgz -C $R .
