#!/bin/sh
# A CUDA-enabled opscope starts no CUDA runtime until something asks for the device: a session
# of CPU work never maps the driver or cuBLAS and stays small; cuda_available() starts it.
# Usage: lazy_cuda.sh OPSCOPE CUDA_BUILT(0|1)
bin=$1
cuda_built=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $1"; for f in "$dir"/*; do echo "--- $f"; cat "$f"; done; exit 1; }

# CPU work, then the REPL waits on its input while this script looks at the process.
{ printf 'x = randn(64, 64)\ny = (x @ x).sum()\nprint(cuda_initialized())\n'; sleep 2; } |
  "$bin" repl > "$dir/repl.out" 2> "$dir/repl.err" &
pid=$!
sleep 1
[ -r /proc/$pid/maps ] || fail "the REPL exited early"
cp /proc/$pid/maps "$dir/maps"
grep VmHWM /proc/$pid/status > "$dir/status"
wait $pid
grep -q "^False" "$dir/repl.out" || fail "cuda_initialized() is not False after CPU work"
grep -Eq 'libcuda\.so|libcublas' "$dir/maps" && fail "the CUDA driver or cuBLAS is mapped before any device use"
hwm_kb=$(awk '{print $2}' "$dir/status")
# The CUDA runtime with cuBLAS costs ~220 MB; without them opscope's REPL stays well under 64 MB.
[ "$hwm_kb" -lt 65536 ] || fail "resident memory reached $hwm_kb kB before any device use"

"$bin" -c 'a = cuda_available()
print(cuda_initialized())' > "$dir/after.out" 2>&1 || fail "opscope -c failed"
if [ "$cuda_built" = 1 ]; then
  grep -q "^True" "$dir/after.out" || fail "cuda_available() did not start the CUDA runtime"
else
  grep -q "^False" "$dir/after.out" || fail "a build without CUDA says its runtime started"
fi
echo "lazy CUDA: no runtime before the first device use (peak ${hwm_kb} kB), started by cuda_available()"
