set -uo pipefail
# r31 call C: allocation A/B after f7c92b2 showed 2 KiB 8-12% slower: base (6eb3f4c's code),
# new (release_slices out of line, take_partial returning a pair), nocheck (new without the
# partial take in take_in_row), three rounds in turn, single and mixed.
R=/tmp/r31-spill; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for round in 1 2 3; do
  for v in base new nocheck; do
    b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx
    [ $v = base ] && { b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; }
    [ $v = nocheck ] && p=.devbin/exp/nocheck.ptx
    for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/$v-$round > $R/$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
  done
done
for f in $R/*-*-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-18s %s\n", $1, t, $2 }'
done | sort -s -k1,1V
tar czf $OUT/r31-spill.tgz -C $R .
