// A synthetic JPEG set: which images go where (the four layouts), writing them, and the csv
// layout's labels.csv. Each image is drawn by synth_draw.h.
//
// Every image is a pure function of (seed, split, index in split): its generator is a
// SplitMix64 (ltfit/util/random.h) seeded from those three, and every random choice comes from
// it (never from std::*_distribution, whose output differs between standard libraries). Images
// are therefore independent and are drawn and written in parallel by a few std::threads, each
// owning a contiguous range of jobs; a worker's exception is re-raised on the caller's thread.
// Files are encoded in memory, written to a hidden temporary name and renamed; labels.csv is
// written the same way after every image, so that a labels.csv never names a missing image.
#include "ltfit/data/synth.h"

#include <algorithm>
#include <array>
#include <exception>
#include <filesystem>
#include <thread>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "data/synth_draw.h"
#include "ltfit/data/csv_sidecar.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "ltfit/util/random.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;

constexpr int kMinSideLimit = 32;
constexpr int kMaxSideLimit = 4096;
// Class names per task: index 0 is drawn by the first figure, 1 by the second.
constexpr std::array<const char*, 2> kCatsDogsNames = {"cat", "dog"};
constexpr std::array<const char*, 2> kBearsRabbitsNames = {"bear", "rabbit"};
constexpr const char* kSynthLabelsFile = "labels.csv";  // csv layout, under out_dir

const std::array<const char*, 2>& class_names(const std::string& task) {
  return task == "bears_rabbits" ? kBearsRabbitsNames : kCatsDogsNames;
}

bool is_shapes_task(const SynthOptions& o) { return o.task == "shapes"; }
bool is_cifar_layout(const SynthOptions& o) {
  return o.layout == "cifar10" || o.layout == "cifar100";
}

std::uint64_t image_seed(std::uint64_t seed, int split, int index) {
  SplitMix64 mix(seed ^ (0xD1B54A32D192ED03ULL * static_cast<std::uint64_t>(split + 1)));
  const std::uint64_t base = mix.next();
  return SplitMix64(base + static_cast<std::uint64_t>(index)).next();
}

// One image to write: which split and index seed it, what it shows, where it goes.
struct Job {
  int split = 0;              // 0 train, 1 valid
  int index = 0;              // index within the split
  bool second_class = false;  // the task's second class (two-class tasks)
  std::string labels;         // class name, or the shapes' names joined by spaces (maybe none)
  std::string relative;       // path under out_dir, '/'-separated
};

std::string zero_padded(int n) {
  std::string digits = std::to_string(n);
  return std::string(digits.size() < 5 ? 5 - digits.size() : 0, '0') + digits;
}

// The shapes task's label set: the names of the shapes in `mask`, in kSynthShapeNames' order.
std::string shape_labels(unsigned mask) {
  std::string labels;
  for (size_t i = 0; i < kSynthShapeNames.size(); ++i) {
    if (!(mask & (1u << i))) continue;
    labels += (labels.empty() ? "" : " ") + std::string(kSynthShapeNames[i]);
  }
  return labels;
}

// Where `job` goes under out_dir. `in_class`: its number among its split's images of its class;
// `across_splits`: among its class's images of both splits; `overall`: among all images.
std::string job_relative_path(const SynthOptions& o, const Job& job, int in_class,
                              int across_splits, int overall) {
  const std::string name = job.labels;
  if (o.layout == "kaggle") return "train/" + name + "." + std::to_string(across_splits) + ".jpg";
  if (o.layout == "pattern") return "images/" + name + "_" + std::to_string(across_splits) + ".jpg";
  if (o.layout == "csv") return "images/" + zero_padded(overall) + ".jpg";
  return std::string(job.split == 0 ? "train/" : "valid/") + name + "/" + zero_padded(in_class) +
         ".jpg";
}

