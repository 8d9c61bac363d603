#!/usr/bin/env bash
# Fails (exit 1) when a C++ file tracked by git, or new and not ignored, is not formatted with
# the project's .clang-format, listing each such file and the command that fixes it. `scripts/check_format.sh --fix` formats
# them in place. CI runs it as its `format` step; clang-format comes from Debian (ci_deps.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v clang-format >/dev/null || {
  echo "check_format: clang-format is not installed (apt-get install clang-format)" >&2
  exit 1
}
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.h' '*.cc' '*.cu')
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'check_format: not formatted with .clang-format: %s\n' "${bad[@]}" >&2
  echo "check_format: ${#bad[@]} of ${#files[@]} files; fix with scripts/check_format.sh --fix" >&2
  exit 1
fi
echo "check_format: all ${#files[@]} C++ files formatted ($(clang-format --version))"
