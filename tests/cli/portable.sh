#!/bin/sh
# The portable binary on a CPU without AVX-512: valgrind's virtual CPU has none (its cpuid says
# AVX2), so opscope must choose its baseline kernels and never run an AVX-512 instruction, not
# even while building the kernel table it does not use; an AVX-512 instruction stops valgrind
# with "unrecognised instruction". The script touches each family of dispatched kernels.
# Usage: portable.sh OPSCOPE
bin=$1
if ! command -v valgrind > /dev/null 2>&1; then
  echo "SKIPPED: valgrind not installed (tools/setup.sh installs it)"
  exit 77
fi
script='
x = randn(4, 3, 8, 8)
w = param(randn(5, 3, 3, 3))
y = max_pool2d(relu(conv2d(x, w, padding=1)), 2) + avg_pool2d(x.sum(axis=1, keepdims=True), 2)
h = layer_norm(softmax(y.reshape(4, 80), axis=1), 80)
q = randn(2, 2, 16, 8)
a = scaled_dot_product_attention(q, q, q, causal=True)
m = matmul(randn(40, 30), randn(30, 20), algo="eigen") + matmul(randn(40, 30), randn(30, 20), algo="blas")
backward((h * h).sum() + gelu(a).sum())
print("portable:", w.grad.shape, m.shape)
'
out=$(valgrind --tool=none --error-exitcode=1 "$bin" -c "$script" 2>&1)
rc=$?
echo "$out" | grep -v '^==' | tail -5
if [ $rc -ne 0 ] || echo "$out" | grep -q "unrecognised instruction\|Unrecognised instruction"; then
  echo "$out" | tail -40
  echo "FAILED: opscope did not run on a CPU without AVX-512 (rc $rc)"
  exit 1
fi
echo "$out" | grep -q "portable: \[5, 3, 3, 3\] \[40, 20\]" || { echo "FAILED: unexpected output"; exit 1; }
echo "portable: ok"
