#!/usr/bin/env bash
# Builds what a GPU machine without Rust needs into .devbin/ (git-ignored): every GPU test
# binary (tests/gpu*.rs, into .devbin/tests/), the benchmark harness and the PTX (without and
# with the safety checks). Carry .devbin to the device and run scripts/device-run.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
rm -rf .devbin/tests .devbin/gpu-tests # .devbin/gpu-tests: the single binary of older bundles
mkdir -p .devbin/tests
# Every test target named gpu*: its executable, as cargo reports it.
cargo test --release -p veballoc --test 'gpu*' --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import sys,json
for l in sys.stdin:
    m=json.loads(l)
    t=m.get("target") or {}
    if m.get("reason")=="compiler-artifact" and m.get("executable") and t.get("kind")==["test"] and t["name"].startswith("gpu"):
        print(t["name"], m["executable"])' \
  | while read -r name exe; do cp "$exe" ".devbin/tests/$name"; done
if [ -z "$(ls .devbin/tests)" ]; then
  echo "device-bundle: no GPU test binary was built" >&2
  exit 1
fi
cargo build --release -p veballoc-bench -p graph-example -p collections-example
cp target/release/veballoc-bench target/release/graph-example target/release/collections-example .devbin/
benchexe=$(cargo bench -p veballoc-bench --bench host --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import sys,json
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"]=="host": print(m["executable"])' | tail -n1)
cp "$benchexe" .devbin/criterion-host
cp target/ptx/nvptx64-nvidia-cuda/release/veballoc_kernels.ptx .devbin/veballoc.ptx
# The same kernels with the safety checks, for VEBALLOC_PTX_FILE (cost and detection runs)
# and VEBALLOC_CHECKS_PTX_FILE (the GPU tests that need the checks).
cargo build --release --features checks
cp target/ptx-checks/nvptx64-nvidia-cuda/release/veballoc_kernels.ptx .devbin/veballoc-checks.ptx
strip .devbin/tests/* .devbin/veballoc-bench .devbin/criterion-host .devbin/graph-example .devbin/collections-example
# The peer allocators' binaries (about 5 MB), for the harness's --peers: built here by
# scripts/build-peers.sh when an nvcc is at hand (NVCC=...), else copied from ../shared/peers
# if those start; otherwise scripts/device-full.sh builds them on the GPU machine from the
# carried .peers-src (see docs/peers.md).
peers=$(scripts/peers-dir.sh)
if [ -n "$peers" ] && [ "$peers" != .devbin/peers ]; then
  install -D -m 755 -t .devbin/peers/bin "$peers"/bin/*
fi
ls -la .devbin .devbin/tests
