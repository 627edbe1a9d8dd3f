# r37 call a: where small launches of 64/512/8192 B go past 2^13 threads (trace.ptx), and the
# install waiters' backoff capped at 128 / 512 ns (exp-bk128/512) against base, in turn.
set -u
R=/tmp/r37-a; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench; V=(base trace exp-bk128 exp-bk512)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt; date -u +%FT%TZ >> $R/device.txt
for v in ${V[@]}; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for n in 256 8192 16384 65536; do VEBALLOC_PTX_FILE=.devbin/var/trace.ptx timeout 60 $B single --threads $n --sizes 64,512,8192 --iters 2 --trace --allocators veballoc --out /tmp/t > $R/trace-$n.txt 2>&1; done
echo "trace done $(date +%T)"
for r in 1 2; do for v in base exp-bk128 exp-bk512; do
  P=.devbin/var/$v.ptx
  for n in 1 64 1024 8192 16384 65536; do
    VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --threads $n --sizes 64,512,8192 --out /tmp/s > $R/s$n-$v-$r.txt 2>&1
  done
  VEBALLOC_PTX_FILE=$P timeout 60 $B single --allocators veballoc --sizes 16,64,256,4096 --out /tmp/s > $R/big-$v-$r.txt 2>&1
done; done
echo "ab done $(date +%T)"
cd /tmp && tar czf $OUT/r37-a.tgz r37-a
