set -uo pipefail
# r32 call P (exploratory, not committed code): 24-32 B in 64 KiB blocks (2730/2048 slices a
# block; class::block_shift_for k + 11 for k = 5) against the current code (d020e6a's
# binaries), each with its own binary; two rounds in turn: frag (16-64 B and mixed), single
# and mixed.
R=/tmp/r32-b64; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for round in 1 2; do for v in cur exp; do
  b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx
  [ $v = exp ] && { b=.devbin/exp/veballoc-bench; p=.devbin/exp/veballoc.ptx; }
  export VEBALLOC_PTX_FILE=$PWD/$p
  timeout 100 $b frag --sizes 16,24,32,48,64 --allocators veballoc --out $R/frag-$v-$round > $R/frag-$v-$round.txt 2>&1 || echo "exit $? frag $v"
  echo "$v $round frag: $(grep -a '|' $R/frag-$v-$round.txt | grep -a 'x,' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{split($2,a,","); printf "%s:%s ", $1, a[1]}' | tr -s ' ')"
  timeout 60 $b single --sizes 16,24,32,48,64,128 --allocators veballoc --iters 5 --out $R/$v-$round > $R/$v-$round-single.txt 2>&1 || echo "exit $? $v single"
  timeout 60 $b mixed --sizes 64,128,256,4096 --allocators veballoc --iters 5 --out $R/$v-$round > $R/$v-$round-mixed.txt 2>&1 || echo "exit $? $v mixed"
done; done
unset VEBALLOC_PTX_FILE
for f in $R/*-[12]-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-18s %s\n", $1, t, $2 }'
done | grep -v frag | sort -s -k1,1V | awk '{split($2,a,"-"); k=$1" "a[1]; al[k]=al[k]" "$3; fr[k]=fr[k]" "$4} END {for (k in al) print k, "alloc", al[k], "free", fr[k]}' | sort -k1,1V -k2
tar czf $OUT/r32-b64.tgz -C $R .
