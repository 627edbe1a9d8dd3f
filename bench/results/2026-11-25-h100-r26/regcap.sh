set -uo pipefail
R=/tmp/rc; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
for r in 1 2; do for cap in 64 96 128 255; do for cmd in single mixed; do
  timeout 120 .devbin/veballoc-bench $cmd --maxreg $cap --allocators veballoc --iters 5 --out $R/r$r-$cap > $R/r$r-$cap-$cmd.txt 2>&1 || echo "rc=$? r$r $cap $cmd"
done; done; done
for cap in 64 96 128 255; do
  timeout 150 .devbin/veballoc-bench scaling --maxreg $cap --allocators veballoc --iters 5 --out $R/scaling-$cap > $R/scaling-$cap.txt 2>&1 || echo "rc=$? scaling $cap"
done
for f in $R/r*-single.txt $R/r*-mixed.txt; do t=$(basename $f .txt); grep -a '|' $f | grep -av 'size\|^GPU' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$t '{split($2,a," "); printf "%-7s %-16s %s %s\n",$1,t,a[1],a[2]}'; done | sort -s -k1,1n
for cap in 64 96 128 255; do echo "== scaling $cap"; grep -a '|' $R/scaling-$cap.txt | grep -av 'size\|^GPU' | sed 's/.*\.\.\. *//' | awk -F'|' '{split($2,a," "); print $1 "|" a[1]}' | awk '{print}' | tr -s ' ' | paste -sd';' ; done
tar czf $OUT/regcap.tgz -C /tmp rc
