set -uo pipefail
# r36 final call f (as e, warm): scaling with Gallatin side by side (the README's scaling).
R=/tmp/r36-ff; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,pstate --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 500 $B scaling --allocators veballoc,floor --iters 3 --peers .devbin/peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$?"
tar czf $OUT/r36-ff.tgz -C $R .
