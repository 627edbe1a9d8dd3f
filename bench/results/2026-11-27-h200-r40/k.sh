set -u
# r40 call k (e34f54fc's bundle; no code change since but docs): gpu_multi on a 2-GPU
# machine, the two_gpus_* tests included (they need two GPUs).
R=/tmp/r40-k; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 300 .devbin/tests/gpu_multi --ignored --test-threads=1 > $R/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -a 'test \|test result' $R/gpu_multi.txt | tail -8
tar czf $OUT/r40-k.tgz -C /tmp r40-k
