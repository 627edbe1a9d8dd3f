set -uo pipefail
# r36 final call d: scaling with Gallatin side by side again (c's run had its floors and
# veballoc's 16 B small launches 40-80% slower than every other run of the session, right
# after b's ncu runs); nvidia-smi clocks before and after.
R=/tmp/r36-fd; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,pstate --format=csv | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 400 $B scaling --allocators veballoc,floor --iters 3 --peers .devbin/peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$?"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,pstate --format=csv | tee -a $R/device.txt
tar czf $OUT/r36-fd.tgz -C $R .
