# r36 call od: classes of fewer than 256 slices a block (above 4 KiB) install on demand
# (od.ptx, feature exp-od: the take that uses a run up empties the slot unless a take came
# after it) against base (the session's kernels): scaling (8192 B: the exhauster of a small
# launch's last run installed the next run for nobody), mid-size speed in turn, frag.
set -u
R=/tmp/r36-od; mkdir -p $R
gunzip -f .devbin/var/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
for v in base od; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done"
for v in base od; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 150 $B scaling --iters 3 --allocators veballoc --out /tmp/sc-$v > $R/scaling-$v.txt 2>&1; done
for r in 1 2; do for v in base od; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads 262144 --sizes 8192 --out /tmp/s > $R/s8k-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 90 $B single --allocators veballoc --threads 65536 --sizes 4097,10000,40000,70000 --out /tmp/s > $R/mid-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 4096 --out /tmp/s > $R/s4k-$v-$r.txt 2>&1
done; done
for v in base od; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 120 $B frag --rounds 1 --allocators veballoc --sizes 4097,6000,10000,40000,70000 --out /tmp/f > $R/frag-$v.txt 2>&1; done
for f in $R/s8k-* $R/mid-* $R/s4k-*; do echo "$(basename $f): $(grep -a '^ *\[' $f | awk -F'|' '{printf "%s|", $2}' | tr -s ' ')"; done
for v in base od; do echo "frag $v: $(grep -a 'x,' $R/frag-$v.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{printf "%s:%s ", $1, $2}' | tr -s ' ')"; done
paste <(grep -a "\[scaling 8192" $R/scaling-base.txt | awk -F'|' '{split($1,a," "); split($2,b," "); print a[5], b[1]}') <(grep -a "\[scaling 8192" $R/scaling-od.txt | awk -F'|' '{split($2,b," "); print b[1]}')
cd /tmp && tar czf $OUT/r36-od.tgz r36-od
