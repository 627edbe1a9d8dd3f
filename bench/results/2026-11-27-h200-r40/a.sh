set -uo pipefail
# r40 call a (HEAD's device code; the README's tables): churn at 50/70%, frag (one round) with
# maps and Gallatin's rounds, util; single and mixed with Gallatin and the floors; scaling with
# Gallatin. The same protocol as r39 g/, in one invocation per test.
R=/tmp/r40-a; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
echo "jit done $(date +%T)"
for cmd in single mixed; do
  timeout 150 $B $cmd --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
done
tar czf $OUT/r40-a.tgz -C $R .
for live in 0.5 0.7; do timeout 60 $B churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live rc=$?"; done
timeout 120 $B frag --rounds 1 --frag-map --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
timeout 150 $B frag --rounds 1 --allocators veballoc --peers .devbin/peers --peers-list gallatin --out $R/frag-peers > $R/frag-peers.txt 2>&1; echo "frag peers rc=$?"
timeout 150 $B util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
tar czf $OUT/r40-a.tgz -C $R .
echo "part 1 done $(date +%T)"
