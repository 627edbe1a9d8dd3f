set -uo pipefail
# r28 call B, in two parts (each under the tool's 600 s):
#   bash final.sh peers: build peer_gallatin from the carried .peers-src (docs/peers.md) and
#     run the harness with Gallatin side by side (single, mixed, scaling) at 05f087f;
#   bash final.sh ab: old (d1ac0b8: its harness and PTX, whose layout differs) and new
#     (05f087f) in turn, two rounds of single and mixed (veballoc and the floors).
# One tarball back each.
mode=$1
R=/tmp/r28-$mode; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee $R/device.txt
date -u +%Y-%m-%dT%H:%M:%SZ | tee -a $R/device.txt
if [ $mode = peers ]; then
  [ -x .devbin/peers/bin/peer_gallatin ] || PEERS_ONLY=peer_gallatin scripts/build-peers.sh > $R/build-peers.log 2>&1
  echo "build-peers rc=$? $(tail -1 $R/build-peers.log 2>/dev/null)"
  peers=$(scripts/peers-dir.sh)
  echo "peers: $peers"
  for cmd in single mixed scaling; do
    timeout 240 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/bench > $R/$cmd.txt 2>&1 || echo "exit $? $cmd"
  done
  cp .devbin/peers/bin/peer_gallatin $OUT/ 2>/dev/null
else
  for r in $(seq 1 ${ROUNDS:-2}); do
    for v in old new; do
      if [ $v = old ]; then b=.devbin/old/veballoc-bench; p=.devbin/old/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
      for cmd in single mixed; do
        VEBALLOC_PTX_FILE=$PWD/$p timeout 120 $b $cmd --allocators veballoc,floor --iters 5 --out $R/ab-r$r-$v > $R/ab-r$r-$v-$cmd.txt 2>&1 || echo "exit $? $v $cmd"
      done
    done
  done
  for cmd in single mixed; do
    for f in $R/ab-r*-$cmd.txt; do
      tag=$(basename $f -$cmd.txt)
      grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$tag '{ split($2, a, " "); printf "%-8s %-12s %s / %s\n", $1, t, a[1], a[2] }'
    done | sort -s -k1,1V
  done
fi
tar czf $OUT/r28-$mode.tgz -C $R .
