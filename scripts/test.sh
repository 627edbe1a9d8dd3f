#!/usr/bin/env bash
# The project's test command: installs what is missing, builds the PTX, checks it assembles
# for Hopper (ptxas from .deps), and runs every test. GPU tests skip with a message when
# there is no GPU; the CPU tests and loom models carry the weight.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/env.sh
echo "== cargo fmt --check, cargo clippy -D warnings"
cargo fmt --all -- --check
cargo clippy --workspace --release --all-targets -- -D warnings 2>&1
echo "== API docs build without warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p veballoc -p veballoc-kernels -p veballoc-ptx-build 2>&1
echo "== cargo test (workspace: CPU heap, vEB, host, GPU tests that skip without a GPU)"
cargo test --workspace --release 2>&1
echo "== GPU tests again, uncaptured, so that a skip says why (one at a time where a GPU exists)"
cargo test --release --test gpu -- --nocapture --test-threads=1 2>&1
echo "== loom models (RUSTFLAGS=--cfg loom)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p veballoc-kernels --release --test loom 2>&1
