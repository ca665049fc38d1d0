#!/usr/bin/env bash
# Builds the browser version if needed and serves it on http://127.0.0.1:PORT/ (default 8000)
# for a teacher trying it. Any static web server serves build-web/site/ the same way.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${OPSCOPE_WEB_BUILD:-$root/build-web}
port=${1:-8000}
"$root/tools/web_build.sh" "$build"
echo "opscope: http://127.0.0.1:$port/ (Ctrl-C stops the server)"
exec python3 -m http.server --bind 127.0.0.1 --directory "$build/site" "$port"
