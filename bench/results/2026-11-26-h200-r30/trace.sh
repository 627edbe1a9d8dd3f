set -uo pipefail
# r30 call H: the install-path profile (`trace` PTX of c0b2fed's kernels) of small launches and
# of 2^20 threads at 16 and 512 B, beside the plain PTX's times.
R=/tmp/r30-trace; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt
for t in 1 32 1024 32768 1048576; do
  for v in trace plain; do
    f=.devbin/trace.ptx; tr=(--trace); [ $v = plain ] && { f=.devbin/veballoc.ptx; tr=(); }
    VEBALLOC_PTX_FILE=$PWD/$f timeout 60 .devbin/veballoc-bench single --threads $t --sizes 16,512 --iters 3 --allocators veballoc "${tr[@]}" --out $R/$v-$t > $R/$v-$t.txt 2>&1
    echo "== $v threads=$t rc=$?"; grep -av '^\s*$' $R/$v-$t.txt | grep -a 'trace\|  16 |\| 512 |' | cut -c1-400 | head -12
  done
done
tar czf $OUT/r30-trace.tgz -C $R .
