#!/usr/bin/env bash
# Debian packages the CI's sanitizer and fuzz steps need beyond scripts/setup.sh's: clang and
# its sanitizer/libFuzzer runtimes (libclang-rt-dev), llvm-symbolizer for readable stacks,
# clang-format for the format check (scripts/check_format.sh); and Chromium with its chromedriver
# for the serve page's browser test (CTest serve_browser, tests/serve/browser_test.sh; skipped
# where they are missing, so scripts/test.sh alone does not install them).
# Installs only what is missing (apt-get, with sudo when not root); idempotent.
set -euo pipefail
PACKAGES=(clang clang-format libclang-rt-dev llvm chromium chromium-driver)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$pkg")
done
((${#missing[@]})) || exit 0
echo "[ci_deps] installing Debian packages: ${missing[*]}" >&2
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
