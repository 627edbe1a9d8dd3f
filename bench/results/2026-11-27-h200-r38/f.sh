set -uo pipefail
# r38 final call f (f264f74): Gallatin side by side with the floors (single, mixed: the
# README's tables), then scaling.
R=/tmp/r38-f; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
for cmd in single mixed; do
  timeout 150 $B $cmd --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
done
tar czf $OUT/r38-f.tgz -C $R .
timeout 330 $B scaling --allocators veballoc,floor --iters 3 --peers .devbin/peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$?"
tar czf $OUT/r38-f.tgz -C $R .
echo "done $(date +%T)"
