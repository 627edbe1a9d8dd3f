set -uo pipefail
# r47 call b: a/ found mixed ≤64's range / live at 2.57 (r46: 1.30) with the 16-byte band in
# group 1's 128 KiB blocks. Where the range goes (frag --frag-map) and two candidate fixes:
# n128 = new with that row's 128 slots (its own blocks' share; the bench binary built so, the
# PTX is new's), nboot = new with two booted segments for group 1 (as groups 0 and 2). Then
# speed in turn, two rounds, against head and new.
R=/tmp/r47-b; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench* .devbin/tests/*
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/*.ptx .devbin/veballoc-bench* | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r47-b.tgz -C /tmp r47-b; }
V="head new nboot"
bin() { case $1 in n128) echo /tmp/bn128;; *) echo .devbin/veballoc-bench;; esac; }
ptx() { case $1 in n128) echo .devbin/var/new.ptx;; *) echo .devbin/var/$1.ptx;; esac; }
for v in head new nboot; do VEBALLOC_PTX_FILE=$(ptx $v) timeout 200 $(bin $v) single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
wait; echo "jit done $(date +%T)"
for v in $V; do
  VEBALLOC_PTX_FILE=$(ptx $v) timeout 100 $(bin $v) frag --rounds 1 --iters 1 --sizes 32 --frag-map --allocators veballoc --out $R/frag-$v > $R/frag-$v.txt 2>&1; echo "frag $v rc=$? $(date +%T)"
done
pack
for r in 1 2; do for v in $V; do
  export VEBALLOC_PTX_FILE=$(ptx $v)
  timeout 45 $(bin $v) single --allocators veballoc --sizes 16,32,64,256 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $(bin $v) mixed --allocators veballoc --sizes 32,64,128,256,512,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
for v in $V; do grep -a "x," $R/frag-$v.txt | sed 's/.*\] \.\.\. *//' | awk -v v=$v -F'|' '{split($1,a," "); split($2,b,","); printf "%s %s:%s\n", v, a[1], b[1]}'; done
pack; echo "done $(date +%T)"
