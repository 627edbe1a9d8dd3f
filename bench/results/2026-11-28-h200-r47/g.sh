set -uo pipefail
# r47 call g: f/'s trace: nlast's 48 B burst ran the same installs as head's but one reclaim
# more (reclaims 3 against 2: the take-back of group 1's booted segment, now above group 4's).
# nskip = nlast where no other group takes group 1's booted segment back (a probe: if 48 B
# comes back, the take-back is the cost). frag with maps, speed in turn, three rounds.
R=/tmp/r47-g; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/*.ptx | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r47-g.tgz -C /tmp r47-g; }
V="head nlast nskip"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
wait; echo "jit done $(date +%T)"
VEBALLOC_PTX_FILE=.devbin/var/nskip.ptx timeout 100 $B frag --rounds 1 --iters 1 --sizes 16,32,48,64,128 --frag-map --allocators veballoc --out $R/frag-nskip > $R/frag-nskip.txt 2>&1; echo "frag nskip rc=$? $(date +%T)"
grep -a "x," $R/frag-nskip.txt | sed 's/.*\] \.\.\. *//' | awk -F'|' '{split($1,a," "); split($2,b,","); printf "nskip %s:%s\n", a[1], b[1]}'
pack
for r in 1 2 3; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,32,48,64,128 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,256,512 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
pack; echo "done $(date +%T)"
