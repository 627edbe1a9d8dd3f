set -uo pipefail
# r34 call 7b (0a641d7, the session's final kernel code: 16..32 B install on demand):
# Gallatin side by side with the floors, single and mixed (the README's tables); scaling if
# the device time lasts. The tarball is rewritten after each step (a cut run keeps what ran).
R=/tmp/r34-finalb; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for cmd in single mixed; do
  timeout 90 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
  tar czf $OUT/r34-finalb.tgz -C $R .
done
for f in $R/peers-*.txt; do grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{ printf "%-8s %s | %s\n", $1, $2, $NF }'; done
timeout 200 .devbin/veballoc-bench scaling --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$?"
tar czf $OUT/r34-finalb.tgz -C $R .
