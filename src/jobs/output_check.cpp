// Output files checked before the work: see output_check.h.
#include "ltfit/jobs/output_check.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "ltfit/util/error.h"

namespace ltfit {

namespace fs = std::filesystem;

namespace {

constexpr long kProcMagic = 0x9fa0;       // statfs f_type of /proc (linux/magic.h)
constexpr long kSysfsMagic = 0x62656572;  // of /sys

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// Why the existing folder `dir` may refuse a new entry, in words ("" when nothing is known).
std::string folder_limits(const fs::path& dir) {
  struct statfs fs_info {};
  if (::statfs(dir.c_str(), &fs_info) == 0 &&
      (fs_info.f_type == kProcMagic || fs_info.f_type == kSysfsMagic)) {
    return std::string("is on a ") + (fs_info.f_type == kProcMagic ? "proc" : "sysfs") +
           " file system, which holds only the kernel's own files";
  }
  struct statvfs vfs_info {};
  if (::statvfs(dir.c_str(), &vfs_info) == 0 && (vfs_info.f_flag & ST_RDONLY) != 0)
    return "is on a read-only file system";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return "you may not write to it";
  return "";
}

// The first folder of `path`'s parents that does not exist (empty when all do), and the nearest
// one that does (or the first that is in the way: a file, a link to nothing).
struct Parents {
  fs::path existing;
  fs::path first_missing;
};

Parents find_parents(const fs::path& path) {
  Parents p{path.parent_path(), {}};
  std::error_code ec;
  (void)fs::status(p.existing, ec);
  while ((ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) &&
         p.existing != p.existing.root_path()) {
    if (fs::is_symlink(fs::symlink_status(p.existing, ec))) return p;  // a link to nothing
    p.first_missing = p.existing;
    p.existing = p.existing.parent_path();
    (void)fs::status(p.existing, ec);
  }
  return p;
}

}  // namespace

void check_output_file(const fs::path& file, const std::string& what) {
  const auto fail = [&](const std::string& reason) {
    throw RuntimeError("cannot write " + what + " '" + file.string() + "': " + reason,
                       "choose a folder you can write to");
  };
  std::error_code ec;
  const fs::path path = fs::absolute(file, ec);
  if (ec) fail(ec.message());
  if (fs::is_directory(path, ec)) fail("it is a folder");
  const Parents parents = find_parents(path);
  const fs::path& dir = parents.existing;
  if (fs::is_symlink(fs::symlink_status(dir, ec)) && !fs::exists(dir, ec))
    fail(quoted(dir) + " is a link to nothing");
  const fs::file_status status = fs::status(dir, ec);
  if (ec) fail(quoted(dir) + ": " + ec.message());
  if (!fs::is_directory(status)) fail(quoted(dir) + " is not a folder");
  // Permission bits do not tell (root passes access() on /proc or a read-only mount): the real
  // operation does. The first missing folder is created (and removed), else a probe file.
  if (!parents.first_missing.empty()) {
    if (::mkdir(parents.first_missing.c_str(), 0700) == 0) {
      ::rmdir(parents.first_missing.c_str());
    } else if (errno != EEXIST) {  // EEXIST: another process made it meanwhile
      const std::string error = std::strerror(errno);
      const std::string limits = folder_limits(dir);
      fail("cannot create " + quoted(parents.first_missing) + ": " + error + " (the parent " +
           quoted(dir) + " exists" + (limits.empty() ? "" : " but " + limits) + ")");
    }
    return;
  }
  std::string probe = (dir / ".ltfit-write-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    const std::string error = std::strerror(errno);
    const std::string limits = folder_limits(dir);
    fail("cannot create a file in " + quoted(dir) + ": " + error +
         (limits.empty() ? "" : " (the folder exists but " + limits + ")"));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_output_not_input(const fs::path& output, const std::string& what,
                            const std::vector<CommandInput>& inputs) {
  // As fs::equivalent (links followed), with one stat of the output for many inputs (predict's
  // images).
  struct stat out_info {};
  if (output.empty() || ::stat(output.c_str(), &out_info) != 0) return;  // nothing to destroy
  for (const CommandInput& input : inputs) {
    struct stat in_info {};
    if (input.path.empty() || ::stat(input.path.c_str(), &in_info) != 0 ||
        in_info.st_dev != out_info.st_dev || in_info.st_ino != out_info.st_ino) {
      continue;
    }
    const bool same_spelling = output.lexically_normal() == input.path.lexically_normal();
    throw ConfigError(what + " " + quoted(output) + " is " + input.what + " " + quoted(input.path) +
                          (same_spelling ? "" : " (the same file: another name or a link)"),
                      "write " + what + " elsewhere: it would replace " + input.what +
                          ", which this command reads");
  }
}

void check_outputs_not_inputs(const fs::path& dir, const std::vector<std::string>& names,
                              const std::string& what, const std::vector<CommandInput>& inputs) {
  check_output_not_input(dir, what, inputs);
  for (const std::string& name : names) check_output_not_input(dir / name, what, inputs);
}

std::vector<CommandInput> config_inputs(const Config& config) {
  const fs::path labels(config.data.csv.file);
  return {{"the config file", config.source},
          {"the data's labels file (data.csv.file)",
           labels.is_absolute() ? labels : fs::path(config.data.root) / labels}};
}

}  // namespace ltfit
