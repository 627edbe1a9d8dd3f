set -uo pipefail
# r44 call f: Gallatin's mixed frag side by side with the committed build (call e's frag with
# Gallatin timed out at 70000 B, before the mixed rows): frag one round, sizes 16 and 64 plus
# the three mixed ranges, Gallatin's rounds in the same invocation.
R=/tmp/r44-f; mkdir -p $R
gunzip -f .devbin/*.gz 2>/dev/null; chmod +x .devbin/veballoc-bench
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/veballoc.ptx | tee $R/ptx-md5.txt
rm -rf .devbin/peers; PEERS_ONLY=peer_gallatin bash scripts/build-peers.sh > $R/build-peers.txt 2>&1; echo "peer build rc=$? $(date +%T)"
timeout 200 $B frag --rounds 1 --sizes 16,64 --allocators veballoc --peers .devbin/peers --peers-list gallatin --out $R/frag-peers > $R/frag-peers.txt 2>&1; echo "frag peers rc=$? $(date +%T)"
rm -rf $R/*/*.svg; tar czf $OUT/r44-f.tgz -C /tmp r44-f
