#!/usr/bin/env bash
# Prints the folder whose bin/ holds peer benchmark binaries that start (for --peers), or
# nothing: .devbin/peers (built by scripts/build-peers.sh; built here first when .peers-src
# and an nvcc are at hand), else ../shared/peers if its binaries start (the copies there
# were once found truncated: they crash before main). A binary "starts" when run without
# arguments it prints its usage and exits 1 instead of crashing.
set -uo pipefail
cd "$(dirname "$0")/.."
starts() { [ -x "$1/bin/peer_gallatin" ] && { (exec "$1/bin/peer_gallatin") >/dev/null 2>&1; [ $? -eq 1 ]; } 2>/dev/null; }
if ! starts .devbin/peers && [ -d .peers-src ] && { [ -n "${NVCC:-}" ] || command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
  PEERS_ONLY=${PEERS_ONLY:-"peer_gallatin peer_cuda"} scripts/build-peers.sh >&2 || true
fi
for d in .devbin/peers ../shared/peers; do
  if starts "$d"; then
    echo "$d"
    exit 0
  fi
done
echo "peers: no peer binary that starts (see docs/peers.md); running without peers" >&2
