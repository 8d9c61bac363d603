// Helpers shared by the tests: scratch directories, running the ltfit binary, tiny datasets.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ltfit/data/dataset_index.h"

namespace ltfit::testing {

// A fresh directory under the system temp dir, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;       // process exit status
  std::string output;       // stdout and stderr interleaved
  std::string stdout_text;  // stdout only
};

// Runs the built `ltfit` binary with `args` (a shell-quoted string) and captures its output;
// `env` ("NAME=value ...") is prepended to the command line.
CommandResult run_ltfit(const std::string& args, const std::string& env = "");

// Writes `script` to `dir`/script.sh, runs it with bash and returns its stdout (stderr passes
// through); std::runtime_error when bash cannot be started.
std::string run_bash(const std::filesystem::path& dir, const std::string& script);

// Writes `text` to `path` (creating parent directories).
void write_file(const std::filesystem::path& path, const std::string& text);

// Reads a whole file.
std::string read_file(const std::filesystem::path& path);

// The first complete line of `text` (ended by '\n') that contains `needle`; "" when none.
std::string line_with(const std::string& text, const std::string& needle);

// Writes a small synthetic set (folders layout) into `dir` with images of min_side..max_side px
// and returns its indexed training samples.
std::vector<ltfit::Sample> write_small_synth(const std::filesystem::path& dir, int train, int valid,
                                             int min_side, int max_side, std::uint64_t seed = 0);

// How many of this process's threads are named `name` (/proc/self/task/*/comm).
int threads_named(const std::string& name);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released): for
// rendezvous stores and servers in tests.
int free_loopback_port();

// `ltfit predict --json`'s lines as {image: {class: probability}} of each image's "top".
std::map<std::string, std::map<std::string, double>> top_probabilities(const std::string& output);

// Writes a `side` x `side` RGB PNG of uniform noise drawn from `seed` to `path`; false when it
// cannot be written.
bool write_noise_png(const std::filesystem::path& path, int side, std::uint64_t seed);

// Source tree root (for configs/ and fixtures).
std::filesystem::path source_dir();

}  // namespace ltfit::testing
