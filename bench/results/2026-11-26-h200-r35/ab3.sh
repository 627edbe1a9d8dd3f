# r35 call 3: the pieces apart. rank: claims ranked by a group ticket modulo 16 alone; spread:
# the same tree with the thread-hash spread (feature spread-claims); rank-a: rank + the claim's
# leaf word loaded once; rank-c: rank + the elected installer's own take in its swap; base
# 24ddfca. Speed in turn (three rounds), frag of base and rank (one round, twice), scaling.
# (Its first run on a fresh machine timed out: each process JIT-compiles its PTX for ~50 s of
# CPU when the driver's cache does not hold it, and the 40 s timeouts killed every JIT. Now the
# five JITs run first, side by side.)
set -u
O=$OUT/ab3; mkdir -p $O
gunzip -f .devbin/var/*.gz
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
date -u +%FT%TZ >> $O/device.txt
V="base spread rank rank-a rank-c"
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 &
done
wait; echo "jit done $(date +%T)"
for r in 1 2 3; do for v in $V; do
  P=.devbin/var/$v.ptx
  VEBALLOC_PTX_FILE=$P timeout 40 $B single --allocators veballoc --sizes 16,32,64,256,1024,4096 --out /tmp/s > $O/single-$v-$r.txt 2>&1
  VEBALLOC_PTX_FILE=$P timeout 40 $B mixed --allocators veballoc --sizes 64,512,4096 --out /tmp/m > $O/mixed-$v-$r.txt 2>&1
done; done
echo "speed done $(date +%T)"
for r in 1 2; do for v in base rank; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B frag --rounds 1 --allocators veballoc --out /tmp/f-$v > $O/frag-$v-$r.txt 2>&1
done; done
echo "frag done $(date +%T)"
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 90 $B scaling --iters 3 --allocators veballoc --out /tmp/sc-$v > $O/scaling-$v.txt 2>&1
done
echo "scaling done $(date +%T)"
cd $OUT && tar czf ab3.tgz ab3
