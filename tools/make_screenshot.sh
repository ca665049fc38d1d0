#!/usr/bin/env bash
# Regenerates docs/screenshot.png: the app's own picture of itself in the middle of a backward
# pass of a small MLP (tests/gui/mlp.ops), rendered headless under Xvfb with Mesa.
# Usage: tools/make_screenshot.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
bin="$build/opscope"
[ -x "$bin" ] || { echo "no $bin: build opscope with the GUI first" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "xvfb-run is missing: tools/setup.sh installs it" >&2; exit 1; }
out="$root/docs/screenshot.png"
mkdir -p "$root/docs"
LIBGL_ALWAYS_SOFTWARE=1 xvfb-run -a -s "-screen 0 1600x1000x24" \
  "$bin" gui --script "$root/tests/gui/mlp.ops" --size 1600x1000 --frames 40 \
  --actions "step 5;select n2" --screenshot "$out" --state-json "$build/screenshot_state.json"
echo "wrote $out"
