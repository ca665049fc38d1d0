#!/usr/bin/env bash
# Builds the browser version into BUILD_DIR/site (default build-web/site): emcmake configures
# the same CMakeLists.txt for Emscripten, whose libraries come from Debian's source packages
# (tools/setup.sh downloads them). About 14 minutes on two cores the first time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-web}
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}  # emcc's JavaScript tools need Debian's acorn
if [ ! -f "$build/CMakeCache.txt" ]; then
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
  emcmake cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
fi
cmake --build "$build" -j"${OPSCOPE_WEB_JOBS:-2}"
echo "the site: $build/site (serve it with tools/serve_web.sh, or copy it to any static web server)"
