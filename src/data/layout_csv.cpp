// Layout csv: a CSV file names each image and its label (fastai's ImageDataLoaders.from_csv
// with ColReader): the image is data.root/data.csv.folder/<path cell><data.csv.suffix>, the
// label the label cell, or, for a multi-label task with data.csv.label_delim, the cell split on
// the delimiter (str.split; empty tokens dropped, an empty cell an empty set). Validation rows
// are those whose data.csv.valid_column is true (1, true, yes, t, y; any case; fastai's
// ColSplitter), else the rows are split by data.valid_pct (RandomSplitter on the sorted paths);
// the default column, is_valid, is used only when the file has it. Only these three columns are
// stored (csv_table.h's read_csv_columns). Labels holding a space read as one class each (no
// data.csv.label_delim) are noted: they are usually label sets written for a multi-label task.
//
// A path that leaves the root (.., absolute, or a link to outside it) is refused with the file
// and line; a row whose image is missing, that repeats an earlier row's image, or has an empty
// label (single-label) is skipped and noted. A stop request (SIGINT) is honoured every few
// hundred rows (InterruptedError, exit 130). Pure functions, thread-safe.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <set>

#include "data/layouts.h"
#include "ltfit/data/csv_table.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/util/error.h"
#include "ltfit/util/signals.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;
using layouts::LabelledFile;
using layouts::NoteTally;

constexpr const char* kDefaultValidColumn = "is_valid";  // CsvConfig's default
constexpr std::size_t kCsvRowStopEvery = 256;  // rows (each a few file-system calls) between looks

// The kept columns of the table, in this order: path, label, and valid when used.
enum CsvKept : std::size_t { kPathCell = 0, kLabelCell = 1, kValidCell = 2 };

struct CsvEntry {
  LabelledFile file;
  bool valid = false;  // marked by data.csv.valid_column
};

// The skipped and the suspicious rows of one CSV file.
struct CsvTallies {
  NoteTally missing, duplicate, empty_label, odd_flag, spaced;
  explicit CsvTallies(const std::string& csv)
      : missing("row(s) of '" + csv + "' whose image file does not exist, skipped"),
        duplicate("row(s) of '" + csv + "' naming an image an earlier row named, skipped"),
        empty_label("row(s) of '" + csv + "' with an empty label, skipped"),
        odd_flag("row(s) of '" + csv +
                 "' whose data.csv.valid_column is neither true nor false, read as training"),
        spaced("row(s) of '" + csv +
               "' whose label holds a space, each read as ONE class because data.csv.label_delim "
               "is not set; if these are sets of labels, set data.csv.label_delim: ' ' (or "
               "--set data.csv.label_delim=' ') to train multi-label") {}
  void append_to(std::vector<std::string>& notes) const {
    for (const NoteTally* t : {&spaced, &missing, &duplicate, &empty_label, &odd_flag}) {
      t->append_to(notes);
    }
  }
};

std::string csv_where(const CsvColumns& table, std::size_t row) {
  return table.source + ":" + std::to_string(table.line(row));
}

std::string csv_cell_example(std::string_view cell, const CsvColumns& table, std::size_t row) {
  return "'" + std::string(cell) + "' (line " + std::to_string(table.line(row)) + ")";
}

// 1 for the truthy spellings, 0 for the falsy ones (and an empty cell), -1 otherwise.
int csv_flag(std::string_view cell) {
  const std::size_t first = cell.find_first_not_of(" \t");
  std::string text =
      first == std::string::npos
          ? std::string()
          : std::string(cell.substr(first, cell.find_last_not_of(" \t") - first + 1));
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* yes : {"1", "true", "yes", "t", "y"})
    if (text == yes) return 1;
  for (const char* no : {"", "0", "false", "no", "f", "n"})
    if (text == no) return 0;
  return -1;
}

bool csv_is_blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); });
}

