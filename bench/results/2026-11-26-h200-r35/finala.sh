set -uo pipefail
# r35 call 5a (the session's kernel code: 48/64 B claims ranked, the claim's leaf word loaded
# once): every GPU test, churn at 50% and 70%, frag with maps.
R=/tmp/r35-finala; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz  # carried compressed (the 64 MiB limit)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 330 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 100 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
VEBALLOC_BOOT=0 timeout 60 .devbin/tests/gpu_host --ignored --test-threads=1 > $R/tests/gpu_host-noboot.txt 2>&1; echo "gpu_host noboot rc=$?"
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -14
tar czf $OUT/r35-finala.tgz -C $R .
for live in 0.5 0.7; do timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live: $(grep -a 'null' $R/churn-$live.txt | tail -2 | head -1)"; done
timeout 100 .devbin/veballoc-bench frag --frag-map --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | grep -av 'map (' | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -21 | awk -F'|' '{printf "%s:%s  ", $1, $2} END {print ""}' | tr -s ' '
tar czf $OUT/r35-finala.tgz -C $R .
