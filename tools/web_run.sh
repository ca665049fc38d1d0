#!/usr/bin/env bash
# The same run as `opscope gui --script SCRIPT ...` in the browser build, headless (see
# tools/web_run.py): tools/web_run.sh SCRIPT.ops OUT.png OUT.json [--lesson ID] [--lang zh]
# [--actions "..."] [--frames N]
exec python3 "$(dirname "$0")/web_run.py" "$@"
