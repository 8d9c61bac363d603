# Included by CTest when it starts (TEST_INCLUDE_FILES of tests/CMakeLists.txt): one CTest test
# per test source file, named after it ("loader_test"), running that file's Catch2 cases in one
# process (Catch2's --filenames-as-tags gives each case the tag [#<file>]). Starting the test
# binary loads LibTorch's and CUDA's libraries, about a second of two cores' time: paid once per
# file instead of once per case. A failing file's output (--output-on-failure) names the case.
# Expects TEST_EXECUTABLE, TEST_SPEC (the cases left out, e.g. ~[slow]), TEST_TIMEOUT,
# TEST_ENVIRONMENT and TEST_COSTS ("name=seconds;..."), set by the file CMake generates beside
# this one. A cost makes `ctest --parallel` start the long files first in a fresh build folder,
# which has no measured costs yet (CTest then uses its own). The environment variable
# LTFIT_CTEST_SPEC_EXTRA, read when CTest starts, adds exclusions to every file's spec (e.g.
# `~[cli]~"a case's name"`: scripts/ci_sanitizers.sh leaves cases out so); a file left with no
# case is no test.
set(TEST_SPEC "${TEST_SPEC}$ENV{LTFIT_CTEST_SPEC_EXTRA}")
execute_process(COMMAND "${TEST_EXECUTABLE}" "${TEST_SPEC}" --list-tags --filenames-as-tags
                OUTPUT_VARIABLE listing ERROR_VARIABLE listing_error)
string(REGEX MATCHALL "\\[#[^]\n]+\\]" file_tags "${listing}")
if(NOT file_tags)
  # No file found: one test that fails and says why, rather than a suite that passes empty.
  add_test(list_test_files "${CMAKE_COMMAND}" -E echo
           "cannot list the tests of ${TEST_EXECUTABLE}: ${listing}${listing_error}")
  set_tests_properties(list_test_files PROPERTIES WILL_FAIL TRUE)
  return()
endif()
list(REMOVE_DUPLICATES file_tags)
foreach(tag IN LISTS file_tags)
  string(REGEX REPLACE "^\\[#(.*)\\]$" "\\1" name "${tag}")
  # ~[.]: a tag required by the spec would otherwise also select the file's hidden cases.
  add_test("${name}" "${TEST_EXECUTABLE}" "${tag}~[.]${TEST_SPEC}" --filenames-as-tags)
  set_tests_properties("${name}" PROPERTIES TIMEOUT "${TEST_TIMEOUT}"
                                            ENVIRONMENT "${TEST_ENVIRONMENT}")
  foreach(entry IN LISTS TEST_COSTS)
    if(entry MATCHES "^${name}=([0-9]+)$")
      set_tests_properties("${name}" PROPERTIES COST "${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()
