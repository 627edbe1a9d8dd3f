set -uo pipefail
# r39 final call g (the session's last device code, 8b9438e7's tree; the GPU tests ran at
# c677ae0c in f/, device code unchanged since): churn at 50/70%, frag (one round) with maps,
# util; single and mixed with Gallatin and the floors (the README's tables); scaling.
R=/tmp/r39-g; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
echo "jit done $(date +%T)"
for live in 0.5 0.7; do timeout 60 $B churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live rc=$?"; done
timeout 120 $B frag --rounds 1 --frag-map --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
timeout 150 $B util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
tar czf $OUT/r39-g.tgz -C $R .
for cmd in single mixed; do
  timeout 150 $B $cmd --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
done
tar czf $OUT/r39-g.tgz -C $R .
timeout 300 $B scaling --allocators veballoc,floor --iters 3 --peers .devbin/peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$?"
tar czf $OUT/r39-g.tgz -C $R .
echo "done $(date +%T)"
