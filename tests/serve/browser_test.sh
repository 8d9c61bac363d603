#!/usr/bin/env bash
# `ltfit serve`'s page in a real browser (tests/serve/browser_test.py): Debian's Chromium,
# headless, driven through Debian's chromedriver by Selenium from PyPI, opens the page, chooses an
# image, reads the predicted class and percentages against urllib's answer, toggles Grad-CAM, and
# saves a screenshot as the test's artefact: $LTFIT_ARTIFACT_DIR/serve_browser.png, else
# BUILD_DIR/Testing/artifacts/serve_browser.png. Selenium Manager is never used (no network):
# the browser and the driver are given by path.
# Exits 77 (CTest: skipped) naming what is missing: Chromium, chromedriver (scripts/ci_deps.sh
# installs both, as CI does) or Python selenium (scripts/bench_deps.sh).
# LTFIT_CHROMIUM and LTFIT_CHROMEDRIVER name other binaries (or hide them: a path that is not
# there counts as missing).
#
#   tests/serve/browser_test.sh path/to/ltfit [BUILD_DIR]   (BUILD_DIR: default the binary's folder)
set -uo pipefail

LTFIT="$(realpath "${1:?usage: $0 path/to/ltfit [BUILD_DIR]}")"
BUILD_DIR="${2:-$(dirname "$LTFIT")}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
SELENIUM_PIN="selenium==4.51.0"  # as scripts/bench_deps.sh installs

CHROMIUM="${LTFIT_CHROMIUM-$(command -v chromium || command -v chromium-browser)}"
CHROMEDRIVER="${LTFIT_CHROMEDRIVER-$(command -v chromedriver)}"
missing=()
[[ -n "$CHROMIUM" && -x "$CHROMIUM" ]] ||
  missing+=("Chromium (apt-get install chromium; scripts/ci_deps.sh)")
[[ -n "$CHROMEDRIVER" && -x "$CHROMEDRIVER" ]] ||
  missing+=("chromedriver (apt-get install chromium-driver; scripts/ci_deps.sh)")
"$PYTHON" -c "import selenium" 2>/dev/null ||
  missing+=("Python selenium ($PYTHON -m pip install $SELENIUM_PIN; scripts/bench_deps.sh)")
if ((${#missing[@]})); then
  printf -v list '%s, ' "${missing[@]}"
  echo "SKIPPED: the browser test of the serve page needs ${list%, }"
  exit 77
fi

ARTIFACT_DIR="${LTFIT_ARTIFACT_DIR:-$BUILD_DIR/Testing/artifacts}"
exec env OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" "$PYTHON" -u "$HERE/browser_test.py" \
  --ltfit "$LTFIT" --chromium "$CHROMIUM" --chromedriver "$CHROMEDRIVER" \
  --screenshot "$ARTIFACT_DIR/serve_browser.png"
