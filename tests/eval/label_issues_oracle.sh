#!/usr/bin/env bash
# cleanlab's own code as the oracle of ltfit's label issues: tests/eval/label_issues_oracle.py
# writes random noisy-label cases, the hidden "[.label_issues_oracle]" test runs
# src/eval/label_issues.cpp on them and writes ltfit's thresholds, confident joints and ranked
# issues, and the script compares them with cleanlab's get_confident_thresholds,
# compute_confident_joint and find_label_issues (exactly). Usage: label_issues_oracle.sh
# LTFIT_TESTS_BINARY. Exits 77 (CTest: skipped) when Python cannot import cleanlab.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/../support/python_oracle.sh" "$1" "$HERE/label_issues_oracle.py" "[.label_issues_oracle]" LTFIT_LABEL_ISSUES_ORACLE_DIR \
  "numpy, cleanlab.filter" "cleanlab"
