set -u
# r42 call f (probe): the install-path trace counters (`--features trace` PTX, with chunk
# takes, their waits and chunk installs counted) of 2^20 x 64 B and mixed <=64 / <=512, two
# iterations each: base (no chunks), k3g (call a's: chunks always, one source a class
# installing on demand, no second chunk, no source spare), e0 and e0n (call e's).
R=/tmp/r42-f; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="base k3g e0 e0n"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done
wait; echo "jit done $(date +%T)"
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B mixed --allocators veballoc --sizes 64,512 --iters 2 --trace --out $R/tm-$v > $R/trace-mixed-$v.txt 2>&1; echo "trace mixed $v rc=$?"
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B single --allocators veballoc --sizes 64 --iters 2 --trace --out $R/ts-$v > $R/trace-single-$v.txt 2>&1; echo "trace single $v rc=$?"
done
tar czf $OUT/r42-f.tgz -C /tmp r42-f
echo "done $(date +%T)"