// The class names of a label cell: the cell itself, or (multi-label with a delimiter) its
// non-empty tokens. A blank cell gives no names.
std::vector<std::string> csv_label_names(std::string_view cell, const CsvConfig& csv,
                                         bool multi_label) {
  if (csv_is_blank(cell)) return {};
  if (!multi_label || !csv.label_delim) return {std::string(cell)};
  const std::string& delim = *csv.label_delim;
  if (delim.empty()) {
    throw ConfigError("data.csv.label_delim: expected a non-empty separator, got ''",
                      "e.g. ' ' for labels written 'cat dog'");
  }
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= cell.size()) {
    const std::size_t end = std::min(cell.find(delim, start), cell.size());
    if (end > start) names.emplace_back(cell.substr(start, end - start));
    start = end + delim.size();
  }
  return names;
}

// The image a row names; DataError with the file and line when it is absolute or leaves the
// root. `resolved` receives its canonical form.
fs::path csv_image_path(const CsvColumns& table, std::size_t row, const std::string& cell,
                        const DataConfig& data, const layouts::RootGuard& guard,
                        fs::path& resolved) {
  const std::string name = cell + data.csv.suffix;
  const std::string hint =
      "the CSV's paths are relative to data.root/data.csv.folder and must stay inside it";
  if (fs::path(name).is_absolute()) {
    throw DataError(csv_where(table, row) + ": the image path '" + cell +
                        "' (data.csv.path_column) is absolute",
                    hint);
  }
  const fs::path path = fs::path(data.root) / data.csv.folder / name;
  const std::string why = guard.escape_reason(path, &resolved);
  if (!why.empty()) {
    throw DataError(csv_where(table, row) + ": the image path '" + cell +
                        "' (data.csv.path_column) leaves the data root '" + data.root + "': " + why,
                    hint);
  }
  return path;
}

bool csv_image_exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec) && !fs::is_directory(path, ec);
}

// The columns to keep (kPathCell, kLabelCell, then kValidCell when used): the default
// is_valid only when the header has it.
std::vector<std::size_t> csv_pick(const CsvTable& head, const CsvConfig& csv) {
  std::vector<std::size_t> columns{csv_column(head, csv.path_column, "data.csv.path_column"),
                                   csv_column(head, csv.label_column, "data.csv.label_column")};
  const auto& names = head.header;
  const bool missing_default =
      csv.valid_column == kDefaultValidColumn &&
      std::find(names.begin(), names.end(), kDefaultValidColumn) == names.end();
  if (csv.valid_column && !missing_default) {
    columns.push_back(csv_column(head, *csv.valid_column, "data.csv.valid_column"));
  }
  return columns;
}

// Notes a single-label cell holding a space, unless data.csv.label_delim says what it is.
void csv_note_spaced(std::string_view cell, const std::string& example, const CsvConfig& csv,
                     CsvTallies& tallies) {
  if (!csv.label_delim && cell.find(' ') != std::string_view::npos) tallies.spaced.add(example);
}

// The usable rows, sorted by path; the others tallied.
std::vector<CsvEntry> csv_entries(const CsvColumns& table, const DataConfig& data, bool multi_label,
                                  CsvTallies& tallies) {
  const bool has_valid = table.columns.size() > kValidCell;
  const layouts::RootGuard guard{fs::path(data.root)};
  std::set<std::string> seen;
  std::vector<CsvEntry> entries;
  for (std::size_t r = 0; r < table.rows(); ++r) {
    if ((r + 1) % kCsvRowStopEvery == 0) throw_if_stop_requested("indexing '" + table.source + "'");
    const std::string path_cell(table.cell(r, kPathCell));
    const std::string_view label_cell = table.cell(r, kLabelCell);
    const std::string example = csv_cell_example(path_cell, table, r);
    fs::path resolved;
    const fs::path path = csv_image_path(table, r, path_cell, data, guard, resolved);
    auto names = csv_label_names(label_cell, data.csv, multi_label);
    if (!multi_label && names.empty()) {
      tallies.empty_label.add(example);
    } else if (!csv_image_exists(path)) {
      tallies.missing.add(example);
    } else if (!seen.insert(resolved.string()).second) {
      tallies.duplicate.add(example);
    } else {
      if (!multi_label) csv_note_spaced(label_cell, example, data.csv, tallies);
      const int flag = has_valid ? csv_flag(table.cell(r, kValidCell)) : 0;
      if (flag < 0) tallies.odd_flag.add(example);
      entries.push_back({{path.string(), std::move(names)}, flag == 1});
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const CsvEntry& a, const CsvEntry& b) { return a.file.path < b.file.path; });
  return entries;
}

