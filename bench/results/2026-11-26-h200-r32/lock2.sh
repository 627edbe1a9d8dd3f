set -uo pipefail
# r32 call M: lock.ptx against base.ptx again (as call L), single and mixed only, three rounds
# in turn with lock first (an order check of L's 2-5% at 2^20 threads).
R=/tmp/r32-lock2; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
b=.devbin/base/veballoc-bench
for round in 1 2 3; do for v in lock base; do
  export VEBALLOC_PTX_FILE=$PWD/.devbin/var/$v.ptx
  for cmd in single mixed; do timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/$v-$round > $R/$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
done; done
unset VEBALLOC_PTX_FILE
for f in $R/*-[123]-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-18s %s\n", $1, t, $2 }'
done | sort -s -k1,1V | awk '{split($2,a,"-"); k=$1" "a[1]; al[k]=al[k]" "$3; fr[k]=fr[k]" "$4} END {for (k in al) print k, "alloc", al[k], "free", fr[k]}' | sort -k1,1V -k2
tar czf $OUT/r32-lock2.tgz -C $R .
