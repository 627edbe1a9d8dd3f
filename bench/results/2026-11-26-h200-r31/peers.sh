set -uo pipefail
# r31 call G (2da939c, the band; code as the final commit): Gallatin side by side with the
# floors: single, mixed, scaling (16, 64, 512, 8192 B).
R=/tmp/r31-peers; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
peers=$(scripts/peers-dir.sh)
for cmd in single mixed; do timeout 90 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"; done
timeout 300 .devbin/veballoc-bench scaling --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1 || echo "exit $? scaling"
for f in $R/peers-*.txt; do grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{ printf "%-8s %s | %s\n", $1, $2, $NF }'; done
grep -a 'vs a' -A200 $R/scaling.txt | grep -a '|' | tr -d '\r' | sed 's/.*\.\.\. *//' | head -100
tar czf $OUT/r31-peers.tgz -C $R .
