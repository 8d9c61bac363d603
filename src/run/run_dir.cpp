// Run directories and their lock; see run_dir.h.
#include "ltfit/run/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

#include <spdlog/spdlog.h>

#include <fstream>

#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "ltfit/util/temp_files.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

constexpr const char* kLockFile = ".lock";
constexpr int kMaxSiblings = 100000;  // <name>-2 ... before giving up

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// What the lock file says about its holder: "pid 123 on host h, since <UTC time>".
std::string read_holder(int fd) {
  char buffer[512] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  std::string text = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text.empty() ? "another process (it has not written its details yet)" : text;
}

void write_holder(int fd) {
  const std::string text = "pid " + std::to_string(::getpid()) + " on host " + host_name() +
                           ", since " + utc_now() + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) < 0) {
    spdlog::debug("cannot record the lock holder: {}", std::strerror(errno));
  }
}

void make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw RuntimeError("cannot create run directory '" + dir.string() + "': " + ec.message(),
                       "check run.out_dir (or --run-dir) and its permissions");
  }
}

}  // namespace

RunDirLock::RunDirLock(RunDirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

RunDirLock& RunDirLock::operator=(RunDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

std::optional<RunDirLock> RunDirLock::try_acquire(const fs::path& dir, std::string* holder) {
  const fs::path file = dir / kLockFile;
  // O_NOFOLLOW: a planted symlink named .lock never makes us truncate its target.
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    const int error = errno;
    throw RuntimeError("cannot open the run directory's lock file '" + file.string() +
                           "': " + std::strerror(error),
                       error == ELOOP ? "it is a symbolic link: remove it"
                                      : "check the run directory's permissions");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    if (error == EWOULDBLOCK) {
      if (holder != nullptr) *holder = read_holder(fd);
      ::close(fd);
      return std::nullopt;
    }
    spdlog::warn(
        "cannot lock run directory {} ({}): make sure no other ltfit writes to it at the same "
        "time",
        dir.string(), std::strerror(error));
    return RunDirLock(fd);  // not locked, but keeps the file open like a held lock
  }
  write_holder(fd);
  return RunDirLock(fd);
}

RunDirLock RunDirLock::acquire(const fs::path& dir) {
  std::string holder;
  std::optional<RunDirLock> lock = try_acquire(dir, &holder);
  if (!lock) {
    throw ConfigError("run directory '" + dir.string() + "' is in use by " + holder,
                      "wait for that run to end, or choose another --run-dir; the lock (" +
                          (dir / kLockFile).string() + ") goes away with its process");
  }
  return std::move(*lock);
}

bool holds_run(const fs::path& dir) {
  std::error_code ec;  // an unreadable path holds no run; creating it reports the error
  if (fs::exists(dir / kFailedRunFile, ec) && !run_has_progress(dir)) return false;
  return fs::exists(dir / "config.yaml", ec) || fs::exists(dir / "checkpoints", ec);
}

bool run_has_progress(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator checkpoints(dir / "checkpoints", ec);
  if (!ec && checkpoints != fs::directory_iterator()) return true;
  std::ifstream steps(dir / "steps.csv");
  std::string line;
  int lines = 0;
  while (lines < 2 && std::getline(steps, line)) ++lines;
  return lines >= 2;  // the header and a step
}

void mark_run_failed(const fs::path& dir, const std::string& reason) {
  try {
    write_text_atomic((dir / kFailedRunFile).string(),
                      "this run failed before its first training step; the next run named like "
                      "it takes this folder\n" +
                          reason + "\n");
  } catch (const std::exception& e) {
    spdlog::warn("cannot record why the run failed in {}: {}", dir.string(), e.what());
  }
}

void clear_failed_run(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / kFailedRunFile, ec) || run_has_progress(dir)) return;
  for (const char* name : {"config.yaml", "env.json", "train.log", "epochs.csv", "steps.csv",
                           "timing.json", "summary.json", kFailedRunFile}) {
    fs::remove(dir / name, ec);
  }
  fs::remove_all(dir / "tb", ec);
  fs::remove(dir / "checkpoints", ec);  // empty: run_has_progress found no checkpoint
  spdlog::info("{}: taking the folder of a run that failed before its first step", dir.string());
}

OpenRunDir create_run_dir(const RunConfig& run, const std::optional<std::string>& explicit_dir) {
  if (explicit_dir) {
    const fs::path dir = *explicit_dir;
    const auto refuse = [&] {
      return ConfigError("--run-dir '" + dir.string() + "' already holds a run",
                         "choose another directory, or continue it with --resume");
    };
    if (holds_run(dir)) throw refuse();
    make_dirs(dir);
    RunDirLock lock = RunDirLock::acquire(dir);
    if (holds_run(dir)) throw refuse();  // a run started and ended there meanwhile
    clear_failed_run(dir);
    make_dirs(dir / "checkpoints");
    return {dir, std::move(lock)};
  }
  const fs::path base = fs::path(run.out_dir) / run.name;
  for (int n = 1; n <= kMaxSiblings; ++n) {
    const fs::path dir = n == 1 ? base : fs::path(base.string() + "-" + std::to_string(n));
    if (holds_run(dir)) continue;
    make_dirs(dir);
    std::string holder;
    std::optional<RunDirLock> lock = RunDirLock::try_acquire(dir, &holder);
    if (!lock) {
      spdlog::info("run directory {} is in use by {}; taking the next name", dir.string(), holder);
      continue;
    }
    if (holds_run(dir)) continue;  // a run started and ended there meanwhile
    clear_failed_run(dir);
    make_dirs(dir / "checkpoints");
    return {dir, std::move(*lock)};
  }
  throw RuntimeError("no free run directory name " + base.string() +
                         "-N up to N = " + std::to_string(kMaxSiblings),
                     "choose another run.name or run.out_dir");
}

OpenRunDir open_run_dir_to_continue(const fs::path& dir) {
  make_dirs(dir);
  RunDirLock lock = RunDirLock::acquire(dir);
  clear_failed_run(dir);
  make_dirs(dir / "checkpoints");
  // Temporaries a killed session left (a checkpoint cut short by kill -9): the lock is ours, so
  // no live writer owns any of them.
  for (const fs::path& folder : {dir, dir / "checkpoints"}) {
    for (const auto& path : remove_stale_temp_files(folder.string(), "", /*min_age_seconds=*/0)) {
      spdlog::info("removed {}, left by an earlier session that was stopped while writing it",
                   path);
    }
  }
  return {dir, std::move(lock)};
}

}  // namespace ltfit