// Training images first, then validation ones. Two-class tasks put the first class first: a
// split of n images holds (n+1)/2 of it and n/2 of the second.
std::vector<Job> plan_jobs(const SynthOptions& o) {
  std::vector<Job> jobs;
  std::array<int, 2> next_in_class = {0, 0};  // kaggle, pattern: numbered from 0 across splits
  for (int split = 0; split < 2; ++split) {
    const int count = split == 0 ? o.train : o.valid;
    const int firsts = (count + 1) / 2;
    for (int i = 0; i < count; ++i) {
      Job job{split, i, i >= firsts, {}, {}};
      const int c = job.second_class ? 1 : 0;
      job.labels = is_shapes_task(o) ? shape_labels(synth_shape_mask(image_seed(o.seed, split, i)))
                                     : class_names(o.task)[c];
      job.relative = job_relative_path(o, job, job.second_class ? i - firsts : i,
                                       next_in_class[c]++, static_cast<int>(jobs.size()));
      jobs.push_back(std::move(job));
    }
  }
  return jobs;
}

cv::Mat draw_job(const Job& job, const SynthOptions& o) {
  const std::uint64_t seed = image_seed(o.seed, job.split, job.index);
  return is_shapes_task(o) ? draw_synthetic_shapes(seed, o)
                           : draw_synthetic_image(seed, job.second_class, o);
}

