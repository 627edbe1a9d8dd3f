set -uo pipefail
# r43 call b (HEAD c4612837's device code; the tree has a doc change only): peer_gallatin
# rebuilt from .peers-src (the shared binaries are truncated, docs/peers.md), then frag one
# round with Gallatin side by side, singles 16..4096 and mixed ≤64/≤512/≤4096, twice (two
# processes); then single and mixed speed with Gallatin (5 iterations after a warm-up).
R=/tmp/r43-b; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
rm -rf .devbin/peers
PEERS_ONLY=peer_gallatin bash scripts/build-peers.sh > $R/build-peers.txt 2>&1; echo "build rc=$? $(date +%T)"
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
echo "jit done $(date +%T)"
for r in 1 2; do
  timeout 200 $B frag --rounds 1 --allocators veballoc --sizes 16,24,32,48,64,100,128,256,512,1024,4096 --peers .devbin/peers --peers-list gallatin --out $R/fp-$r > $R/frag-peers-$r.txt 2>&1; echo "frag $r rc=$? $(date +%T)"
  tar czf $OUT/r43-b.tgz -C /tmp r43-b
done
for cmd in single mixed; do
  timeout 150 $B $cmd --allocators veballoc --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
done
tar czf $OUT/r43-b.tgz -C /tmp r43-b
echo "done $(date +%T)"
