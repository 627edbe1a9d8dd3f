set -uo pipefail
# r32 call L: the take-back off a slot's first install unless its first wave can fill the
# segment, holding a formatter's place of the group while it reclaims (lock.ptx, uncommitted on
# 7fef348) against 634f035 (base.ptx); PTX-only, same binary (634f035's), boot on; two rounds
# in turn: scaling (veballoc only), frag, single and mixed.
R=/tmp/r32-lock; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
b=.devbin/base/veballoc-bench
for round in 1 2; do for v in base lock; do
  export VEBALLOC_PTX_FILE=$PWD/.devbin/var/$v.ptx
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
tar czf $OUT/r32-lock.tgz -C $R .
