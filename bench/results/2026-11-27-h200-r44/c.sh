set -uo pipefail
# r44 call c: where the landed routing's time goes at 2^20 mixed: head (e2bbd1ac), new (the
# landed tree, call b's), nomark (new with the bound marking compiled out: usable_size of
# packed objects broken, for timing only), r512 (call a's probe: per-lane bands + r43's routing
# knobs, no bounds); packed subcommand, in turn, three rounds.
R=/tmp/r44-c; mkdir -p $R
gunzip -f .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx | tee $R/ptx-md5.txt
V="head new nomark r512"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
wait; echo "jit done $(date +%T)"
for r in 1 2 3; do for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
done; echo "round $r $(date +%T)"; done
rm -rf $R/*/*.svg; tar czf $OUT/r44-c.tgz -C /tmp r44-c
echo "done $(date +%T)"
