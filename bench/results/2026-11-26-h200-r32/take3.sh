set -uo pipefail
# r32 call D: TAKE_BACK_FROM 2 (take back the next booted segment once half of a segment is
# out). frag, single and mixed with the boot on, scaling with Gallatin and the floors,
# gpu_host and gpu_correctness.
R=/tmp/r32-take3; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in gpu_host gpu_correctness; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -6
timeout 100 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -21 | awk -F'|' '{printf "%s:%s  ", $1, $2} END {print ""}' | tr -s ' '
peers=$(scripts/peers-dir.sh)
for cmd in single mixed; do timeout 90 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"; done
for f in $R/peers-*.txt; do grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{ printf "%-8s %s | %s\n", $1, $2, $NF }'; done
timeout 200 .devbin/veballoc-bench scaling --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$?"
tar czf $OUT/r32-take3.tgz -C $R .
