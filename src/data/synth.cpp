// A synthetic "cats vs dogs" JPEG set: which images go where, and writing them. Each image is
// drawn by synth_draw.h.
//
// Every image is a pure function of (seed, split, index in split): its generator is a
// SplitMix64 (ltfit/util/random.h) seeded from those three, and every random choice comes from
// it (never from std::*_distribution, whose output differs between standard libraries). Images
// are therefore independent and are drawn and written in parallel by a few std::threads, each
// owning a contiguous range of jobs; a worker's exception is re-raised on the caller's thread.
// Files are encoded in memory, written to a hidden temporary name and renamed.
#include "ltfit/data/synth.h"

#include <algorithm>
#include <array>
#include <exception>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "data/synth_draw.h"
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

const std::array<const char*, 2>& class_names(const std::string& task) {
  return task == "bears_rabbits" ? kBearsRabbitsNames : kCatsDogsNames;
}

std::uint64_t image_seed(std::uint64_t seed, int split, int index) {
  SplitMix64 mix(seed ^ (0xD1B54A32D192ED03ULL * static_cast<std::uint64_t>(split + 1)));
  const std::uint64_t base = mix.next();
  return SplitMix64(base + static_cast<std::uint64_t>(index)).next();
}

// One image to write: which split and index seed it, which class, where it goes.
struct Job {
  int split = 0;        // 0 train, 1 valid
  int index = 0;        // index within the split
  bool is_dog = false;  // the task's second class
  fs::path path;
};

std::string zero_padded(int n) {
  std::string digits = std::to_string(n);
  return std::string(digits.size() < 5 ? 5 - digits.size() : 0, '0') + digits;
}

// Cats first: a split of n images holds (n+1)/2 cats and n/2 dogs.
std::vector<Job> plan_jobs(const SynthOptions& o) {
  std::vector<Job> jobs;
  const bool kaggle = o.layout == "kaggle";
  std::array<int, 2> kaggle_next = {0, 0};  // kaggle numbers each class from 0 across splits
  const fs::path root(o.out_dir);
  for (int split = 0; split < 2; ++split) {
    const int count = split == 0 ? o.train : o.valid;
    const int cats = (count + 1) / 2;
    for (int i = 0; i < count; ++i) {
      Job job{split, i, i >= cats, {}};
      const char* name = class_names(o.task)[job.is_dog ? 1 : 0];
      if (kaggle) {
        const int n = kaggle_next[job.is_dog ? 1 : 0]++;
        job.path = root / "train" / (std::string(name) + "." + std::to_string(n) + ".jpg");
      } else {
        const int n = job.is_dog ? i - cats : i;
        job.path = root / (split == 0 ? "train" : "valid") / name / (zero_padded(n) + ".jpg");
      }
      jobs.push_back(std::move(job));
    }
  }
  return jobs;
}

void write_job(const Job& job, const SynthOptions& o) {
  const cv::Mat image =
      draw_synthetic_image(image_seed(o.seed, job.split, job.index), job.is_dog, o);
  std::vector<uchar> bytes;
  if (!cv::imencode(".jpg", image, bytes, {cv::IMWRITE_JPEG_QUALITY, o.jpeg_quality})) {
    throw DataError("cannot encode synthetic image '" + job.path.string() + "' as JPEG");
  }
  write_file_atomic(job.path.string(), {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

// Runs write_job over contiguous ranges on a few threads; rethrows the first worker error.
void write_all(const std::vector<Job>& jobs, const SynthOptions& o) {
  const size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  const size_t chunk = (jobs.size() + workers - 1) / workers;
  std::vector<std::exception_ptr> errors(workers);
  {
    std::vector<std::jthread> threads;  // joined on scope exit, even if a later start throws
    for (size_t w = 0; w < workers; ++w) {
      threads.emplace_back([&, w] {
        try {
          for (size_t i = w * chunk; i < std::min(jobs.size(), (w + 1) * chunk); ++i) {
            write_job(jobs[i], o);
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

void validate(const SynthOptions& o) {
  if (o.out_dir.empty()) throw ConfigError("synth: --out: expected a directory, got nothing");
  if (o.train < 2)
    throw ConfigError("synth: --train: expected at least 2 images (one per class), got " +
                      std::to_string(o.train));
  if (o.valid < 2)
    throw ConfigError("synth: --valid: expected at least 2 images (one per class), got " +
                      std::to_string(o.valid));
  if (o.layout != "folders" && o.layout != "kaggle") {
    throw ConfigError("synth: --layout: expected folders or kaggle, got '" + o.layout + "'");
  }
  if (o.task != "cats_dogs" && o.task != "bears_rabbits") {
    throw ConfigError("synth: --task: expected cats_dogs or bears_rabbits, got '" + o.task + "'");
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

void create_directories(const std::vector<Job>& jobs) {
  std::vector<fs::path> dirs;
  for (const auto& job : jobs) dirs.push_back(job.path.parent_path());
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

}  // namespace

SynthResult write_synthetic_dataset(const SynthOptions& options) {
  validate(options);
  const std::vector<Job> jobs = plan_jobs(options);
  create_directories(jobs);
  write_all(jobs, options);
  SynthResult result;
  const bool kaggle = options.layout == "kaggle";
  result.train_written = kaggle ? options.train + options.valid : options.train;
  result.valid_written = kaggle ? 0 : options.valid;
  return result;
}

}  // namespace ltfit
