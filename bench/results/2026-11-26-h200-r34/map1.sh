# r34 call 1: where the range of a burst goes (frag --frag-map), the boot's 16-byte blocks in
# group 0's highest booted segment (boot-high.ptx), and the install-path trace of small launches.
set -u
O=$OUT/map1; mkdir -p $O
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
date -u +%FT%TZ >> $O/device.txt
S=16,24,32,48,64,128,256
$B frag --rounds 1 --frag-map --sizes $S --out $O/frag-base > $O/frag-base.txt 2>&1
VEBALLOC_PTX_FILE=.devbin/var/boot-high.ptx $B frag --rounds 1 --frag-map --sizes $S --out $O/frag-high > $O/frag-high.txt 2>&1
$B frag --rounds 1 --frag-map --sizes $S --out $O/frag-base2 > $O/frag-base2.txt 2>&1
VEBALLOC_PTX_FILE=.devbin/var/boot-high.ptx $B frag --rounds 1 --frag-map --sizes $S --out $O/frag-high2 > $O/frag-high2.txt 2>&1
for t in 1 32768; do
  VEBALLOC_PTX_FILE=.devbin/var/trace.ptx $B single --threads $t --iters 2 --sizes 16,64,512,8192 --allocators veballoc --trace --out $O/tr-$t > $O/trace-$t.txt 2>&1
done
VEBALLOC_PTX_FILE=.devbin/var/boot-high.ptx $B scaling --iters 3 --allocators veballoc --out $O/sc-high > $O/scaling-high.txt 2>&1
$B scaling --iters 3 --allocators veballoc --out $O/sc-base > $O/scaling-base.txt 2>&1
cd $OUT && tar czf map1.tgz map1
