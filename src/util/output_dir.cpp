// Output folders with errors that name the path; see output_dir.h.
#include "ltfit/util/output_dir.h"

#include "ltfit/util/error.h"

namespace ltfit {

void create_output_dir(const std::filesystem::path& dir, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec && std::filesystem::is_directory(dir, ec)) return;
  const std::string reason = ec ? ec.message() : "it exists and is not a directory";
  throw RuntimeError("cannot create " + what + " '" + dir.string() + "': " + reason,
                     "choose a folder you can write to");
}

}  // namespace ltfit
