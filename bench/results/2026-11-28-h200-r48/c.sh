# r48 call c: ws = installs that want a whole segment's blocks (runs of sixteen 1 MiB blocks)
# take a fresh segment directly while the group's tree looks empty, instead of missing in the
# tree twice around the formatter semaphore; final = the bundle (675e17ff). Trace builds of
# both (installs, claim and tree time), frag, speed in turn (two rounds), churn.
R=/tmp/r48-c; source scripts/device-prelude.sh
cp .devbin/veballoc.ptx .devbin/var/final.ptx
warm final ws rt-trace ws-trace
for v in rt-trace ws-trace; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 90 $B single --allocators veballoc --sizes 256,1024,2048,4096 --iters 1 --trace --out $R/t-$v > $R/trace-$v.txt 2>&1; echo "trace $v rc=$?"
done
pack
for v in final ws; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 90 $B frag --rounds 1 --iters 1 --sizes 512,1024,2048,3000,4096,8192 --allocators veballoc --out $R/frag-$v > $R/frag-$v.txt 2>&1; echo "frag $v rc=$?"
done
pack
for r in 1 2; do for v in final ws; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 256,512,1024,2048,3000,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 1024,2048,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  timeout 45 $B single --allocators veballoc --threads 262144 --sizes 8192 --out $R/s8k-$v-$r > $R/s8k-$v-$r.txt 2>&1 || echo "exit $? s8k $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
for live in 0.5 0.7; do VEBALLOC_PTX_FILE=.devbin/var/ws.ptx timeout 60 $B churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live rc=$?"; grep -a "churn:" $R/churn-$live.txt | tail -1; done
pack; echo "done $(date +%T)"
