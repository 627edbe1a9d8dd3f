set -uo pipefail
R=/tmp/fr; mkdir -p $R
for r in 1 2; do for cap in 64 128; do
  timeout 60 .devbin/veballoc-bench frag --sizes 16,24,32,48,64,128,256 --maxreg $cap --allocators veballoc --out $R/r$r-$cap > $R/r$r-$cap.txt 2>&1 || echo "rc=$? r$r $cap"
  echo "== r$r cap $cap"; grep -a '|' $R/r$r-$cap.txt | grep -av '^GPU\|size' | sed 's/.*\.\.\. *//' | awk -F'|' '{print $1 "|" $2}'
done; done
tar czf $OUT/frag.tgz -C /tmp fr
