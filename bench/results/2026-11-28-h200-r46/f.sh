set -uo pipefail
# r46 call f: free at 4 KiB, kernel time against event time. d/'s event-timed frees (the
# README's protocol) gave veballoc 0.031-0.067 ms at 4 KiB against Gallatin's 0.028-0.035; e/'s
# ncu (locked clocks) gave vb_free 26 us. Here every free (and alloc) kernel's duration by ncu
# with the GPU's own clocks (--clock-control none), veballoc (cv) and Gallatin, single 16, 1024
# and 4096 B, 2^20 threads, 5 iterations after a warm-up each, beside their event times.
R=/tmp/r46-f; mkdir -p $R
gunzip -f .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r46-f.tgz -C /tmp r46-f; }
(rm -rf .devbin/peers; PEERS_ONLY=peer_gallatin bash scripts/build-peers.sh > $R/build-peers.txt 2>&1; echo "peer build rc=$? $(date +%T)") &
VEBALLOC_PTX_FILE=.devbin/var/cv.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > $R/jit.txt 2>&1 &
wait; echo "jit done $(date +%T)"
M=(--clock-control none --metrics gpu__time_duration.sum --csv)
for s in 16 1024 4096; do
  VEBALLOC_PTX_FILE=.devbin/var/cv.ptx timeout 100 ncu "${M[@]}" --kernel-name regex:"vb_(malloc|free)$" $B single --allocators veballoc --sizes $s --iters 5 --out $R/vb-$s > $R/ncu-vb-$s.csv 2>&1; echo "vb $s rc=$? $(date +%T)"
  timeout 100 ncu "${M[@]}" --kernel-name regex:"d_(alloc_fixed|free)" .devbin/peers/bin/peer_gallatin single 1048576 $s --iters 5 --warmup 1 --csv $R/gal-$s-events.csv > $R/ncu-gal-$s.csv 2>&1; echo "gal $s rc=$? $(date +%T)"
  pack
done
# The same runs without ncu (event times alone), for the ratio under the README's protocol.
for s in 16 1024 4096; do VEBALLOC_PTX_FILE=.devbin/var/cv.ptx timeout 60 $B single --allocators veballoc --sizes $s --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/ev-$s > $R/ev-$s.txt 2>&1; done
pack; echo "done $(date +%T)"
