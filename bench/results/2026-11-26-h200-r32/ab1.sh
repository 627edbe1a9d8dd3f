set -uo pipefail
# r32 call B: what the take-back costs at 2^20 threads. Single and mixed, two rounds in turn,
# every variant with VEBALLOC_BOOT=0 (code cost only): base (2259ad0's kernels, own binary),
# and on the new binary: A (booted bits, take-back in an out-of-line format_batch), A2 (the
# adjacency rule, same place), B4b (A2's rule, inline format branch), B3 (no take-back call).
# Then A2 with the boot on: frag, single, mixed.
R=/tmp/r32-ab1; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for round in 1 2; do
  for v in base A A2 B4b B3; do
    b=.devbin/veballoc-bench; p=.devbin/var/$v.ptx
    [ $v = base ] && { b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; }
    [ $v = A ] && p=.devbin/veballoc.ptx
    for cmd in single mixed; do s=$(date +%s); VEBALLOC_BOOT=0 VEBALLOC_PTX_FILE=$PWD/$p timeout 90 $b $cmd --allocators veballoc --iters 5 --out $R/$v-$round > $R/$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; echo "$round $v $cmd $(( $(date +%s) - s )) s"; done
  done
done
for f in $R/*-[12]-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-18s %s\n", $1, t, $2 }'
done | sort -s -k1,1V | awk '{split($2,a,"-"); k=$1" "a[1]; al[k]=al[k]" "$3; fr[k]=fr[k]" "$4} END {for (k in al) print k, "alloc", al[k], "free", fr[k]}' | sort -k1,1V -k2
export VEBALLOC_PTX_FILE=$PWD/.devbin/var/A2.ptx
timeout 100 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag-A2 > $R/frag-A2.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag-A2.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -21 | awk -F'|' '{printf "%s:%s  ", $1, $2} END {print ""}' | tr -s ' '
tar czf $OUT/r32-ab1.tgz -C $R .
