#!/bin/sh
# The GUI's lesson panel on an exercise: read on to matmul-backward, check the starter (it fails),
# reveal a hint, then View ▸ Present and View ▸ Zoom 150 %. The attempt, the hint and the zoom
# must reach the progress file, and the screenshot is written for a person to look at.
# Usage: gui_exercise.sh XVFB_RUN OPSCOPE LESSONS_DIR OUT.png
xvfb=$1
bin=$2
lessons=$3
png=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $1"; for f in "$dir"/*.json "$dir"/*.txt; do echo "--- $f"; head -c 3000 "$f"; done; exit 1; }

OPSCOPE_LESSONS=$lessons XDG_CONFIG_HOME=$dir/config XDG_DATA_HOME=$dir/data LIBGL_ALWAYS_SOFTWARE=1 \
  "$xvfb" -a -s "-screen 0 1600x1000x24" "$bin" gui --lesson 4 --frames 14 \
  --actions "lesson exercise matmul-backward;lesson check;lesson hint;view present;view zoom 1.5" \
  --screenshot "$png" --state-json "$dir/state.json" > "$dir/out.txt" 2>&1 || fail "the window exited $?"
grep -q '"present": true' "$dir/state.json" || fail "presentation mode is not on"
grep -q '"ui_zoom": 1.5' "$dir/state.json" || fail "the zoom is not 150 %"
progress=$dir/config/opscope/progress.json
grep -q '"zoom": 1.5' "$progress" || fail "the zoom was not remembered"
grep -q '"attempts": 1' "$progress" || fail "the attempt was not remembered"
grep -q '"hints": 1' "$progress" || fail "the hint was not remembered"
grep -q '"passed": false' "$progress" || fail "the starter passed"
echo "gui exercise: ok"
