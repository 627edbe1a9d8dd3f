set -uo pipefail
# r35 call 5b (as 5a): util; Gallatin side by side with the floors, single and mixed (the
# README's tables) and scaling; base (24ddfca) against this build in turn, frag of the small
# sizes twice and speed twice. The tarball is rewritten after each step (a cut run keeps what ran).
R=/tmp/r35-finalb; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
VEBALLOC_PTX_FILE=.devbin/var/base.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 &
timeout 150 $B util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
tr '\r' '\n' < $R/util.txt | grep -a '%  |' | tail -17 | cut -c1-70
wait
for cmd in single mixed; do
  timeout 90 $B $cmd --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
done
tar czf $OUT/r35-finalb.tgz -C $R .
for f in $R/peers-*.txt; do grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{ printf "%-8s %s | %s\n", $1, $2, $NF }'; done
for r in 1 2; do for v in base new; do
  P=.devbin/var/base.ptx; [ $v = new ] && P=.devbin/veballoc.ptx
  VEBALLOC_PTX_FILE=$P timeout 60 $B frag --rounds 1 --allocators veballoc --sizes 16,24,32,48,64,128,256 --out /tmp/f > $R/ab-frag-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 40 $B single --allocators veballoc --sizes 16,32,48,64,256,4096 --out /tmp/s > $R/ab-single-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 40 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $R/ab-mixed-$v-$r.txt 2>&1
done; done
tar czf $OUT/r35-finalb.tgz -C $R .
timeout 240 $B scaling --allocators veballoc,floor --iters 3 --peers .devbin/peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$?"
tar czf $OUT/r35-finalb.tgz -C $R .
