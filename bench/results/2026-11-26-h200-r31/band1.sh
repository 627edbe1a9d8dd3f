set -uo pipefail
# r31 call E: eight classes per doubling from 64 to 256 B for uniform warps (the band's odd
# classes; mixed warps take the even ones): allocation A/B against aa73b1c (.devbin/masks) and
# 6eb3f4c (.devbin/base), two rounds in turn, single and mixed; util; frag.
R=/tmp/r31-band1; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for round in 1 2; do
  for v in base masks band; do
    b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx
    [ $v != band ] && { b=.devbin/$v/veballoc-bench; p=.devbin/$v/veballoc.ptx; }
    for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/$v-$round > $R/$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
  done
done
for f in $R/*-*-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-18s %s\n", $1, t, $2 }'
done | sort -s -k1,1V | awk '{k=$1" "substr($2,1,index($2,"-")-1); a[k]=a[k]" "$3; f[k]=f[k]" "$4} END {for (k in a) print k, "alloc", a[k], "free", f[k]}' | sort -k1,1V -k2
timeout 150 .devbin/veballoc-bench util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
grep -a -o '[0-9-]* |  *[0-9]*  *[0-9]* |  *[0-9]*  *[0-9.]*% |  *[0-9.]*%.*' $R/util.txt | tr -s ' '
timeout 90 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -24
tar czf $OUT/r31-band1.tgz -C $R .
