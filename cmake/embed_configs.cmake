# Generates a .cpp holding the shipped configs and plans (configs/*.yaml, configs/experiments/
# *.yaml) so that a binary copied anywhere, with no checkout and no install beside it, still
# finds them by name (src/jobs/shipped_configs.cpp writes them out on first use).
#   cmake -DINPUT=<configs folder> -DOUTPUT=<file.cpp> -P embed_configs.cmake
file(GLOB LTFIT_CONFIG_FILES RELATIVE ${INPUT} ${INPUT}/*.yaml ${INPUT}/experiments/*.yaml)
list(SORT LTFIT_CONFIG_FILES)
set(LTFIT_EMBEDDED "")
foreach(name IN LISTS LTFIT_CONFIG_FILES)
  file(READ ${INPUT}/${name} text)
  string(FIND "${text}" ")ltfit\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${name} holds the raw-string delimiter )ltfit\"")
  endif()
  string(APPEND LTFIT_EMBEDDED "    {\"${name}\", R\"ltfit(${text})ltfit\"},\n")
endforeach()
list(LENGTH LTFIT_CONFIG_FILES count)
file(WRITE ${OUTPUT}.tmp
  "// Generated from configs/ by cmake/embed_configs.cmake.\n"
  "#include \"ltfit/jobs/shipped_configs.h\"\n"
  "namespace ltfit {\n"
  "const std::vector<EmbeddedFile>& shipped_config_files() {\n"
  "  static const std::vector<EmbeddedFile> files{\n${LTFIT_EMBEDDED}  };\n"
  "  return files;\n}\n}  // namespace ltfit\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
