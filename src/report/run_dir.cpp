#include "ltfit/report/run_dir.h"

#include "ltfit/util/error.h"

namespace ltfit {

namespace fs = std::filesystem;

bool holds_run(const fs::path& dir) {
  return fs::exists(dir / "config.yaml") || fs::exists(dir / "checkpoints");
}

fs::path create_run_dir(const RunConfig& run, const std::optional<std::string>& explicit_dir) {
  fs::path dir;
  if (explicit_dir) {
    dir = *explicit_dir;
    if (holds_run(dir)) {
      throw ConfigError("--run-dir '" + dir.string() + "' already holds a run",
                        "choose another directory, or continue it with --resume");
    }
  } else {
    const fs::path base = fs::path(run.out_dir) / run.name;
    dir = base;
    for (int n = 2; holds_run(dir); ++n) dir = base.string() + "-" + std::to_string(n);
  }
  std::error_code ec;
  fs::create_directories(dir / "checkpoints", ec);
  if (ec) {
    throw RuntimeError("cannot create run directory '" + dir.string() + "': " + ec.message(),
                       "check run.out_dir and its permissions");
  }
  return dir;
}

}  // namespace ltfit
