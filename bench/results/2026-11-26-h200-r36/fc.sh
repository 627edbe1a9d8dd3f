set -uo pipefail
# r36 final call c (as a): scaling with Gallatin side by side; frag (one round) of 70000 B and
# the mixed maxima, veballoc only (b's run with Gallatin ran out of time at 70000 B).
R=/tmp/r36-fc; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 90 $B frag --rounds 1 --frag-map --allocators veballoc --sizes 70000 --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
grep -a '|' $R/frag.txt | grep -av 'map (' | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -4 | awk -F'|' '{printf "%s:%s  ", $1, $2} END {print ""}' | tr -s ' '
tar czf $OUT/r36-fc.tgz -C $R .
timeout 400 $B scaling --allocators veballoc,floor --iters 3 --peers .devbin/peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$?"
rm -f $R/scaling/*-16.svg.tmp
tar czf $OUT/r36-fc.tgz -C $R .
