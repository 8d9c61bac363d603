// Layout pattern: every image file under the root (recursively; hidden files and folders
// skipped), labelled by the first group of data.label_pattern matched against the file's name
// (fastai's ImageDataLoaders.from_name_re, RegexLabeller on the name), split by data.valid_pct
// (fastai's RandomSplitter on the sorted paths).
//
// The match is RE2's full match (util/name_pattern.h: linear in the name, so a pattern that
// would backtrack cannot stall indexing): the whole name must match. fastai's re.search finds the
// pattern anywhere, the same for an anchored pattern such as the default ^(.+)_\d+\.jpg$. Files
// whose name does not match are left out and noted (fastai stops at the first); none matching is
// a DataError. A stop request (SIGINT) is honoured while listing and matching. Pure functions,
// thread-safe.
#include <algorithm>
#include <filesystem>

#include "data/layouts.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/util/error.h"
#include "ltfit/util/name_pattern.h"
#include "ltfit/util/signals.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kPatternStopEvery = 1024;  // files between two looks at the stop flag

NamePattern compiled_label_pattern(const std::string& pattern) {
  NamePattern regex(pattern);
  if (!regex.ok()) {
    throw ConfigError("data.label_pattern: expected a regular expression (RE2 syntax), got '" +
                          pattern + "': " + regex.error(),
                      "e.g. ^(.+)_\\d+\\.jpg$ labels 'great_pyrenees_17.jpg' as great_pyrenees");
  }
  if (regex.groups() < 1) {
    throw ConfigError(
        "data.label_pattern: expected a group, (...), around the label, got '" + pattern + "'",
        "e.g. ^(.+)_\\d+\\.jpg$ labels 'great_pyrenees_17.jpg' as great_pyrenees");
  }
  return regex;
}

// Image files under `root`, recursively, sorted by path; hidden entries and what is under a
// hidden folder are skipped, folder links are not followed.
std::vector<std::string> pattern_image_files(const fs::path& root) {
  std::vector<std::string> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (std::size_t n = 0; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (++n % kPatternStopEvery == 0)
      throw_if_stop_requested("listing the images (layout pattern)");
    if (layouts::is_hidden_entry(it->path())) {
      it.disable_recursion_pending();
    } else if (has_image_extension(it->path().string())) {
      files.push_back(it->path().string());
    }
  }
  if (ec) {
    throw DataError("cannot list the images under '" + root.string() +
                    "' (layout pattern): " + ec.message());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

namespace layouts {

DatasetIndex index_pattern_layout(const DataConfig& data, std::uint64_t seed) {
  const NamePattern regex = compiled_label_pattern(data.label_pattern);
  const auto files = pattern_image_files(fs::path(data.root));
  if (files.empty()) {
    throw DataError("no image files under '" + data.root + "' (layout pattern)", kDataHint);
  }
  DatasetIndex index;
  index.layout = data_layout_name(DataLayout::kPattern);
  NoteTally unmatched("image file(s) whose name does not match data.label_pattern '" +
                      data.label_pattern + "' (or gives an empty label), left out");
  std::vector<LabelledFile> labelled;
  std::string label;
  for (std::size_t n = 0; n < files.size(); ++n) {
    if ((n + 1) % kPatternStopEvery == 0) throw_if_stop_requested("labelling the images");
    const std::string& file = files[n];
    const std::string name = fs::path(file).filename().string();
    if (regex.full_match(name, label) && !label.empty()) {
      labelled.push_back({file, {label}});
    } else {
      unmatched.add(name);
    }
  }
  if (labelled.empty()) {
    throw DataError("no image file name under '" + data.root + "' matches data.label_pattern '" +
                        data.label_pattern + "' (e.g. '" + fs::path(files[0]).filename().string() +
                        "'; the first group is the label, and the whole name must match)",
                    "set data.label_pattern to match the names, e.g. ^(.+)_\\d+\\.jpg$ for "
                    "'great_pyrenees_17.jpg'");
  }
  unmatched.append_to(index.notes);
  split_labelled_files(index, labelled, data.valid_pct, seed, /*multi_label=*/false);
  return index;
}

}  // namespace layouts
}  // namespace ltfit
