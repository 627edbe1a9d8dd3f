# Sourced by the scripts: where no CUDA driver is installed, binaries load the stub
# libcuda.so.1 from .deps (it answers "no device"), so that they start and say so.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  export LD_LIBRARY_PATH="$PWD/.deps/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export PATH="$PWD/.deps/cuda/bin:$PATH"
