set -uo pipefail
# r40 call f (9ecade65's bundle, peer_gallatin rebuilt as in e/): the scaling survey with
# Gallatin side by side (2^0..2^20 threads at 16, 64, 512 B, 8192 B to 2^18; 3 iterations).
R=/tmp/r40-f; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
PEERS_ONLY=peer_gallatin bash scripts/build-peers.sh > $R/build-peers.txt 2>&1; echo "build rc=$?"
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
timeout 400 $B scaling --allocators veballoc,floor --iters 3 --peers .devbin/peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$? $(date +%T)"
tar czf $OUT/r40-f.tgz -C $R .
