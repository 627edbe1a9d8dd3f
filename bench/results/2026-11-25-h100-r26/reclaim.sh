set -uo pipefail
R=/tmp/rcl; mkdir -p $R
for r in 1 2; do for v in base noreclaim; do
  f=.devbin/ab/$v.ptx; [ $v = base ] && f=.devbin/veballoc.ptx
  VEBALLOC_PTX_FILE=$f timeout 90 .devbin/veballoc-bench single --sizes 16,128,512,4096 --allocators veballoc --iters 5 --out $R/r$r-$v > $R/r$r-$v.txt 2>&1 || echo "rc=$? $r $v"
  grep -a '|' $R/r$r-$v.txt | grep -av 'size\|^GPU' | sed 's/.*\.\.\. *//' | awk -F'|' -v t="r$r-$v" '{split($2,a," "); printf "%-6s %-14s %s / %s\n",$1,t,a[1],a[2]}'
done; done
VEBALLOC_PTX_FILE=.devbin/ab/trace.ptx timeout 90 .devbin/veballoc-bench single --sizes 16,128 --allocators veballoc --iters 1 --trace --out $R/trace > $R/trace.txt 2>&1; echo "trace rc=$?"
grep -a '^trace (after free)' $R/trace.txt | sed 's/install[^ ]*//g' | cut -c1-300
tar czf $OUT/reclaim.tgz -C /tmp rcl
