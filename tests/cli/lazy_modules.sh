#!/bin/sh
# ONNX's protobuf side, Graphviz, the window and the class server are modules opened on first
# use: a session of CPU work maps neither libprotobuf and libonnx, nor Graphviz, nor GLFW and
# OpenGL, nor cpp-httplib and SQLite; load_onnx opens the ONNX module.
# Usage: lazy_modules.sh OPSCOPE [MODEL.onnx] (no model: a build without ONNX)
bin=$1
model=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $1"; for f in "$dir"/*; do echo "--- $f"; cat "$f"; done; exit 1; }

# The REPL waits on its input while this script reads its memory map.
maps_after() {  # maps_after NAME STATEMENTS
  { printf '%s\nprint("ready")\n' "$2"; sleep 2; } | "$bin" repl > "$dir/$1.out" 2>&1 &
  pid=$!
  sleep 1
  [ -r /proc/$pid/maps ] || fail "the REPL exited early ($1)"
  cp /proc/$pid/maps "$dir/$1.maps"
  wait $pid
  grep -q "ready" "$dir/$1.out" || fail "the statements failed ($1)"
}

maps_after cpu 'x = randn(8, 8); y = relu(x @ x).sum()'
grep -Eq 'libprotobuf|libonnx|libopscope_onnx_proto' "$dir/cpu.maps" && fail "ONNX's libraries are mapped before any ONNX call"
grep -Eq 'libglfw|libOpenGL|libGLX|libX11|libopscope_window' "$dir/cpu.maps" && fail "the window's libraries are mapped without a window"
grep -Eq 'libgvc|libcgraph|libopscope_figures' "$dir/cpu.maps" && fail "Graphviz is mapped without a figure"
grep -Eq 'libcpp-httplib|libsqlite3|libssl|libopscope_class' "$dir/cpu.maps" && fail "the class server's libraries are mapped without \`opscope class\`"
[ -n "$model" ] || { echo "lazy modules: no ONNX, Graphviz or window library before their first use (no ONNX in this build)"; exit 0; }

maps_after model "m = load_onnx(\"$model\")"
grep -q 'libopscope_onnx_proto' "$dir/model.maps" || fail "load_onnx did not open the ONNX module"
grep -q 'libprotobuf' "$dir/model.maps" || fail "the ONNX module did not bring libprotobuf"
echo "lazy modules: no ONNX, Graphviz or window library before their first use, the ONNX module opened by load_onnx"
