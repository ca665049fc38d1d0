#!/bin/sh
# cmake --install into a temporary prefix, then the matmul example built out of tree with the
# installed CMake package and loaded by the installed binary. Args: CMAKE BUILD_DIR SOURCE_DIR.
set -eu
cmake="$1" build="$2" src="$3"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cmake" --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
test -x "$tmp/prefix/bin/opscope"
test -f "$tmp/prefix/include/opscope/core/op.h"
test -f "$tmp/prefix/include/opscope/ops/cpu_util.h"
test -f "$tmp/prefix/lib/cmake/opscope/opscopeConfig.cmake"
"$cmake" -S "$src/assets/examples/extensions" -B "$tmp/ext" -DCMAKE_BUILD_TYPE=Release \
  -Dopscope_DIR="$tmp/prefix/lib/cmake/opscope" > "$tmp/configure.log"
"$cmake" --build "$tmp/ext" --target register_blocked_matmul > "$tmp/build.log"
OPSCOPE_EXTENSION_CACHE="$tmp/cache" "$tmp/prefix/bin/opscope" --extension "$tmp/ext/register_blocked_matmul.so" -c '
a = randn(37, 29)
b = randn(29, 45)
assert allclose(matmul(a, b, algo="mine"), matmul(a, b, algo="naive"), atol=1e-4)
print("out-of-tree extension: ok")'
# --extension after the subcommand: gradcheck checks the loaded algorithm with the built-in ones.
OPSCOPE_EXTENSION_CACHE="$tmp/cache" "$tmp/prefix/bin/opscope" gradcheck matmul --extension "$tmp/ext/register_blocked_matmul.so" \
  > "$tmp/gradcheck.log"
grep -q "^matmul *mine " "$tmp/gradcheck.log" && grep -q " 0 failed" "$tmp/gradcheck.log"
echo "gradcheck --extension: ok"
