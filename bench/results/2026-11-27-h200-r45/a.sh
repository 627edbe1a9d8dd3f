set -uo pipefail
# r45 call a: r44's open question. `fix` (HEAD + the routing's ballot over every slice lane in
# malloc_slice, r44 g/ h/) got 667 nulls in gpu_churn_100_rounds_mixed_sizes at 816 MiB live of
# 8 GiB. Run that test on fix, fix+trace, head+trace and head (one process each), printing
# nulls and the trace every 25 rounds.
R=/tmp/r45-a; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/*.ptx | tee $R/ptx-md5.txt
for v in fix-trace head-trace fix head; do
  VEBALLOC_PTX_FILE=$PWD/.devbin/var/$v.ptx timeout 150 .devbin/tests/gpu --ignored --test-threads=1 --nocapture gpu_churn_100 > $R/churn-$v.txt 2>&1; echo "$v rc=$? $(date +%T)"
  grep -h "test result\|panicked\|left\|right\|nulls so far" $R/churn-$v.txt | head -12
  tar czf $OUT/r45-a.tgz -C /tmp r45-a
done
echo "done $(date +%T)"
