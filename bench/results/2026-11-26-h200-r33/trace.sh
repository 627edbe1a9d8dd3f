set -uo pipefail
# r33 call 12 (94d58af's kernels with the `trace` feature): where a small launch's time goes
# at 64 B, 512 B and 8192 B on a new heap (2^15, 2^13 and 2^12 threads), the sizes whose small
# launches stay below Gallatin's speed; install-path profile after each alloc kernel.
R=/tmp/r33-trace; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_PTX_FILE=$PWD/.devbin/var/trace.ptx
for t in 32768:64 32768:512 8192:512 4096:8192 32768:16; do
  n=${t%%:*}; z=${t##*:}
  timeout 60 .devbin/veballoc-bench single --threads $n --sizes $z --iters 2 --allocators veballoc --trace --out $R/s-$n-$z > $R/trace-$n-$z.txt 2>&1; echo "$n x $z rc=$?"
done
for f in $R/trace-*.txt; do echo "== $f"; tr '\r' '\n' < $f | grep -a -v '^\s*$' | grep -a -A30 'n=' | tail -32 | cut -c1-150; done
tar czf $OUT/r33-trace.tgz -C $R .
