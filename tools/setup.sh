#!/usr/bin/env bash
# Installs the Debian 12 packages opscope builds with. Idempotent: does nothing when all
# are present. Runs apt-get as root, or through sudo.
set -euo pipefail
packages=(build-essential cmake pkg-config libeigen3-dev catch2 nlohmann-json3-dev libcli11-dev libedit-dev libmd4c-dev zlib1g-dev
  # GUI (optional in CMake, installed here): Dear ImGui, GLFW, Graphviz, stb, Mesa, Xvfb for tests, fonts
  libimgui-dev libglfw3-dev libgraphviz-dev libstb-dev libgl1-mesa-dri xvfb xauth fonts-dejavu-core fonts-wqy-microhei
  # ONNX import/export (protobuf classes) and its backend test suite; Fashion-MNIST; BLAS and oneDNN
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata dataset-fashion-mnist libopenblas-dev libopenblas0-pthread libdnnl-dev libmimalloc-dev
  # clang and its libFuzzer: ctest fuzzes the language for 45 s (tests/fuzz/run_fuzzer.sh);
  # valgrind, whose virtual CPU has no AVX-512, runs the portable binary (tests/cli/portable.sh)
  clang libclang-rt-dev valgrind)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "opscope setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
