set -uo pipefail
R=/tmp/ub; mkdir -p $R
for r in 0163379 fa60290 bff51b7 5337c8d ba16df1 ef6d588; do
  VEBALLOC_PTX_FILE=.devbin/ab/u-$r.ptx timeout 60 .devbin/veballoc-bench util --sizes 16 --allocators veballoc --out $R/$r > $R/$r.txt 2>&1; echo "$r rc=$? $(tr '\r' '\n' < $R/$r.txt | grep -a '^ *16 |')"
done
tar czf $OUT/ub.tgz -C /tmp ub
