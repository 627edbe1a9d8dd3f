set -uo pipefail
# r40 call e (9ecade65's bundle): peer_gallatin rebuilt on the GPU machine from .peers-src
# (docs/peers.md; the shared binaries are truncated), then the README protocol with Gallatin
# side by side: single and mixed with the floors, frag (one round) with Gallatin's rounds.
R=/tmp/r40-e; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
rm -f .devbin/peers/bin/*
PEERS_ONLY=peer_gallatin bash scripts/build-peers.sh > $R/build-peers.txt 2>&1; echo "build rc=$? $(date +%T)"
cp .devbin/peers/logs/* $R/ 2>/dev/null
.devbin/peers/bin/peer_gallatin single 1024 16 --iters 1 --csv /tmp/pg.csv > $R/peer-smoke.txt 2>&1; echo "smoke rc=$?"; cat /tmp/pg.csv >> $R/peer-smoke.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
echo "jit done $(date +%T)"
for cmd in single mixed; do
  timeout 150 $B $cmd --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
done
tar czf $OUT/r40-e.tgz -C $R .
echo "tables done $(date +%T)"
timeout 200 $B frag --rounds 1 --allocators veballoc --peers .devbin/peers --peers-list gallatin --out $R/frag-peers > $R/frag-peers.txt 2>&1; echo "frag rc=$? $(date +%T)"
tar czf $OUT/r40-e.tgz -C $R .
