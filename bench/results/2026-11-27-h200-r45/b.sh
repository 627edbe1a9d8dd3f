set -uo pipefail
# r45 call b: the peeled first round of malloc_slice_in (`new`, the working tree) against
# HEAD (`head-d`) and r44's `fix` (`fix-d`), each with the new vb_churn_drift kernel: the new
# test gpu_churn_with_lanes_drifting_apart on each, then the whole gpu suite on `new`.
R=/tmp/r45-b; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
cp .devbin/veballoc.ptx .devbin/var/new.ptx
md5sum .devbin/var/*.ptx .devbin/*.ptx | tee $R/ptx-md5.txt
pack() { tar czf $OUT/r45-b.tgz -C /tmp r45-b; }
for v in new head-d fix-d; do
  VEBALLOC_PTX_FILE=$PWD/.devbin/var/$v.ptx timeout 150 .devbin/tests/gpu --ignored --test-threads=1 --nocapture gpu_churn_with_lanes > $R/drift-$v.txt 2>&1; echo "$v rc=$? $(date +%T)"
  grep -h "test result\|panicked\|left\|right\|seed" $R/drift-$v.txt | head -12
  pack
done
timeout 300 .devbin/tests/gpu --ignored --test-threads=1 > $R/gpu-new.txt 2>&1; echo "gpu suite rc=$? $(date +%T)"
grep -h "^test \|test result" $R/gpu-new.txt | tail -25
pack
echo "done $(date +%T)"
