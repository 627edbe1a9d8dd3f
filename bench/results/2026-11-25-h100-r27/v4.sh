set -uo pipefail
R=/tmp/v4; mkdir -p $R
for r in 1 2 3; do for v in old v4; do for cmd in single mixed; do
  VEBALLOC_PTX_FILE=.devbin/ab/$v.ptx timeout 100 .devbin/veballoc-bench $cmd --allocators veballoc --iters 5 --out $R/r$r-$v > $R/r$r-$v-$cmd.txt 2>&1 || echo "rc=$? $r $v $cmd"
done; done; done
for cmd in single mixed; do for f in $R/r*-$cmd.txt; do t=$(basename $f -$cmd.txt)
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$t '{split($2,a," "); printf "%-7s %-7s %s / %s\n",$1,t,a[1],a[2]}'
done; done | sort -s -k1,1V | awk '{k=$1; if (k!=p) printf "\n%s", k; p=k; printf " | %s %s/%s", $2, $3, $5}'
echo
tar czf $OUT/v4.tgz -C /tmp v4
