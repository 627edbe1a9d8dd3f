#!/usr/bin/env bash
# The project's test command: installs what is missing, lints, builds the PTX, and runs every
# test that this machine can run:
#  - the workspace's tests without the safety checks (what the benchmarks and users run);
#  - the CPU suite (tests/cpu_*.rs) and the PTX checks again with the checks
#    (`--features checks`: the CPU model's double-free detection, and the checks PTX);
#  - the loom models.
# GPU tests (tests/gpu*.rs) are #[ignore]d: here they count as ignored, never as passed. On a
# GPU machine they run with `--ignored --test-threads=1` (scripts/device-run.sh and
# device-safety.sh; VEBALLOC_GPU_TESTS=1 runs them here too). The last line sums the counts.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/env.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "== cargo fmt --check, cargo clippy -D warnings"
cargo fmt --all -- --check
cargo clippy --workspace --release --all-targets -- -D warnings 2>&1
# The install-path trace build (`--features trace`, for profiles on the GPU) compiles only
# with the feature on: lint it too, so that it cannot rot between probes.
cargo clippy -p veballoc-kernels --release --all-targets --features trace -- -D warnings 2>&1
echo "== API docs build without warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p veballoc -p veballoc-kernels -p veballoc-ptx-build 2>&1
echo "== cargo test, without the safety checks (workspace: CPU heap, vEB, host, PTX; GPU tests ignored)"
cargo test --workspace --release 2>&1 | tee -a "$log"
echo "== CPU suite and PTX again, with the safety checks (--features checks)"
cargo test --release -p veballoc --features checks --test 'cpu_*' --test ptx 2>&1 | tee -a "$log"
# The kernels' own unit tests that need the checks (validator checks of the hand-out bitmap).
cargo test --release -p veballoc-kernels --features checks --lib 2>&1 | tee -a "$log"
if [ "${VEBALLOC_GPU_TESTS:-0}" = 1 ]; then
  echo "== GPU tests (VEBALLOC_GPU_TESTS=1), one at a time"
  # The checks PTX that the step above built, for the tests that need the checks.
  VEBALLOC_CHECKS_PTX_FILE=$PWD/target/ptx-checks/nvptx64-nvidia-cuda/release/veballoc_kernels.ptx \
    cargo test --release -p veballoc --test 'gpu*' -- --ignored --test-threads=1 2>&1 | tee -a "$log"
fi
echo "== loom models (RUSTFLAGS=--cfg loom)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p veballoc-kernels --release --test loom 2>&1 \
  | tee -a "$log"
# Every `test result:` line above, summed.
awk '/^test result:/ { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^(passed|failed|ignored|filtered)/) n[$(i + 1)] += $i }
  END { printf "== all tests: %d passed, %d failed, %d ignored (GPU tests: run on a GPU machine)\n",
        n["passed;"], n["failed;"], n["ignored;"] }' "$log"
