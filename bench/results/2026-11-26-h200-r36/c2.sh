# r36 call 2: where a 24-byte burst's range goes now (g24.ptx = 27b546c's kernels) and with
# the boot's claims ranked (rboot.ptx): frag --frag-map at 24 B (and the mixed maxima), twice.
set -u
R=/tmp/r36-c2; mkdir -p $R
gunzip -f .devbin/var/*.gz .devbin/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt; date -u +%FT%TZ >> $R/device.txt
VEBALLOC_PTX_FILE=.devbin/var/rboot.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
echo "jit done $(date +%T)"
for r in 1 2; do for v in g24 rboot; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 90 $B frag --frag-map --rounds 1 --sizes 16,24 --allocators veballoc --out /tmp/f-$v > $R/map-$v-$r.txt 2>&1
  echo "$v $r: $(grep -a '|' $R/map-$v-$r.txt | grep -a '\[frag' | awk -F'|' '{print $2}' | awk '{printf "%s ", $1}')"
done; done
cd /tmp && tar czf $OUT/r36-c2.tgz r36-c2
