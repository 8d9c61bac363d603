#!/usr/bin/env bash
# Every test filter the scripts use must select at least one test: a filter that matches nothing
# (a renamed test, a dropped tag) silently runs nothing and reports success. Checks the Catch2
# specs of the CUDA, parity and TSan steps and each pattern of the ASan step's exclusion list
# (scripts/ci_sanitizers.sh), and that no test name holds ';' (CTest's discovery splits such a
# name into two tests that select nothing). CTest runs it as `test_filters_select_tests`.
#
# With CTest's spec as the second argument, also checks that it selects none of the hidden tests
# (a spec of exclusions alone selects them in Catch2 v2, and they fail outside their scripts).
#
#   scripts/check_test_filters.sh <path to ltfit_tests> [CTest's Catch2 spec]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TESTS="${1:?usage: check_test_filters.sh <path to ltfit_tests>}"
# Catch2 v2 exits with the number of tests listed, hence `|| true`.
names="$("$TESTS" --list-test-names-only 2>/dev/null || true)"
bad=0

for spec in "[cuda]" "[parity]" "[timm_oracle]" "[csv_oracle]" "[.layout_oracle]" "[multi_label_oracle]" "[calibration_oracle]" "[loader]~[rlimit]"; do
  count="$("$TESTS" --list-test-names-only "$spec" 2>/dev/null | grep -c . || true)"
  if ((count == 0)); then
    echo "filter '$spec' selects no test"
    bad=1
  fi
done

# CTest's Catch2 discovery splits a test name at ';' into two CTest tests whose filters select
# nothing, so such a test never runs under CTest while it "passes".
if split="$(grep -F ';' <<<"$names")"; then
  echo "test names with ';' (CTest would split them and run neither): $split"
  bad=1
fi
# A name that starts with '-' reaches the test binary as an option ("Unrecognised token"), so
# CTest can only fail it, never run it.
if dashed="$(grep -E '^-' <<<"$names")"; then
  echo "test names starting with '-' (the test binary would read them as options): $dashed"
  bad=1
fi

ctest_spec="${2:-}"
if [[ -n "$ctest_spec" ]]; then
  hidden="$("$TESTS" --list-test-names-only "[.]" 2>/dev/null | grep . | sort || true)"
  selected="$("$TESTS" --list-test-names-only "$ctest_spec" 2>/dev/null | grep . | sort || true)"
  if both="$(comm -12 <(echo "$hidden") <(echo "$selected") | grep .)"; then
    echo "CTest's spec '$ctest_spec' selects hidden tests (they fail outside their scripts): $both"
    bad=1
  fi
fi

exclude="$(sed -n "s/^default_exclude='\(.*\)'$/\1/p" "$ROOT/scripts/ci_sanitizers.sh")"
[[ -n "$exclude" ]] || { echo "no default_exclude found in scripts/ci_sanitizers.sh"; exit 1; }
IFS='|' read -ra patterns <<<"$exclude"
for pattern in "${patterns[@]}"; do
  if ! grep -qE -- "$pattern" <<<"$names"; then
    echo "ASan exclusion '$pattern' matches no test name"
    bad=1
  fi
done

((bad)) && exit 1
echo "check_test_filters: every filter selects at least one test (${#patterns[@]} ASan exclusions)"
