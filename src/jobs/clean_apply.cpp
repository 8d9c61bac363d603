// `ltfit clean --apply` and `--undo`: moving flagged files aside and back (clean_job.h). Every
// move is checked possible before the first is made; each is recorded in the manifest as soon
// as it is made, so a crash leaves a manifest that undoes what was done.
#include <spdlog/spdlog.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>

#include "clean_parts.h"
#include "ltfit/data/csv_table.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

// Why `move` cannot be made, or "" when it can: the file is there, its folder lets it go (a
// probe file is created and removed there), and the destination is free and can be created.
std::string move_problem(const Move& move, std::set<std::string>& checked_dirs) {
  std::error_code error;
  if (!fs::is_regular_file(fs::symlink_status(move.original, error))) {
    return "'" + move.original + "' is not a file any more";
  }
  if (fs::exists(fs::symlink_status(move.moved_to, error))) {
    return "'" + move.moved_to + "' already exists";
  }
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

// Renames `move` (copies then removes the original across file systems).
void make_move(const Move& move) {
  std::error_code error;
  fs::create_directories(fs::path(move.moved_to).parent_path(), error);
  if (!error) fs::rename(move.original, move.moved_to, error);
  if (error == std::errc::cross_device_link) {
    error.clear();
    fs::copy_file(move.original, move.moved_to, error);
    if (!error) fs::remove(move.original, error);
  }
  if (error) {
    throw WriteError(
        "cannot move '" + move.original + "' to '" + move.moved_to + "': " + error.message(),
        error.value(),
        "the moves made so far are in the manifest; undo them with "
        "`ltfit clean --undo <manifest>`");
  }
}

// Where a suggestion's file goes: its suggested class folder (--relabel, a mislabeled file of
// the folders layout), else the quarantine under the same relative path.
std::string move_target(const CleanRequest& request, const Suggestion& s, const fs::path& root,
                        const fs::path& quarantine, const std::string& layout) {
  const fs::path path(s.path);
  if (request.relabel && s.problem == "mislabeled") {
    if (layout != "folders" || path.parent_path().filename() != s.given) {
      throw ConfigError("--relabel: '" + s.path + "' is not in a class folder named '" + s.given +
                            "' (layout " + layout + ")",
                        "relabel moves files between class folders (data.layout folders); fix "
                        "the labels of other layouts in their CSV or names");
    }
    return (path.parent_path().parent_path() / s.suggested / path.filename()).string();
  }
  const fs::path rel = fs::absolute(path).lexically_normal().lexically_relative(
      fs::absolute(root).lexically_normal());
  return (quarantine / rel).string();
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
      moves.push_back({s.path, move_target(request, s, root, quarantine, layout), s.problem});
    }
  }
  return moves;
}

void check_moves(const std::vector<Move>& moves, const std::string& what) {
  std::set<std::string> checked_dirs, targets;
  for (const Move& m : moves) {
    std::string problem = move_problem(m, checked_dirs);
    if (problem.empty() && !targets.insert(m.moved_to).second) {
      problem = "two files would go to '" + m.moved_to + "'";
    }
    if (!problem.empty()) {
      throw WriteError(what + ": " + problem + "; nothing was moved", EACCES,
                       "make the dataset's folders writable (or choose --out elsewhere), "
                       "then run it again");
    }
  }
}

}  // namespace

void apply_clean(const CleanRequest& request, const std::string& root, const std::string& layout,
                 CleanResult& result) {
  const fs::path quarantine = fs::path(result.out_dir) / "quarantine";
  const std::vector<Move> moves = plan_moves(request, root, layout, quarantine, result.suggestions);
  check_moves(moves, "clean --apply");
  const fs::path manifest = quarantine / "manifest.csv";
  check_output_file(manifest, "clean manifest");
  fs::create_directories(quarantine);
  const bool fresh = !fs::exists(manifest);
  std::ofstream file(manifest, std::ios::app | std::ios::binary);
  if (fresh) file << "original,moved_to,problem\n";
  for (const Move& m : moves) {
    make_move(m);
    file << csv_quote(m.original) << ',' << csv_quote(m.moved_to) << ',' << m.problem << '\n';
    file.flush();
    if (!file) {
      throw WriteError(
          "cannot write the manifest '" + manifest.string() + "' after moving '" + m.original + "'",
          errno, "it lists the moves made before; check the disk");
    }
    result.moves.push_back(m);
  }
  result.manifest = manifest.string();
  spdlog::info("clean --apply: moved {} files; `ltfit clean --undo {}` moves them back",
               moves.size(), result.manifest);
}

std::vector<Move> undo_clean(const std::string& manifest) {
  const CsvTable table = read_csv_file(manifest);
  if (table.header != std::vector<std::string>{"original", "moved_to", "problem"}) {
    throw DataError("'" + manifest + "' is not a clean manifest (header original,moved_to,problem)",
                    "pass the manifest.csv that `ltfit clean --apply` wrote");
  }
  std::vector<Move> back;
  for (auto row = table.rows.rbegin(); row != table.rows.rend(); ++row) {
    back.push_back({(*row)[1], (*row)[0], (*row)[2]});
  }
  check_moves(back, "clean --undo");
  for (const Move& m : back) make_move(m);
  std::error_code error;
  fs::rename(manifest, manifest + ".undone", error);
  if (error) {
    throw WriteError(
        "moved every file back but cannot rename '" + manifest + "': " + error.message(),
        error.value(), "remove the manifest by hand; every file is back");
  }
  spdlog::info("clean --undo: moved {} files back", back.size());
  return back;
}

}  // namespace ltfit
