// `ltfit clean --undo` (clean_job.h): resumable and idempotent. What each manifest line needs is
// read from the file system, not assumed: the file back in its place (or never moved: apply
// writes the line before the move) is skipped, one in quarantine is moved back, one in neither
// place is named as missing. So a rerun after a stop, a crash or a failure continues where it
// ended.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "clean_parts.h"
#include "ltfit/data/csv_table.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace fs = std::filesystem;

namespace {

enum class UndoStep { kMoveBack, kInPlace, kDropCopy, kMissing, kConflict };

struct PlannedUndo {
  Move back;  // original: the quarantined path; moved_to: the place it came from
  UndoStep step = UndoStep::kInPlace;
};

// The manifest's rows, without a last line cut short (a crash while apply wrote it: that move
// was never made).
CsvTable read_manifest(const std::string& manifest) {
  std::ifstream in(manifest, std::ios::binary);
  if (!in) {
    throw DataError("cannot read the clean manifest '" + manifest + "'",
                    "pass the manifest.csv that `ltfit clean --apply` wrote (renamed "
                    "manifest.csv.undone once every file is back)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  if (!s.empty() && s.back() != '\n') s.erase(s.find_last_of('\n') + 1);
  const CsvTable table = parse_csv(s, manifest);
  if (table.header != std::vector<std::string>{"original", "moved_to", "problem"}) {
    throw DataError("'" + manifest + "' is not a clean manifest (header original,moved_to,problem)",
                    "pass the manifest.csv that `ltfit clean --apply` wrote");
  }
  return table;
}

bool same_bytes(const std::string& a, const std::string& b) {
  std::error_code error;
  if (!fs::is_regular_file(fs::symlink_status(a, error)) ||
      !fs::is_regular_file(fs::symlink_status(b, error)) ||
      fs::file_size(a, error) != fs::file_size(b, error) || error) {
    return false;
  }
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  return std::equal(std::istreambuf_iterator<char>(fa), std::istreambuf_iterator<char>(),
                    std::istreambuf_iterator<char>(fb), std::istreambuf_iterator<char>());
}

// Each line's step, last move first, as the file system will be when the steps before it are
// taken (a path moved twice, by two applies into one manifest, is followed through).
std::vector<PlannedUndo> plan_undo(const CsvTable& table) {
  std::map<std::string, bool> present;  // paths the earlier steps add or take away
  const auto here = [&](const std::string& p) {
    const auto it = present.find(p);
    return it != present.end() ? it->second : path_present(p);
  };
  std::vector<PlannedUndo> plan;
  for (auto row = table.rows.rbegin(); row != table.rows.rend(); ++row) {
    PlannedUndo u{{(*row)[1], (*row)[0], (*row)[2]}};
    const bool quarantined = here(u.back.original), in_place = here(u.back.moved_to);
    if (quarantined && !in_place) {
      u.step = UndoStep::kMoveBack;
      present[u.back.original] = false;
      present[u.back.moved_to] = true;
    } else if (!quarantined) {
      u.step = in_place ? UndoStep::kInPlace : UndoStep::kMissing;
    } else {  // both: a move across file systems stopped before removing its source?
      u.step =
          same_bytes(u.back.original, u.back.moved_to) ? UndoStep::kDropCopy : UndoStep::kConflict;
      if (u.step == UndoStep::kDropCopy) present[u.back.original] = false;
    }
    plan.push_back(u);
  }
  return plan;
}

// Refuses (nothing moved) when a place is taken by another file or a folder cannot be written.
void check_undo(const std::vector<PlannedUndo>& plan, const std::string& manifest) {
  std::set<std::string> checked_dirs;
  for (const PlannedUndo& u : plan) {
    if (u.step == UndoStep::kConflict) {
      throw WriteError(
          "clean --undo: '" + u.back.moved_to +
              "' is taken by another file, and its quarantined file is still at '" +
              u.back.original + "'; nothing was moved",
          EEXIST,
          "move one of the two aside, then run `ltfit clean --undo " + manifest + "` again");
    }
    if (u.step != UndoStep::kMoveBack) continue;
    const std::string problem = folders_problem(u.back, checked_dirs);
    if (!problem.empty()) {
      throw WriteError("clean --undo: " + problem + "; nothing was moved", EACCES,
                       "make the folder writable, then run it again");
    }
  }
}

std::string missing_list(const std::vector<std::string>& missing) {
  std::string out;
  for (std::size_t i = 0; i < missing.size() && i < 10; ++i) out += "\n  " + missing[i];
  if (missing.size() > 10) out += "\n  ... and " + std::to_string(missing.size() - 10) + " more";
  return out;
}

// Once nothing is left to do: the manifest becomes <name>.undone, or the missing files are named.
void finish_undo(const std::string& manifest, const UndoResult& r) {
  if (!r.missing.empty()) {
    throw DataError(
        "clean --undo: " + std::to_string(r.missing.size()) +
            " files of the manifest are neither in quarantine nor back in their place (moved "
            "back " +
            std::to_string(r.moved_back) + ", already in place " + std::to_string(r.already_back) +
            "):" + missing_list(r.missing),
        "a relative path (a manifest of an older ltfit) is resolved against the current folder: "
        "run --undo from the folder --apply ran in. A quarantined file that was deleted cannot be "
        "brought back; once you accept that, remove the manifest '" +
            manifest + "'");
  }
  std::error_code error;
  fs::rename(manifest, manifest + ".undone", error);
  if (error) {
    throw WriteError(
        "moved every file back but cannot rename '" + manifest + "': " + error.message(),
        error.value(), "remove the manifest by hand; every file is back");
  }
}

}  // namespace

UndoResult undo_clean(const std::string& manifest, const std::function<bool()>& stop_signal) {
  const std::vector<PlannedUndo> plan = plan_undo(read_manifest(manifest));
  check_undo(plan, manifest);
  UndoResult r;
  const std::string hint = "the files moved so far are back; run `ltfit clean --undo " + manifest +
                           "` again for the rest";
  for (const PlannedUndo& u : plan) {
    if (stop_signal && stop_signal()) {
      throw InterruptedError("clean --undo: stopped after moving " + std::to_string(r.moved_back) +
                                 " files back (" + std::to_string(r.already_back) +
                                 " already in place)",
                             hint);
    }
    if (u.step == UndoStep::kMoveBack) {
      make_move(u.back, hint);
      ++r.moved_back;
    } else if (u.step == UndoStep::kDropCopy) {
      std::error_code error;
      fs::remove(u.back.original, error);
      ++r.already_back;
    } else if (u.step == UndoStep::kInPlace) {
      ++r.already_back;
    } else {
      r.missing.push_back(u.back.moved_to);
    }
  }
  finish_undo(manifest, r);
  spdlog::info("clean --undo: moved {} files back, {} were already in place", r.moved_back,
               r.already_back);
  return r;
}

}  // namespace ltfit
