set -uo pipefail
# r44 call h: which of call g's two changes makes gpu_churn_* get nulls / not give back: vA =
# final's routing rule (the ballot over the class-path lanes only) + the review's fallback to
# the class path; vB = the new rule (a ballot over every slice lane) without the fallback; fix
# = both (call g); final = neither (call e). The two churn tests of `gpu`, one process each.
R=/tmp/r44-h; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx | tee $R/ptx-md5.txt
for v in vA vB fix final; do
  VEBALLOC_PTX_FILE=$PWD/.devbin/var/$v.ptx timeout 140 .devbin/tests/gpu --ignored --test-threads=1 gpu_churn > $R/churn-$v.txt 2>&1; echo "$v rc=$? $(date +%T)"
  grep -h "test result\|panicked\|left\|right\|pressure" $R/churn-$v.txt | head -8
  tar czf $OUT/r44-h.tgz -C /tmp r44-h
done
echo "done $(date +%T)"
