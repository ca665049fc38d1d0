#!/usr/bin/env bash
# Checks that every C++ and CUDA source in the tree is as clang-format (.clang-format, Debian's
# clang-format 14) writes it. The tree was formatted once in one go; this keeps it so.
# Usage: tools/check_format.sh [--fix]     (run from anywhere; exits 1 and names the files if not)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
formatter="$(command -v clang-format-14 || command -v clang-format || true)"
if [ -z "$formatter" ]; then
  echo "check_format: clang-format not found; tools/setup.sh installs it (Debian's clang-format)" >&2
  exit 2
fi
# The tracked sources; outside a git checkout, the same folders by name.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' '*.c')
else
  mapfile -t files < <(find app bench core gpusim ops platform tests tools viz \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.c' \) | sort)
fi
if [ "${1:-}" = "--fix" ]; then
  printf '%s\0' "${files[@]}" | xargs -0 "$formatter" -i
  exit 0
fi
unformatted=()
for f in "${files[@]}"; do
  "$formatter" --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
done
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "check_format: ${#unformatted[@]} of ${#files[@]} files differ from clang-format's layout:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "fix them with: tools/check_format.sh --fix   (or clang-format -i FILE)" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files as clang-format writes them"
