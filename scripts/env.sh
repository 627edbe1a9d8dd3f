# Sourced by the scripts (and by hand, from any folder: `source <veballoc>/scripts/env.sh`):
# where no CUDA driver is installed, binaries load the stub libcuda.so.1 from veballoc's
# .deps (it answers "no device"), so that they start and say so; ptxas from .deps is on PATH.
_veballoc_root=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  export LD_LIBRARY_PATH="$_veballoc_root/.deps/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export PATH="$_veballoc_root/.deps/cuda/bin:$PATH"
unset _veballoc_root
