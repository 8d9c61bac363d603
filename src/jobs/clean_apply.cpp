// `ltfit clean --apply`: moving flagged files aside (clean_job.h), and the moves `--undo` shares
// (clean_undo.cpp). Every move is checked possible before the first is made. Each is written to
// the manifest, and the line made durable (fsync), before the move is made: a crash (kill -9, a
// power cut) leaves at most a line whose move never happened, which --undo recognises by the
// file still being in its place.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "clean_parts.h"
#include "ltfit/data/csv_table.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "ltfit/util/temp_files.h"

namespace ltfit {

namespace fs = std::filesystem;

namespace {

// Why `move` cannot be made, or "" when it can: the file (or link) is there, its folder lets it
// go, and the destination is free and can be created.
std::string move_problem(const Move& move, std::set<std::string>& checked_dirs) {
  std::error_code error;
  const fs::file_status status = fs::symlink_status(move.original, error);
  if (!fs::is_regular_file(status) && !fs::is_symlink(status)) {
    return "'" + move.original +
           "' is not a file any more (moved or deleted since it was indexed?)";
  }
  if (path_present(move.moved_to)) return "'" + move.moved_to + "' already exists";
  return folders_problem(move, checked_dirs);
}

// Copies `from` (a link as the link) to `to` through a temporary name beside it, so that `to`
// is never a partial copy; the temporary file is removed by a stop signal that ends the process.
void copy_into_place(const fs::path& from, const fs::path& to, std::error_code& error) {
  const fs::path temp = to.parent_path() / ("." + to.filename().string() + ".moving.tmp");
  const int slot = register_live_temp_file(temp.string());
  fs::remove(temp, error);
  if (fs::is_symlink(fs::symlink_status(from, error))) {
    fs::copy_symlink(from, temp, error);
  } else {
    fs::copy_file(from, temp, fs::copy_options::overwrite_existing, error);
  }
  if (!error) fs::rename(temp, to, error);
  std::error_code ignored;
  if (error) fs::remove(temp, ignored);
  unregister_live_temp_file(slot);
}

// The manifest, appended to one durable line at a time.
class ManifestLog {
 public:
  explicit ManifestLog(const fs::path& path) : path_(path.string()) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot open", errno);
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && st.st_size == 0) append("original,moved_to,problem\n");
    // The folder's entry of a new manifest is made durable too.
    const int dir = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      ::fsync(dir);
      ::close(dir);
    }
  }
  ~ManifestLog() {
    if (fd_ >= 0) ::close(fd_);
  }
  ManifestLog(const ManifestLog&) = delete;
  ManifestLog& operator=(const ManifestLog&) = delete;

  void append(const std::string& line) {
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot write", errno);
      done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd_) != 0) fail("cannot sync", errno);
  }

 private:
  [[noreturn]] void fail(const std::string& what, int error_number) {
    throw WriteError(what + " the manifest '" + path_ + "': " + std::strerror(error_number),
                     error_number,
                     "nothing is moved before its line is written; the moves listed there are "
                     "undone by `ltfit clean --undo " +
                         path_ + "`");
  }
  std::string path_;
  int fd_ = -1;
};

// Absolute and lexically normal: a manifest's paths hold from any folder.
std::string absolute_path(const fs::path& path) {
  return fs::absolute(path).lexically_normal().string();
}

// Where a suggestion's file goes: its suggested class folder (--relabel, a mislabeled file of
// the folders layout), else the quarantine under the same relative path.
std::string move_target(const CleanRequest& request, const Suggestion& s, const fs::path& root,
                        const fs::path& quarantine, const std::string& layout) {
  const fs::path path(absolute_path(s.path));
  if (request.relabel && s.problem == "mislabeled") {
    if (layout != "folders" || path.parent_path().filename() != s.given) {
      throw ConfigError("--relabel: '" + s.path + "' is not in a class folder named '" + s.given +
                            "' (layout " + layout + ")",
                        "relabel moves files between class folders (data.layout folders); fix "
                        "the labels of other layouts in their CSV or names");
    }
    return (path.parent_path().parent_path() / s.suggested / path.filename()).string();
  }
  const fs::path rel = path.lexically_relative(absolute_path(root));
  return absolute_path(quarantine / rel);
}

