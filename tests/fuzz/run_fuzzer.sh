#!/bin/sh
# CI's short fuzzing run: builds the libFuzzer target with clang (no CUDA, no GUI, no tests)
# in BUILD, then fuzzes the language for SECONDS from the corpus. New inputs go to a scratch
# copy, never into the source tree; a crash leaves its input in BUILD/crash-* and fails.
# Usage: run_fuzzer.sh CLANGXX SOURCE_DIR BUILD SECONDS [COMPILER_LAUNCHER]
set -eu
clangxx=$1 src=$2 build=$3 seconds=$4 launcher=${5:-}
clang=$(dirname "$clangxx")/$(basename "$clangxx" | sed 's/++//')
start=$(date +%s)
# This build is the largest part of CI's time on two cores (12 of 34 minutes on the Zen 3 VM),
# so it holds only what the language fuzzer runs: no ONNX (fuzz_onnx_regression covers the
# importer), the baseline kernels alone (the AVX-512 set took ~30 s of it), and line tables
# rather than full debug information (stack traces keep their lines). Still -O2: at -O0 the fuzzer ran 1 input a second instead of ~150.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O2 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_FLAGS="-O2 -gline-tables-only -DNDEBUG" -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_C_COMPILER="$clang" \
  -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" -DCMAKE_C_COMPILER_LAUNCHER="$launcher" \
  -DOPSCOPE_FUZZ=ON -DOPSCOPE_TESTS=OFF -DOPSCOPE_BENCH=OFF -DOPSCOPE_CUDA=OFF -DOPSCOPE_GUI=OFF -DOPSCOPE_ONNX=OFF \
  -DOPSCOPE_AVX512_KERNELS=OFF \
  > "$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
cmake --build "$build" --target fuzz_lang -j2 > "$build.build.log" 2>&1 || { tail -50 "$build.build.log"; exit 1; }
built=$(date +%s)
echo "fuzz_lang built in $((built - start)) s"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$src"/tests/fuzz/corpus/* "$work"/
"$build/fuzz_lang" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
  -artifact_prefix="$build/" -dict="$src/tests/fuzz/lang.dict" "$work" 2>&1 | tail -25
echo "fuzzed for $(( $(date +%s) - built )) s"
