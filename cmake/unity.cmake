# ltfit_unity(TARGET): compile TARGET's sources in unity batches of LTFIT_UNITY_BATCH files
# (CMake's UNITY_BUILD), or one file per translation unit when it is 0. Sources in one batch share
# a translation unit, so file-local names (anonymous namespaces, statics) must differ between the
# files of one target; a clash is a compile error, never a silent merge.
function(ltfit_unity target)
  if(LTFIT_UNITY_BATCH GREATER 0)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                                               UNITY_BUILD_BATCH_SIZE ${LTFIT_UNITY_BATCH})
  endif()
endfunction()
