set -uo pipefail
# r36 final call b (as a): Gallatin side by side with the floors, single and mixed (the
# README's tables); frag, one round, with Gallatin's (a's five rounds ran out of time); ncu of
# free at 4 KiB, ours and Gallatin's (source counters, for what bounds it).
R=/tmp/r36-fb; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench; G=.devbin/peers/bin/peer_gallatin
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for cmd in single mixed; do
  timeout 120 $B $cmd --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
done
for f in $R/peers-*.txt; do grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{ printf "%-8s %s | %s\n", $1, $2, $NF }'; done
tar czf $OUT/r36-fb.tgz -C $R .
timeout 200 $B frag --rounds 1 --frag-map --allocators veballoc --peers .devbin/peers --peers-list gallatin --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | grep -av 'map (' | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -21 | awk -F'|' '{printf "%s:%s  ", $1, $2} END {print ""}' | tr -s ' '
tar czf $OUT/r36-fb.tgz -C $R .
S=(--section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --metrics gpu__time_duration.sum --warp-sampling-interval 2)
for i in 1 2; do
  timeout 120 ncu --kernel-name vb_free --launch-skip 1 --launch-count 1 "${S[@]}" --export $R/vbf-$i $B single --sizes 4096 --iters 1 --allocators veballoc --out /tmp/nf > $R/ncu-vbfree-$i.txt 2>&1; echo "vb free rc=$?"
  ncu --import $R/vbf-$i.ncu-rep > $R/det-vbfree-$i.txt 2>&1
  ncu --import $R/vbf-$i.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/src-vbfree-$i.csv.gz
  timeout 60 ncu --kernel-name d_free --launch-skip 1 --launch-count 1 "${S[@]}" --export $R/gf-$i $G single 1048576 4096 --iters 1 --warmup 1 > $R/ncu-galfree-$i.txt 2>&1; echo "gal free rc=$?"
  ncu --import $R/gf-$i.ncu-rep > $R/det-galfree-$i.txt 2>&1
done
rm -f $R/*.ncu-rep
grep -a "Duration" $R/det-*.txt
tar czf $OUT/r36-fb.tgz -C $R .
