#!/usr/bin/env bash
# On the GPU machine: GPU tests, the whole harness, the criterion GPU benches; everything is
# packed into OUT/NAME.tgz (one file, whatever the tool's file limits).
# Usage: scripts/device-full.sh OUT NAME [harness args, default: all --iters 5]
# With peer binaries that start (scripts/peers-dir.sh), the harness runs them too (--peers)
# unless the arguments name --peers.
set -uo pipefail
out=$1; name=$2; shift 2
[ $# -gt 0 ] || set -- all --iters 5
if ! printf '%s\n' "$@" | grep -qE '^--peers(=|$)'; then
  # Builds them from a carried .peers-src with the machine's nvcc if none start.
  peers=$(scripts/peers-dir.sh)
  [ -z "$peers" ] || set -- "$@" --peers "$peers"
fi
dir=$out/$name
scripts/device-run.sh "$dir" "$@"
echo "== criterion (host paths, GPU benches included)"
CRITERION_HOME=$dir/criterion timeout 200 .devbin/criterion-host --bench --warm-up-time 1 --measurement-time 3 2>&1 \
  | grep -vE "^\s*$" | tee "$dir/criterion.txt" | grep -E "time:|^[a-z_0-9/]+" | head -30
tar czf "$out/$name.tgz" -C "$out" "$name"
