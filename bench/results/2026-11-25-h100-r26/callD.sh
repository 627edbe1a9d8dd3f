set -uo pipefail
R=/tmp/res; mkdir -p $R
scripts/device-ab.sh $R final 0 2>&1 | tail -3
d=$R/final; peers=(--peers .devbin/peers --peers-list gallatin)
timeout 200 .devbin/veballoc-bench frag --allocators veballoc "${peers[@]}" --out $d/bench > $d/frag.txt 2>&1; echo "frag rc=$?"
timeout 200 .devbin/veballoc-bench churn --churn-rounds 20 --out $d/bench > $d/churn.txt 2>&1; echo "churn rc=$?"
for c in single mixed; do grep -a '|' $d/$c.txt | grep -av '^GPU\|size' | sed 's/.*\.\.\. *//' | awk -F'|' '{print $1 "|" $2 "|" $NF}'; done
grep -a 'null\|round' $d/churn.txt | tail -4
tar czf $OUT/final.tgz -C $R final
