set -uo pipefail
# r44 call i: the committed code's PTX (10605e50's tree) on the GPU: gpu's churn tests and the
# review's churn test of usable sizes (the ones the routing rule decides).
R=/tmp/r44-i; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz 2>/dev/null; chmod +x .devbin/tests/*
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/veballoc.ptx | tee $R/ptx-md5.txt
VEBALLOC_PTX_FILE=$PWD/.devbin/veballoc.ptx timeout 230 .devbin/tests/gpu --ignored --test-threads=1 churn > $R/churn.txt 2>&1; echo "rc=$? $(date +%T)"
grep -h "^test \|test result" $R/churn.txt
tar czf $OUT/r44-i.tgz -C /tmp r44-i
