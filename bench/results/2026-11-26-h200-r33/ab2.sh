set -uo pipefail
# r33 call 3: as ab1.sh, variants v0 (HEAD), v2 (as in ab1), v3 = v2 with the inline case
# extended to takes inside one block of a run of several blocks, v4 = HEAD with the two
# orderings of v2 only. Two rounds in turn: single and mixed at 2^20 threads, single at
# 2^15 and 2^12 threads.
R=/tmp/r33-ab2; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
B=.devbin/veballoc-bench
for round in 1 2; do for v in v0 v2 v3 v4; do
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
tar czf $OUT/r33-ab2.tgz -C $R .