// Rows split as data.csv.valid_column marks them.
void csv_split_by_column(DatasetIndex& index, const std::vector<CsvEntry>& entries,
                         const std::string& csv) {
  std::vector<LabelledFile> files;
  for (const auto& e : entries) files.push_back(e.file);
  index.classes = layouts::class_names_of(files);
  index.split = "valid_column";
  for (const auto& e : entries) {
    auto& split = e.valid ? index.valid : index.train;
    split.push_back(layouts::labelled_sample(e.file, index.classes, index.multi_label));
  }
  if (index.valid.empty() || index.train.empty()) {
    throw DataError("data.csv.valid_column marks " +
                        std::string(index.valid.empty() ? "none" : "every one") + " of the " +
                        std::to_string(entries.size()) + " usable rows of '" + csv +
                        "' as validation: the " +
                        (index.valid.empty() ? "validation" : "training") + " split would be empty",
                    "mark validation rows with 1/true/yes (others 0/false/no), or drop "
                    "data.csv.valid_column to split by data.valid_pct");
  }
}

}  // namespace

namespace layouts {

RootGuard::RootGuard(const fs::path& root) : root_(fs::canonical(root)) {}

std::string RootGuard::escape_reason(const fs::path& path, fs::path* resolved_out) const {
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(path, ec);
  if (ec) return "it cannot be resolved: " + ec.message();
  if (resolved_out != nullptr) *resolved_out = resolved;
  const fs::path relative = resolved.lexically_relative(root_);
  if (relative.empty() || *relative.begin() == "..") {
    return "it resolves to '" + resolved.string() + "', outside the data root '" + root_.string() +
           "'";
  }
  return "";
}

fs::path csv_file_path(const DataConfig& data) {
  const fs::path file(data.csv.file);
  return file.is_absolute() ? file : fs::path(data.root) / file;
}

DatasetIndex index_csv_layout(const DataConfig& data, std::uint64_t seed, bool multi_label) {
  const std::string csv = csv_file_path(data).string();
  const CsvColumns table =
      read_csv_columns(csv, [&](const CsvTable& head) { return csv_pick(head, data.csv); });
  DatasetIndex index;
  index.layout = data_layout_name(DataLayout::kCsv);
  index.multi_label = multi_label;
  CsvTallies tallies(csv);
  const auto entries = csv_entries(table, data, multi_label, tallies);
  tallies.append_to(index.notes);
  if (entries.empty()) {
    std::string why;
    for (const auto& note : index.notes) why += "; " + note;
    throw DataError(
        "no usable row in '" + csv + "' (" + std::to_string(table.rows()) + " rows" + why + ")",
        "check data.csv.path_column, data.csv.folder and data.csv.suffix: each row's "
        "image is data.root/folder/<path><suffix>");
  }
  if (table.columns.size() > kValidCell) {
    csv_split_by_column(index, entries, csv);
    return index;
  }
  std::vector<LabelledFile> files;
  for (const auto& e : entries) files.push_back(e.file);
  split_labelled_files(index, files, data.valid_pct, seed, multi_label);
  return index;
}

}  // namespace layouts
}  // namespace ltfit
