set -uo pipefail
R=/tmp/tr; mkdir -p $R
for t in 1 1024 32768 131072; do
  for v in trace base; do
    f=.devbin/ab/$v.ptx; [ $v = base ] && f=.devbin/veballoc.ptx
    tr=(); [ $v = trace ] && tr=(--trace)
    VEBALLOC_PTX_FILE=$f timeout 60 .devbin/veballoc-bench single --threads $t --sizes 16,512 --iters 3 --allocators veballoc "${tr[@]}" --out $R/$v-$t > $R/$v-$t.txt 2>&1
    echo "== $v threads=$t rc=$?"; grep -av '^\s*$' $R/$v-$t.txt | grep -a 'trace\|install\|format\|claim\|sleep\|wait\|  16 |\| 512 |' | head -30
  done
done
tar czf $OUT/trace.tgz -C /tmp tr
