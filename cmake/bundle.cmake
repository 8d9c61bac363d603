# LTFIT_BUNDLE: `cmake --install` and `cpack` make a relocatable tree that needs no Python:
#   bin/ltfit                    RUNPATH $ORIGIN/../lib
#   lib/                         the LibTorch (and, for a CUDA build, CUDA) libraries ltfit loads;
#                                a CUDA build's libltfit_cuda.so, loaded where there is a driver
#   share/ltfit/configs/         the shipped configs
#   share/ltfit/runtime-packages.txt   the Debian 12 packages for the system libraries it loads
#   share/doc/ltfit/             README and docs
# With LTFIT_CPU_ONLY the lib/ directory is LibTorch's CPU half (~460 MB unpacked); a CUDA build
# copies the wheel's CUDA libraries as well (~3.5 GB). The system libraries (OpenCV, yaml-cpp,
# spdlog, fmt, curl, ...) come from the distribution: runtime-packages.txt names them.
if(NOT LTFIT_BUNDLE)
  return()
endif()

set_target_properties(ltfit PROPERTIES INSTALL_RPATH "\$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
                                       INSTALL_RPATH_USE_LINK_PATH FALSE)
# Copy the dependencies that live in the torch package (its lib/ and the wheel's nvidia/*/lib);
# leave the system's to the distribution's packages.
get_filename_component(LTFIT_TORCH_PREFIX_REAL "${TORCH_INSTALL_PREFIX}" REALPATH)
get_filename_component(LTFIT_SITE_PACKAGES "${LTFIT_TORCH_PREFIX_REAL}/.." ABSOLUTE)
string(REPLACE "." "\\." LTFIT_SITE_PACKAGES_RE "${LTFIT_SITE_PACKAGES}")
install(TARGETS ltfit
  RUNTIME_DEPENDENCIES
    DIRECTORIES "${LTFIT_TORCH_PREFIX_REAL}/lib" ${LTFIT_WHEEL_CUDA_LIBS}
    POST_INCLUDE_REGEXES "^${LTFIT_SITE_PACKAGES_RE}/(torch|nvidia)/"
    POST_EXCLUDE_REGEXES ".*"
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET ltfit_cuda)
  # ltfit's CUDA half (cuda_half.h), found by ltfit in ../lib; it finds LibTorch's beside it.
  set_target_properties(ltfit_cuda PROPERTIES INSTALL_RPATH "\$ORIGIN"
                                              INSTALL_RPATH_USE_LINK_PATH FALSE)
  install(TARGETS ltfit_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
if(LTFIT_TORCH_HAS_CUDA)
  # What the CUDA half loads with dlopen, which no link-time walk sees: cuDNN's engine libraries,
  # torch's CUDA linear algebra, NVRTC's builtins. All of the wheel's CUDA libraries go in lib/,
  # beside libtorch_cuda, whose RUNPATH ($ORIGIN) then finds them.
  install(DIRECTORY "${LTFIT_TORCH_PREFIX_REAL}/lib/" DESTINATION ${CMAKE_INSTALL_LIBDIR}
          FILES_MATCHING PATTERN "*.so*" PATTERN "libtorch_python*" EXCLUDE
          PATTERN "libshm*" EXCLUDE)
  foreach(dir IN LISTS LTFIT_WHEEL_CUDA_LIBS)
    install(DIRECTORY "${dir}/" DESTINATION ${CMAKE_INSTALL_LIBDIR}
            FILES_MATCHING PATTERN "*.so*")
  endforeach()
endif()
install(FILES ${CMAKE_SOURCE_DIR}/packaging/debian12-runtime-packages.txt
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ltfit RENAME runtime-packages.txt)

if(LTFIT_CPU_ONLY)
  set(LTFIT_BUNDLE_FLAVOUR cpu)
else()
  set(LTFIT_BUNDLE_FLAVOUR cuda)
endif()
set(CPACK_GENERATOR TGZ)
set(CPACK_PACKAGE_NAME ltfit)
set(CPACK_PACKAGE_VENDOR ltfit)
set(CPACK_PACKAGE_FILE_NAME
    "ltfit-${PROJECT_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR}-${LTFIT_BUNDLE_FLAVOUR}")
set(CPACK_STRIP_FILES ON)
set(CPACK_THREADS 0)  # all cores for the compressor where the format allows
include(CPack)
