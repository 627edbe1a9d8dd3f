set -uo pipefail
# r33 call 2: PTX-only A/B (same harness binary): v0 = HEAD ebd9cb9; v1 = take_in_row with
# only the common case inline (the rest out of line); v2 = v1 + the tree claim's RMW acquire
# only and the segment's out-count add relaxed (an unverified experiment: what the two
# fences of a claim cost). Two rounds in turn: single and mixed at 2^20 threads, single at
# 2^15 and 2^12 threads.
R=/tmp/r33-ab1; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
B=.devbin/veballoc-bench
for round in 1 2; do for v in v0 v1 v2; do
  export VEBALLOC_PTX_FILE=$PWD/.devbin/var/$v.ptx
  timeout 100 $B single --sizes 16,32,64,256,4096 --allocators veballoc --out $R/$v-$round-s > $R/$v-$round-single.txt 2>&1 || echo "exit $? $v single"
  timeout 100 $B mixed --sizes 64,256,4096 --allocators veballoc --out $R/$v-$round-m > $R/$v-$round-mixed.txt 2>&1 || echo "exit $? $v mixed"
  timeout 100 $B single --threads 32768 --sizes 16,64,512 --allocators veballoc --out $R/$v-$round-s15 > $R/$v-$round-s15.txt 2>&1 || echo "exit $? $v s15"
  timeout 100 $B single --threads 4096 --sizes 16,64 --allocators veballoc --out $R/$v-$round-s12 > $R/$v-$round-s12.txt 2>&1 || echo "exit $? $v s12"
done; done
unset VEBALLOC_PTX_FILE
for f in $R/v*-[12]-*.txt; do
  t=$(basename $f .txt); v=${t%%-*}; rest=${t#*-}; round=${rest%%-*}; kind=${rest#*-}
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v k=$kind -v v=$v '{ gsub(/ /,"",$1); split($2,a," "); printf "%s-%s %s %s %s\n", k, $1, v, a[1], a[2] }'
done | sort -s -k1,1V -k2,2 | awk '{k=$1" "$2; al[k]=al[k]" "$3; fr[k]=fr[k]" "$4} END {for (k in al) print k, "alloc", al[k], "free", fr[k]}' | sort -k1,1V -k2 | tee $R/summary.txt
tar czf $OUT/r33-ab1.tgz -C $R .
