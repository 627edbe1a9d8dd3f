set -uo pipefail
# r32 call K: a format waits for a take-back under way, and the take-back is off a slot's first
# install unless its first wave can fill the segment (uncommitted on 7fef348, .devbin) against
# 634f035 (.devbin/base, own binary: the layout has one more word); boot on; two rounds in
# turn: scaling (veballoc only), frag, single and mixed; gpu_host and gpu_correctness.
R=/tmp/r32-wait; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in gpu_host gpu_correctness; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
for round in 1 2; do for v in base wait; do
  b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx
  [ $v = base ] && { b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; }
  export VEBALLOC_PTX_FILE=$PWD/$p
  timeout 100 $b scaling --allocators veballoc --iters 5 --out $R/scaling-$v-$round > $R/scaling-$v-$round.txt 2>&1 || echo "exit $? scaling $v"
  echo "$v $round scaling: $(grep -a '|' $R/scaling-$v-$round.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | awk '($1==16 || $1==64) && $2>=8192 {printf "%s/%s:%s ", $1, $2, $4}')"
  timeout 100 $b frag --allocators veballoc --out $R/frag-$v-$round > $R/frag-$v-$round.txt 2>&1 || echo "exit $? frag $v"
  echo "$v $round frag: $(grep -a '|' $R/frag-$v-$round.txt | grep -a 'x,' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{split($2,a,","); printf "%s:%s ", $1, a[1]}' | tr -s ' ')"
  for cmd in single mixed; do timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/$v-$round > $R/$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
done; done
unset VEBALLOC_PTX_FILE
for f in $R/*-[12]-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-18s %s\n", $1, t, $2 }'
done | grep -v scaling | grep -v frag | sort -s -k1,1V | awk '{split($2,a,"-"); k=$1" "a[1]; al[k]=al[k]" "$3; fr[k]=fr[k]" "$4} END {for (k in al) print k, "alloc", al[k], "free", fr[k]}' | sort -k1,1V -k2
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -4
tar czf $OUT/r32-wait.tgz -C $R .
