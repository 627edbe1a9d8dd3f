set -uo pipefail
# r29 call B, after the sweep and steal fix (they read only the slots a row uses): the `gpu`
# test binary (timed), util, churn at 70%; then Gallatin side by side (single, mixed, scaling; peer_gallatin built from the
# carried .peers-src when .devbin/peers has none), then old (8eed155: its harness and PTX,
# whose layout differs) and new in turn, ROUNDS rounds of single and mixed, one of scaling.
R=/tmp/r29-speed; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee $R/device.txt
date -u +%Y-%m-%dT%H:%M:%SZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 200 .devbin/tests/gpu --ignored --test-threads=1 --nocapture > $R/tests-gpu.txt 2>&1; echo "gpu rc=$? in $(( $(date +%s) - s )) s"
grep -a 'test result\|FAILED\|panicked' $R/tests-gpu.txt
timeout 100 .devbin/veballoc-bench util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
grep -a -o '[0-9-]* |  *[0-9]*  *[0-9]* |  *[0-9]*  *[0-9.]*% |  *[0-9.]*%.*' $R/util.txt | tr -s ' '
timeout 60 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live 0.7 --out $R/churn-0.7 > $R/churn-0.7.txt 2>&1; echo "churn 0.7 rc=$?"
grep -a 'null' $R/churn-0.7.txt | tail -2
[ -x .devbin/peers/bin/peer_gallatin ] || PEERS_ONLY=peer_gallatin scripts/build-peers.sh > $R/build-peers.log 2>&1
peers=$(scripts/peers-dir.sh); echo "peers: $peers"
for cmd in single mixed scaling; do
  timeout 150 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
done
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in old new; do
    if [ $v = old ]; then b=.devbin/old/veballoc-bench; p=.devbin/old/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
    cmds="single mixed"; [ $r = 1 ] && cmds="single mixed scaling"
    for cmd in $cmds; do
      VEBALLOC_PTX_FILE=$PWD/$p timeout 120 $b $cmd --allocators veballoc --iters 5 --out $R/ab-r$r-$v > $R/ab-r$r-$v-$cmd.txt 2>&1 || echo "exit $? $v $cmd"
    done
  done
done
for cmd in single mixed; do
  for f in $R/ab-r*-$cmd.txt; do
    tag=$(basename $f -$cmd.txt)
    grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$tag '{ split($2, a, " "); printf "%-8s %-12s %s / %s\n", $1, t, a[1], a[2] }'
  done | sort -s -k1,1V
done > $R/ab-summary.txt
cat $R/ab-summary.txt
tar czf $OUT/r29-speed.tgz -C $R .
