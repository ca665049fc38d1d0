#!/usr/bin/env bash
# Installs the Debian 12 packages opscope builds with. Idempotent: does nothing when all
# are present. Runs apt-get as root, or through sudo.
set -euo pipefail
packages=(build-essential cmake pkg-config libeigen3-dev catch2 nlohmann-json3-dev libcli11-dev libedit-dev libmd4c-dev zlib1g-dev
  # GUI (optional in CMake, installed here): Dear ImGui, GLFW, Graphviz, stb, Mesa, Xvfb for tests, fonts
  libimgui-dev libglfw3-dev libgraphviz-dev libstb-dev libgl1-mesa-dri xvfb xauth fonts-dejavu-core fonts-wqy-microhei
  # The human-input tests (tests/human/): real X events, the X clipboard, screenshots of the display
  xdotool xclip imagemagick
  # ONNX import/export (protobuf classes) and its backend test suite; Fashion-MNIST; BLAS and oneDNN
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata dataset-fashion-mnist libopenblas-dev libopenblas0-pthread libdnnl-dev libmimalloc-dev
  # clang and its libFuzzer: ctest fuzzes the language for 45 s (tests/fuzz/run_fuzzer.sh);
  # valgrind, whose virtual CPU has no AVX-512, runs the portable binary (tests/cli/portable.sh)
  clang libclang-rt-dev valgrind
  # clang-format: ctest checks every source's layout (tools/check_format.sh)
  clang-format
  # The browser build (tools/web_build.sh): Emscripten, Graphviz's build tools, and the headless
  # Chromium its tests run the site in (tools/web_run.sh)
  emscripten bison flex gawk chromium brotli
  # The simulated CUDA device (gpusim/): lanes as fibers; the class server (app/class/): HTTP and SQLite
  libboost-context-dev libcpp-httplib-dev libsqlite3-dev)
# The browser build compiles with emcc the libraries the desktop takes from binary packages:
# their Debian source packages (apt-get source), kept here. No code of theirs is in the tree.
sources=(imgui md4c graphviz protobuf zlib expat)
source_dir=/usr/local/src/opscope-debian
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
missing_sources=()
for p in "${sources[@]}"; do
  compgen -G "$source_dir/${p}_*.orig.tar.*" >/dev/null || missing_sources+=("$p")
done
if [ ${#missing[@]} -eq 0 ] && [ ${#missing_sources[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# deb-src entries for the archives the binary packages come from (Debian's deb822 files).
if [ ${#missing_sources[@]} -gt 0 ] && ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
  for f in /etc/apt/sources.list.d/debian.sources; do
    [ -f "$f" ] || continue
    sed 's/^Types: deb$/Types: deb-src/' "$f" | $SUDO tee /etc/apt/sources.list.d/opscope-deb-src.sources >/dev/null
  done
  if [ -f /etc/apt/sources.list ] && grep -q '^deb ' /etc/apt/sources.list; then
    grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' | $SUDO tee /etc/apt/sources.list.d/opscope-deb-src.list >/dev/null
  fi
fi
$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "opscope setup: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ${#missing_sources[@]} -gt 0 ]; then
  echo "opscope setup: downloading the source packages ${missing_sources[*]} into $source_dir"
  $SUDO mkdir -p "$source_dir"
  # --download-only: the upstream tarball is what the build unpacks. apt-get fails the whole call
  # when one Debian patch file is missing from a mirror (md4c's was, here), so each package is
  # fetched alone and judged by its upstream tarball.
  # The newest version first (a security update), else bookworm's own, which some mirrors
  # keep when they lack the update's source (zlib's, here).
  for p in "${missing_sources[@]}"; do
    for which in "$p" "$p/bookworm"; do
      (cd "$source_dir" && $SUDO apt-get source -qq --download-only "$which" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
      compgen -G "$source_dir/${p}_*.orig.tar.*" >/dev/null && break
    done
    compgen -G "$source_dir/${p}_*.orig.tar.*" >/dev/null || { echo "opscope setup: apt-get source $p failed" >&2; exit 1; }
  done
fi
