set -uo pipefail
# r33 call 10 (fbc131d + take_back_after goes on to the booted segment before in the same call
# when another group keeps the one after; uncommitted): the
# host and correctness GPU tests, frag, the scaling survey and single/mixed sizes with
# Gallatin side by side.
R=/tmp/r33-boot5; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
VEBALLOC_BOOT=0 timeout 60 .devbin/tests/gpu_host --ignored --test-threads=1 > $R/tests/gpu_host-noboot.txt 2>&1; echo "gpu_host noboot rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -8
timeout 100 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -21 | awk -F'|' '{printf "%s:%s  ", $1, $2} END {print ""}' | tr -s ' '
for cmd in single mixed; do timeout 90 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"; done
for f in $R/peers-*.txt; do grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{ printf "%-8s %s | %s\n", $1, $2, $NF }'; done
timeout 200 .devbin/veballoc-bench scaling --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$?"
grep -a -A22 'peer gallatin scale 16 ' $R/scaling.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | head -23 | awk -F'|' '{printf "%s|%s  ", $1, $3} END {print ""}'
tar czf $OUT/r33-boot5.tgz -C $R .
