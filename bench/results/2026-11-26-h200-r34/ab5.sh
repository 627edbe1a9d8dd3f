# r34 call 6: frag (two rounds, every default size) of the base (4a11b22), the on-demand install
# for 16..32 B (lazy.ptx), and with it the spare booted segment taken back at once (new.ptx);
# small mixed launches (where the boot matters) of the base and new.
set -u
O=$OUT/ab5; mkdir -p $O
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
date -u +%FT%TZ >> $O/device.txt
for v in base lazy new; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx $B frag --rounds 2 --frag-map --allocators veballoc --out /tmp/f-$v > $O/frag-$v.txt 2>&1
done
for r in 1 2; do for v in base new; do for t in 1024 32768; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx $B mixed --threads $t --allocators veballoc --sizes 64,512,4096 --out /tmp/t > $O/smallmixed-$v-$t-$r.txt 2>&1
done; done; done
cd $OUT && tar czf ab5.tgz ab5
