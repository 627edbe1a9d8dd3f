# r36 call h1: a group past half of its booted segment takes back every unused booted segment
# above it (tb.ptx, the working tree after 96a7300) against the next one only (base.ptx =
# d34fa19's kernels): frag (one round, twice, with the maps of the mixed maxima), speed in
# turn (twice), scaling. JITs side by side first.
set -u
R=/tmp/r36-h1; mkdir -p $R
gunzip -f .devbin/var/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt; date -u +%FT%TZ >> $R/device.txt
for v in base tb; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done"
for r in 1 2; do for v in base tb; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 120 $B frag --rounds 1 --frag-map --allocators veballoc --sizes 16,24,32,48,64,128,256 --out /tmp/f-$v > $R/frag-$v-$r.txt 2>&1
  echo "$v $r: $(grep -a '|' $R/frag-$v-$r.txt | grep -av 'map (' | tr -d '\r' | sed 's/.*\.\.\. *//' | grep -a 'x,' | awk -F'|' '{printf "%s:%s ", $1, $2}' | tr -s ' ')"
done; done
for r in 1 2; do for v in base tb; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,64,256,4096 --out /tmp/s > $R/single-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $R/mixed-$v-$r.txt 2>&1
done; done
for v in base tb; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 150 $B scaling --iters 3 --allocators veballoc --out /tmp/sc-$v > $R/scaling-$v.txt 2>&1; done
for f in $R/single-* $R/mixed-*; do echo "$(basename $f): $(grep -a '^ *\[' $f | awk -F'|' '{printf "%s|", $2}' | tr -s ' ')"; done
cd /tmp && tar czf $OUT/r36-h1.tgz r36-h1
