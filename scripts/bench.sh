#!/usr/bin/env bash
# The project's main command: the benchmark harness. Installs what is missing, builds, and
# runs `veballoc-bench` with the given arguments (default: `all`). Results go to
# bench/results/latest unless --out says otherwise. Without a GPU, frag, oom, util and churn
# (and those four of `all`) run the CPU model of the heap: the same allocator source on CPU
# threads, labelled as such, with CPU times, results in bench/results/cpu-model; the other
# subcommands say that they need a GPU and exit 2.
# Where peer binaries that start are at hand (scripts/peers-dir.sh: .devbin/peers, built by
# scripts/build-peers.sh, or ../shared/peers), the peer allocators run in the same invocation
# (--peers DIR) unless the arguments name --peers themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
source scripts/env.sh
cargo build --release -p veballoc-bench >&2
[ $# -gt 0 ] || set -- all
if ! printf '%s\n' "$@" | grep -qE '^--peers(=|$)'; then
  peers=$(scripts/peers-dir.sh)
  [ -z "$peers" ] || set -- "$@" --peers "$peers"
fi
exec target/release/veballoc-bench "$@"
