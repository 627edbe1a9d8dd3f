set -uo pipefail
# r40 call b (HEAD's device code): the scaling survey with Gallatin (the README's table), then
# ncu of every point of issue 11 that misses its target and has no profile yet (see NOTES r40).
R=/tmp/r40-b; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench; G=.devbin/peers/bin/peer_gallatin
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
timeout 300 $B scaling --allocators veballoc,floor --iters 3 --peers .devbin/peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$?"
tar czf $OUT/r40-b.tgz -C $R .
echo "scaling done $(date +%T)"
