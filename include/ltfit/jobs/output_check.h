// Checking, before a command does its work, that an output file can be written later.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ltfit/config/config.h"

namespace ltfit {

// Fails fast, before a command does its work, unless `file` can be written later: a
// RuntimeError (exit 5) naming the path when `file` is a folder, or when the nearest folder of
// it that exists is not a folder or not writable (a file in the way, a missing permission, a
// read-only file system, /proc, a name too long). `what` names it, e.g. "predictions file
// (--out)". The message names the part of the path that fails and the error of the operation
// that failed there: creating the first missing folder ("cannot create '/proc/nope': No such
// file or directory (the parent '/proc' exists but is on a proc file system, ...)"), or a file in
// the nearest folder when none is missing. What it creates to find out (that folder, or a probe
// file) it removes at once. Thread-safe.
void check_output_file(const std::filesystem::path& file, const std::string& what);

// A file a command reads, for check_output_not_input: `what` names it in messages, e.g. "the
// checkpoint (--checkpoint)".
struct CommandInput {
  std::string what;
  std::filesystem::path path;
};

// Fails, before a command does any work, when the output `output` (`what`: e.g. "--out") is the
// same file as one of `inputs`: the same path, another spelling of it (./x, a/../x), a symbolic
// or hard link to it, or a link it is. Writing it would destroy an input the command reads,
// often after reading it, so the command would seem to succeed. ConfigError (exit 2) naming
// both paths. Inputs or an output that do not exist never match (nothing to destroy); an empty
// path is skipped. Thread-safe.
void check_output_not_input(const std::filesystem::path& output, const std::string& what,
                            const std::vector<CommandInput>& inputs);

// check_output_not_input for the folder `dir` a command writes into and each of the files
// `names` it writes in it.
void check_outputs_not_inputs(const std::filesystem::path& dir,
                              const std::vector<std::string>& names, const std::string& what,
                              const std::vector<CommandInput>& inputs);

// The files `config` makes a command read besides the images: the config file itself
// (config.source) and the data's labels file (data.csv.file, read under the csv layout).
std::vector<CommandInput> config_inputs(const Config& config);

}  // namespace ltfit
