// Output files checked before the work: see output_check.h.
#include "ltfit/jobs/output_check.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "ltfit/util/error.h"

namespace ltfit {

namespace fs = std::filesystem;

void check_output_file(const fs::path& file, const std::string& what) {
  const auto fail = [&](const std::string& reason) {
    throw RuntimeError("cannot write " + what + " '" + file.string() + "': " + reason,
                       "choose a folder you can write to");
  };
  const auto quoted = [](const fs::path& p) { return "'" + p.string() + "'"; };
  std::error_code ec;
  const fs::path path = fs::absolute(file, ec);
  if (ec) fail(ec.message());
  if (fs::is_directory(path, ec)) fail("it is a folder");
  // The nearest folder that exists: where the file, or its missing parents, will be created.
  fs::path dir = path.parent_path();
  fs::file_status status = fs::status(dir, ec);
  while (ec == std::errc::no_such_file_or_directory && dir != dir.root_path()) {
    if (fs::is_symlink(fs::symlink_status(dir, ec))) fail(quoted(dir) + " is a link to nothing");
    dir = dir.parent_path();
    status = fs::status(dir, ec);
  }
  if (ec) fail(quoted(dir) + ": " + ec.message());
  if (!fs::is_directory(status)) fail(quoted(dir) + " is not a folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) fail(quoted(dir) + ": " + std::strerror(errno));
  // access() trusts the permission bits: root passes it on /proc or a read-only mount, where
  // creating a file still fails. Creating (and removing) a probe file is the real test.
  std::string probe = (dir / ".ltfit-write-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) fail(quoted(dir) + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace ltfit
