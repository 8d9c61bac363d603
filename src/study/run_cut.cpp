// When a plan run's cut comes, and what it cost (run_cut.h).
#include "ltfit/study/run_cut.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>
#include <vector>

#include "ltfit/data/csv_table.h"

namespace ltfit {
namespace {

// The `seconds` column of epochs.csv's complete rows (a row still being written is left out); a
// cell that is no number reads as 0, a file that does not parse (yet) as no rows.
std::vector<double> epoch_seconds(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t last_line_end = text.find_last_of('\n');
  text.resize(last_line_end == std::string::npos ? 0 : last_line_end + 1);
  std::vector<double> seconds;
  try {
    const CsvTable table = parse_csv(text, path);
    const auto column = static_cast<std::size_t>(
        std::find(table.header.begin(), table.header.end(), "seconds") - table.header.begin());
    for (const auto& row : table.rows) {
      double value = 0.0;
      if (column < row.size()) {
        std::istringstream cell(row[column]);
        if (!(cell >> value) || !std::isfinite(value) || value < 0.0) value = 0.0;
      }
      seconds.push_back(value);
    }
  } catch (const std::exception&) {  // empty, or not a table yet
  }
  return seconds;
}

}  // namespace

std::optional<double> RunCut::time_lost(const std::optional<double>& train_seconds) const {
  if (!happened || !train_seconds) return std::nullopt;
  return std::max(0.0, cut_seconds + resume_seconds - *train_seconds);
}

CutClock::CutClock(std::string epochs_csv, double at_epoch)
    : epochs_csv_(std::move(epochs_csv)),
      whole_epochs_(static_cast<std::int64_t>(std::floor(at_epoch))),
      fraction_(at_epoch - std::floor(at_epoch)) {}

bool CutClock::due() {
  const auto now = Clock::now();
  if (!boundary_) {
    const std::vector<double> seconds = epoch_seconds(epochs_csv_);
    if (static_cast<std::int64_t>(seconds.size()) < whole_epochs_) return false;
    boundary_ = now;
    epoch_seconds_ = seconds[static_cast<std::size_t>(whole_epochs_ - 1)];
  }
  return std::chrono::duration<double>(now - *boundary_).count() >= fraction_ * epoch_seconds_;
}

}  // namespace ltfit