void write_job(const Job& job, const SynthOptions& o) {
  const cv::Mat image = draw_job(job, o);
  const fs::path path = fs::path(o.out_dir) / job.relative;
  std::vector<uchar> bytes;
  if (!cv::imencode(".jpg", image, bytes, {cv::IMWRITE_JPEG_QUALITY, o.jpeg_quality})) {
    throw DataError("cannot encode synthetic image '" + path.string() + "' as JPEG");
  }
  write_file_atomic(path.string(), {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

// Runs `each(i)` for every job over contiguous ranges on a few threads; rethrows the first
// worker error.
template <typename Each>
void for_each_job(const std::vector<Job>& jobs, const Each& each) {
  const size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  const size_t chunk = (jobs.size() + workers - 1) / workers;
  std::vector<std::exception_ptr> errors(workers);
  {
    std::vector<std::jthread> threads;  // joined on scope exit, even if a later start throws
    for (size_t w = 0; w < workers; ++w) {
      threads.emplace_back([&, w] {
        try {
          for (size_t i = w * chunk; i < std::min(jobs.size(), (w + 1) * chunk); ++i) {
            each(i);
          }
        } catch (...) {
          errors[w] = std::current_exception();
        }
      });
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// `text` as one RFC 4180 field: quoted, with quotes doubled, when it holds a comma, a quote or a
// line break.
std::string synth_csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// The csv layout's labels.csv: `fname,labels,is_valid`, one row per image in `jobs`' order.
std::string labels_csv_text(const std::vector<Job>& jobs) {
  std::string text = "fname,labels,is_valid\n";
  for (const auto& job : jobs) {
    text += synth_csv_field(job.relative) + "," + synth_csv_field(job.labels) + "," +
            (job.split == 1 ? "True" : "False") + "\n";
  }
  return text;
}

void validate(const SynthOptions& o) {
  if (o.out_dir.empty()) throw ConfigError("synth: --out: expected a directory, got nothing");
  if (o.train < 2)
    throw ConfigError("synth: --train: expected at least 2 images (one per class), got " +
                      std::to_string(o.train));
  if (o.valid < 2)
    throw ConfigError("synth: --valid: expected at least 2 images (one per class), got " +
                      std::to_string(o.valid));
  if (o.layout != "folders" && o.layout != "kaggle" && o.layout != "csv" && o.layout != "pattern" &&
      o.layout != "shards" && !is_cifar_layout(o)) {
    throw ConfigError(
        "synth: --layout: expected folders, kaggle, csv, pattern, cifar10, cifar100 or shards, "
        "got '" +
        o.layout + "'");
  }
  if (o.task != "cats_dogs" && o.task != "bears_rabbits" && o.task != "shapes") {
    throw ConfigError("synth: --task: expected cats_dogs, bears_rabbits or shapes, got '" + o.task +
                      "'");
  }
  if (is_shapes_task(o) && o.layout != "csv") {
    throw ConfigError(
        "synth: --task shapes needs --layout csv (only a CSV holds a set of labels "
        "per image), got --layout " +
            o.layout,
        "add --layout csv");
  }
  if (o.jpeg_quality < 0 || o.jpeg_quality > 100) {
    throw ConfigError("synth: jpeg_quality: expected 0-100, got " + std::to_string(o.jpeg_quality));
  }
  if (o.min_side < kMinSideLimit || o.max_side > kMaxSideLimit || o.min_side > o.max_side) {
    throw ConfigError("synth: image sides: expected " + std::to_string(kMinSideLimit) +
                      " <= min_side <= max_side <= " + std::to_string(kMaxSideLimit) + ", got " +
                      std::to_string(o.min_side) + ".." + std::to_string(o.max_side));
  }
}

void create_directories(const std::vector<Job>& jobs, const fs::path& root) {
  std::vector<fs::path> dirs = {root};
  for (const auto& job : jobs) dirs.push_back((root / job.relative).parent_path());
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  for (const auto& dir : dirs) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
      throw DataError("cannot create directory '" + dir.string() + "'" +
                          (ec ? ": " + ec.message() : std::string(" (a file is in the way)")),
                      "choose another --out directory, or check its permissions");
    }
  }
}

// The cifar10 and cifar100 layouts: every image drawn, then written as records of the batch
// files (synth_cifar.cpp) instead of one file each.
SynthResult write_cifar_set(const SynthOptions& options, const std::vector<Job>& jobs) {
  std::vector<CifarSynthImage> images(jobs.size());
  for_each_job(jobs, [&](std::size_t i) {
    images[i] = {jobs[i].second_class ? 1 : 0, cifar_planes(draw_job(jobs[i], options))};
  });
  const auto first_valid = static_cast<std::ptrdiff_t>(options.train);
  const std::vector<CifarSynthImage> train(images.begin(), images.begin() + first_valid);
  const std::vector<CifarSynthImage> test(images.begin() + first_valid, images.end());
  write_cifar_batches(options, class_names(options.task), train, test);
  return {options.train, options.valid};
}

// The shards layout: every image drawn and encoded as the folders layout's, then written as
// members of tar shards (synth_shards.cpp) instead of one file each.
SynthResult write_shards_set(const SynthOptions& options, const std::vector<Job>& jobs) {
  std::vector<ShardSynthImage> images(jobs.size());
  for_each_job(jobs, [&](std::size_t i) {
    std::vector<uchar> bytes;
    if (!cv::imencode(".jpg", draw_job(jobs[i], options), bytes,
                      {cv::IMWRITE_JPEG_QUALITY, options.jpeg_quality})) {
      throw DataError("cannot encode a synthetic image as JPEG");
    }
    images[i] = {jobs[i].second_class ? 1 : 0, std::string(bytes.begin(), bytes.end())};
  });
  const auto first_valid = static_cast<std::ptrdiff_t>(options.train);
  write_shards(options, class_names(options.task), {images.begin(), images.begin() + first_valid},
               {images.begin() + first_valid, images.end()});
  return {options.train, options.valid};
}

}  // namespace

SynthResult write_synthetic_dataset(const SynthOptions& options) {
  validate(options);
  const std::vector<Job> jobs = plan_jobs(options);
  if (is_cifar_layout(options)) return write_cifar_set(options, jobs);
  if (options.layout == "shards") return write_shards_set(options, jobs);
  create_directories(jobs, options.out_dir);
  for_each_job(jobs, [&](std::size_t i) { write_job(jobs[i], options); });
  if (options.layout == "csv") {
    const std::string csv = (fs::path(options.out_dir) / kSynthLabelsFile).string();
    write_text_atomic(csv, labels_csv_text(jobs));
    // The shapes' label sets are joined by spaces: the sidecar says so (csv_sidecar.h).
    if (is_shapes_task(options)) {
      write_text_atomic(csv_sidecar_path(csv), csv_sidecar_text(options.task, " "));
    }
  }
  SynthResult result;
  // kaggle and pattern hold one pool of images; the validation split is drawn at training time.
  const bool one_pool = options.layout == "kaggle" || options.layout == "pattern";
  result.train_written = one_pool ? options.train + options.valid : options.train;
  result.valid_written = one_pool ? 0 : options.valid;
  return result;
}

}  // namespace ltfit
