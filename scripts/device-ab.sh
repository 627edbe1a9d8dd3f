#!/usr/bin/env bash
# On the GPU machine: an A/B of PTX builds, then the harness with the peers, in one call.
# Usage: scripts/device-ab.sh OUT NAME ROUNDS A.ptx B.ptx [...]
#  - ROUNDS rounds of `single` and `mixed` (veballoc and the floors only: CUDA's malloc takes
#    seconds a point) for each PTX in turn (A, B, ..., A, B, ...), so that drift between calls
#    cannot pass for a difference;
#  - `single`, `mixed` and `scaling` on the bundle's own PTX with Gallatin side by side
#    (`--peers`, from scripts/peers-dir.sh), for the results tables;
#  - everything packed into OUT/NAME.tgz (the device tool brings back only a few files).
# Prints one line per size and PTX: the alloc and free medians of each round.
set -uo pipefail
out=${1:?output folder}; name=${2:?name}; rounds=${3:?rounds}; shift 3
dir=$out/$name
mkdir -p "$dir"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$dir/device.txt"
date -u +%Y-%m-%dT%H:%M:%SZ | tee -a "$dir/device.txt"
bench=.devbin/veballoc-bench
only=(--allocators veballoc,floor --iters 5)
for r in $(seq 1 "$rounds"); do
  for ptx in "$@"; do
    v=$(basename "$ptx" .ptx)
    for cmd in single mixed; do
      echo "== round $r $v $cmd"
      VEBALLOC_PTX_FILE=$ptx timeout 120 "$bench" "$cmd" "${only[@]}" --out "$dir/ab-r$r-$v" \
        > "$dir/ab-r$r-$v-$cmd.txt" 2>&1 || echo "exit $? (see $dir/ab-r$r-$v-$cmd.txt)"
    done
  done
done
peers=$(scripts/peers-dir.sh)
peer_args=()
[ -z "$peers" ] || peer_args=(--peers "$peers" --peers-list gallatin)
for cmd in single mixed scaling; do
  echo "== $cmd with ${peers:-no peers}"
  timeout 240 "$bench" "$cmd" --allocators veballoc,floor --iters 5 "${peer_args[@]}" --out "$dir/bench" \
    > "$dir/$cmd.txt" 2>&1 || echo "exit $? (see $dir/$cmd.txt)"
done
# The medians side by side: size, then alloc/free per PTX and round.
for cmd in single mixed; do
  echo "== $cmd: alloc / free medians (ms), per round and PTX"
  for f in "$dir"/ab-r*-"$cmd".txt; do
    tag=$(basename "$f" "-$cmd.txt")
    grep -a '|' "$f" | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' \
      | awk -F'|' -v t="$tag" '{ split($2, a, " "); printf "%-8s %-22s %s / %s\n", $1, t, a[1], a[2] }'
  done | sort -s -k1,1V # the progress output's \r removed above; V sorts ≤64 after 4096
done
tar czf "$out/$name.tgz" -C "$out" "$name"
