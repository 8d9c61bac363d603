// The helpers the layouts share (layouts.h): directory listings (sorted, hidden entries and
// non-image names skipped), fastai's RandomSplitter, numbering class names and turning labelled
// files into samples, the words of a drawn split, and the tally behind the index's notes. Pure
// functions, thread-safe.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>

#include "data/layouts.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/util/error.h"

namespace ltfit {

// (dataset_index.h)
bool has_image_extension(const std::string& path) {
  static constexpr std::array<const char*, 7> kExtensions = {"jpg",  "jpeg", "png", "bmp",
                                                             "webp", "tif",  "tiff"};
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext.size() < 2) return false;
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::find(kExtensions.begin(), kExtensions.end(), ext.substr(1)) != kExtensions.end();
}

namespace fs = std::filesystem;

namespace layouts {

bool is_hidden_entry(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

bool is_directory_at(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

std::vector<std::string> visible_subdirectories(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::error_code ignored;
    if (entry.is_directory(ignored) && !is_hidden_entry(entry.path())) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> image_files_in(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!is_hidden_entry(entry.path()) && has_image_extension(entry.path().string()))
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void sort_samples_by_path(std::vector<Sample>& samples) {
  std::sort(samples.begin(), samples.end(),
            [](const Sample& a, const Sample& b) { return a.path < b.path; });
}

std::string join_names(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::string drawn_split_words(const DataConfig& data, std::uint64_t seed) {
  std::ostringstream text;
  if (data.valid_count > 0) {
    text << "data.valid_count " << data.valid_count;
  } else {
    text << "data.valid_pct " << data.valid_pct;
  }
  text << ", run.seed " << seed;
  return text.str();
}

RandomSplit random_split(std::size_t n, double valid_pct, std::uint64_t seed,
                         const std::string& what) {
  RandomSplit split;
  if (valid_pct == 0) {  // train on all the data: no validation split
    for (std::size_t k = 0; k < n; ++k) split.train.push_back(k);
    return split;
  }
  if (n < 2) {
    throw DataError(what + " holds " + std::to_string(n) +
                        " image(s); a split by data.valid_pct needs at least 2 (one to train on, "
                        "one to validate)",
                    kDataHint);
  }
  // torch's CPU randperm itself, so that the split is fastai's RandomSplitter to the image.
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const at::Tensor perm = at::randperm(static_cast<std::int64_t>(n), generator, at::kLong);
  const std::int64_t* order = perm.data_ptr<std::int64_t>();
  // Python's int(valid_pct * n): the double product, truncated.
  const auto wanted = static_cast<std::int64_t>(valid_pct * static_cast<double>(n));
  const auto cut = static_cast<std::size_t>(
      std::clamp<std::int64_t>(wanted, 1, static_cast<std::int64_t>(n) - 1));
  for (std::size_t k = 0; k < n; ++k) {
    (k < cut ? split.valid : split.train).push_back(static_cast<std::size_t>(order[k]));
  }
  return split;
}

std::vector<std::string> class_names_of(const std::vector<LabelledFile>& files) {
  std::set<std::string> names;
  for (const auto& file : files) names.insert(file.names.begin(), file.names.end());
  return {names.begin(), names.end()};
}

Sample labelled_sample(const LabelledFile& file, const std::vector<std::string>& classes,
                       bool multi_label) {
  const auto index_of = [&](const std::string& name) {
    return static_cast<std::int64_t>(std::lower_bound(classes.begin(), classes.end(), name) -
                                     classes.begin());
  };
  Sample sample{file.path, -1};
  if (!multi_label) {
    sample.label = index_of(file.names.at(0));
    return sample;
  }
  for (const auto& name : file.names) sample.labels.push_back(index_of(name));
  std::sort(sample.labels.begin(), sample.labels.end());
  sample.labels.erase(std::unique(sample.labels.begin(), sample.labels.end()), sample.labels.end());
  if (!sample.labels.empty()) sample.label = sample.labels.front();
  return sample;
}

void split_labelled_files(DatasetIndex& index, const std::vector<LabelledFile>& files,
                          double valid_pct, std::uint64_t seed, bool multi_label) {
  index.classes = class_names_of(files);
  index.split = "valid_pct";
  const RandomSplit split = random_split(files.size(), valid_pct, seed, "layout " + index.layout);
  for (const std::size_t i : split.train)
    index.train.push_back(labelled_sample(files[i], index.classes, multi_label));
  for (const std::size_t i : split.valid)
    index.valid.push_back(labelled_sample(files[i], index.classes, multi_label));
}

void NoteTally::add(const std::string& example) {
  ++count_;
  if (examples_.size() < kExamples) examples_.push_back(example);
}

void NoteTally::append_to(std::vector<std::string>& notes) const {
  if (count_ == 0) return;
  std::string note = std::to_string(count_) + " " + what_ + ": " + join_names(examples_);
  if (count_ > examples_.size())
    note += " (and " + std::to_string(count_ - examples_.size()) + " more)";
  notes.push_back(note);
}

}  // namespace layouts

}  // namespace ltfit
