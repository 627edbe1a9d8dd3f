# r47 call i, on an **H100** (nvidia-h100-x1): the committed tree (the bundle, 165d235c's device
# code) with Gallatin side by side (the README's protocol), frag and churn 50/70%, and one
# round of speed in turn against head (b8802c73), for issue 9's record on its named GPU. The
# GPU suites ran on this device code on the H200 (h/).
R=/tmp/r47-i; source scripts/device-prelude.sh
(rm -rf .devbin/peers; PEERS_ONLY=peer_gallatin bash scripts/build-peers.sh > $R/build-peers.txt 2>&1; echo "peer build rc=$? $(date +%T)") &
warm head
for cmd in single mixed; do
  timeout 150 $B $cmd --allocators veballoc --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
  echo "$cmd with peers $(date +%T)"; pack
done
timeout 120 $B frag --rounds 1 --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$? $(date +%T)"
for live in 0.5 0.7; do timeout 60 $B churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live rc=$?"; grep -a "churn:" $R/churn-$live.txt | tail -1; done
pack
cp .devbin/veballoc.ptx .devbin/var/final.ptx
for v in head final; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,32,48,64,256,4096 --out $R/s-$v-1 > $R/single-$v-1.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,128,256,512,4096 --out $R/m-$v-1 > $R/mixed-$v-1.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done
pack; echo "done $(date +%T)"
