# r48 call d: sp = a row's slots spread over its words (the eight slots of a row of 1 MiB
# blocks were one 64-byte line: every waiter's poll and taker's add of the row at one L2
# line); sps = sp with waiters of rows of fewer than 64 slots sleeping up to 4096 ns (2048);
# ws = the committed tree (b4473f8a's kernels). Speed in turn, two rounds; frag one round.
R=/tmp/r48-d; source scripts/device-prelude.sh
warm ws sp sps
for v in ws sp sps; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 90 $B frag --rounds 1 --iters 1 --sizes 16,64,256,1024,4096 --allocators veballoc --out $R/frag-$v > $R/frag-$v.txt 2>&1; echo "frag $v rc=$?"
done
pack
for r in 1 2; do for v in ws sp sps; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,32,64,128,256,512,1024,2048,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 64,128,256,512,1024,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
for v in ws sp sps; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 45 $B single --allocators veballoc --threads 65536 --sizes 64,256,1024,4096 --out $R/t65k-$v > $R/threads65536-$v.txt 2>&1 || echo "exit $? t65k $v"
done
pack; echo "done $(date +%T)"