std::vector<Move> plan_moves(const CleanRequest& request, const std::string& root,
                             const std::string& layout, const fs::path& quarantine,
                             const std::vector<Suggestion>& suggestions) {
  std::vector<Move> moves;
  std::set<std::string> seen;
  // Certain problems first: a file both duplicated and doubted goes as a duplicate.
  for (const std::string kind : {"unusable", "leak", "duplicate", "mislabeled"}) {
    if (std::find(request.kinds.begin(), request.kinds.end(), kind) == request.kinds.end()) {
      continue;
    }
    for (const Suggestion& s : suggestions) {
      if (s.problem != kind || !seen.insert(s.path).second) continue;
      moves.push_back(
          {absolute_path(s.path), move_target(request, s, root, quarantine, layout), s.problem});
    }
  }
  return moves;
}

void check_moves(const std::vector<Move>& moves) {
  std::set<std::string> checked_dirs, targets;
  for (const Move& m : moves) {
    std::string problem = move_problem(m, checked_dirs);
    if (problem.empty() && !targets.insert(m.moved_to).second) {
      problem = "two files would go to '" + m.moved_to + "'";
    }
    if (!problem.empty()) {
      throw WriteError("clean --apply: " + problem + "; nothing was moved", EACCES,
                       "make the dataset's folders writable (or choose --out elsewhere), or run "
                       "clean again if files changed since; then run it again");
    }
  }
}

}  // namespace

bool path_present(const std::string& path) {
  std::error_code error;
  return fs::exists(fs::symlink_status(path, error));
}

std::string folders_problem(const Move& move, std::set<std::string>& checked_dirs) {
  for (const fs::path& dir :
       {fs::path(move.original).parent_path(), fs::path(move.moved_to).parent_path()}) {
    if (!checked_dirs.insert(dir.string()).second) continue;
    try {
      check_output_file(dir / ".ltfit-clean-probe", "folder of a move");
    } catch (const Error& e) {
      return e.what();
    }
  }
  return "";
}

void make_move(const Move& move, const std::string& hint) {
  std::error_code error;
  fs::create_directories(fs::path(move.moved_to).parent_path(), error);
  if (!error) fs::rename(move.original, move.moved_to, error);
  if (error == std::errc::cross_device_link) {
    error.clear();
    copy_into_place(move.original, move.moved_to, error);
    if (!error) fs::remove(move.original, error);
  }
  if (error) {
    throw WriteError(
        "cannot move '" + move.original + "' to '" + move.moved_to + "': " + error.message(),
        error.value(), hint);
  }
}

void apply_clean(const CleanRequest& request, const std::string& root, const std::string& layout,
                 CleanResult& result) {
  const fs::path quarantine = fs::path(result.out_dir) / "quarantine";
  const std::vector<Move> moves = plan_moves(request, root, layout, quarantine, result.suggestions);
  check_moves(moves);
  const fs::path manifest = absolute_path(quarantine / "manifest.csv");
  check_output_file(manifest, "clean manifest");
  fs::create_directories(quarantine);
  ManifestLog manifest_log(manifest);
  result.manifest = manifest.string();
  const std::string undo_hint =
      "the moves made so far are in the manifest; undo them with "
      "`ltfit clean --undo " +
      result.manifest + "`";
  for (const Move& m : moves) {
    if (request.stop_signal && request.stop_signal()) {
      throw InterruptedError("clean --apply: stopped after moving " +
                                 std::to_string(result.moves.size()) + " of " +
                                 std::to_string(moves.size()) + " files",
                             undo_hint);
    }
    manifest_log.append(csv_quote(m.original) + ',' + csv_quote(m.moved_to) + ',' + m.problem +
                        '\n');
    make_move(m, undo_hint);
    result.moves.push_back(m);
  }
  spdlog::info("clean --apply: moved {} files; `ltfit clean --undo {}` moves them back",
               moves.size(), result.manifest);
}

}  // namespace ltfit
