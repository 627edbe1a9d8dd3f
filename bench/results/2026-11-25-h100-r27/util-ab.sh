set -uo pipefail
R=/tmp/uab; mkdir -p $R
for v in old new; do f=.devbin/ab/old.ptx; [ $v = new ] && f=.devbin/veballoc.ptx
  VEBALLOC_PTX_FILE=$f timeout 100 .devbin/veballoc-bench util --sizes 16,100 --allocators veballoc --out $R/$v > $R/$v.txt 2>&1; echo "$v rc=$?"
  tr '\r' '\n' < $R/$v.txt | grep -a "^ *16 |\|^ *100 |"
done
VEBALLOC_PTX_FILE=.devbin/ab/old.ptx timeout 100 .devbin/veballoc-bench util --sizes 16 --maxreg 64 --allocators veballoc --out $R/old64 > $R/old64.txt 2>&1; echo "old64 rc=$?"
tr '\r' '\n' < $R/old64.txt | grep -a "^ *16 |"
tar czf $OUT/uab.tgz -C /tmp uab
