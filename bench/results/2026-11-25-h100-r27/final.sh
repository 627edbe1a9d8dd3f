set -uo pipefail
R=/tmp/res; mkdir -p $R
scripts/device-ab.sh $R final 0 2>&1 | tail -3
d=$R/final
timeout 150 .devbin/veballoc-bench frag --allocators veballoc --out $d/bench > $d/frag.txt 2>&1; echo "frag rc=$?"
timeout 120 .devbin/veballoc-bench util --allocators veballoc --out $d/bench > $d/util.txt 2>&1; echo "util rc=$?"
for c in single mixed; do grep -a '|' $d/$c.txt | grep -av '^GPU\|size' | sed 's/.*\.\.\. *//' | awk -F'|' '{print $1 "|" $2 "|" $NF}'; done
grep -a 'x,' $d/frag.txt | tr '\r' '\n' | grep -v '^\s*\[' | head -30
tar czf $OUT/final.tgz -C $R final
