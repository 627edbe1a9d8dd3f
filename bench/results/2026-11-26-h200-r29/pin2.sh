set -uo pipefail
# r29 call G: base (e44a930) and the half-share variant in turn, twice: 8192 B at 2^14 and
# 2^18 threads (the 2^18 x 8 KiB point), 40000 B at 2^16.
R=/tmp/r29-pin2; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | tee $R/device.txt
for k in 1 2; do for v in base fine; do
  if [ $v = base ]; then b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  for pt in 8192:16384 8192:262144 40000:65536; do
    VEBALLOC_PTX_FILE=$PWD/$p timeout 20 $b single --sizes ${pt%:*} --threads ${pt#*:} --allocators veballoc --iters 5 --out $R/$v > $R/$v-$k-${pt/:/-}.txt 2>&1 || echo "exit $? $v $pt"
    echo "$pt $v $k $(grep -a '|' $R/$v-$k-${pt/:/-}.txt | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | cut -d'|' -f2)"
  done
done; done
tar czf $OUT/r29-pin2.tgz -C $R .
