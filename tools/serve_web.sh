#!/usr/bin/env bash
# Builds the browser version if needed and serves it on http://127.0.0.1:PORT/ (default 8000)
# for a teacher trying it, with the big files' compressed copies (.br, .gz) where the browser
# takes them. Any static web server serves build-web/site/ the same way (one that serves the
# .br/.gz copies, as nginx's gzip_static or Apache's MultiViews do, sends a fifth as much).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${OPSCOPE_WEB_BUILD:-$root/build-web}
port=${1:-8000}
"$root/tools/web_build.sh" "$build"
echo "opscope: http://127.0.0.1:$port/ (Ctrl-C stops the server)"
exec python3 "$root/tools/web_driver.py" serve "$build/site" "$port"
