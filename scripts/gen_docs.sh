#!/usr/bin/env bash
# Regenerates the generated documentation: docs/config.md, the config reference, from the config
# loader's own field lists (ltfit::config_reference_markdown(), include/ltfit/config/
# config_reference.h). The test "docs/config.md is config_reference_markdown()" fails until it is
# rerun after a config key changes. Needs a build of the tests (cmake --build BUILD_DIR --target
# ltfit_tests); the test binary writes the file when LTFIT_WRITE_DOCS=1, then checks it.
#
#   scripts/gen_docs.sh [BUILD_DIR]     # BUILD_DIR: default build/ of this repository
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
TESTS="$BUILD/tests/ltfit_tests"
TEST_NAME="docs/config.md is config_reference_markdown()"

if [[ ! -x "$TESTS" ]]; then
  echo "gen_docs.sh: $TESTS not found; build it first: cmake --build $BUILD --target ltfit_tests" >&2
  exit 2
fi
LTFIT_WRITE_DOCS=1 "$TESTS" "$TEST_NAME" >/dev/null
"$TESTS" "$TEST_NAME" >/dev/null || {
  echo "gen_docs.sh: docs/config.md was written but does not match; was $TESTS built from" \
       "$ROOT?" >&2
  exit 5
}
echo "gen_docs.sh: wrote $ROOT/docs/config.md"
