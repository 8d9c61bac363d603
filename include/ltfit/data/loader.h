// A batching image loader: decode -> crop/flip -> batch on worker threads, one batch ahead.
//
// Threads, not processes: no shared-memory files, so no /dev/shm limits (REFERENCE.md §3).
// Each epoch's order and each sample's crop/flip derive from (seed, epoch, sample index) only,
// so batches are identical whatever the worker count. Unreadable images are skipped, counted
// once and named in the log; an exception in a worker is re-raised on the caller's thread.
// A Loader is used from one thread; its destructor joins its workers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "ltfit/config/config.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/util/random.h"  // mix_seed, epoch_permutation: the loader's order and crops

namespace ltfit {

struct LoaderOptions {
  int image_size = 224;   // output side, pixels
  int batch_size = 16;    // images per batch
  bool train = false;     // shuffle, random crop + flip, drop the last partial batch
  AugmentConfig augment;  // used when train or augment_in_order
  // Not training (in order, every sample, no drop) but with training augmentation drawn from
  // (seed, epoch, position): fastai v2's TTA passes, one epoch number per pass.
  bool augment_in_order = false;
  std::uint64_t seed = 0;   // base of every random choice
  int workers = 0;          // decode threads; 0 = auto (default_worker_count())
  bool pin_memory = false;  // allocate batches in page-locked memory (for CUDA copies)
  // Called on the worker thread before each image is loaded; may throw. For fault-injection
  // tests (an exception here must reach the consumer with the image's path).
  std::function<void(const std::string& path)> before_load;
};

struct Batch {
  torch::Tensor images;               // uint8 [N,H,W,3] RGB
  torch::Tensor labels;               // int64 [N]
  std::vector<std::int64_t> indices;  // positions in the sample list, for predictions
};

// Images that could not be decoded, each counted once per loader.
struct SkippedImages {
  std::int64_t count = 0;             // number of distinct unreadable files
  std::vector<std::string> examples;  // "path: reason", first few
};

class Loader {
 public:
  Loader(std::vector<Sample> samples, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Starts an epoch (0-based); any batches of a previous epoch still in flight are discarded.
  // `skip_batches` > 0 starts at that batch of the epoch (resuming mid-epoch): the batches after
  // it are exactly those an uninterrupted epoch would have delivered.
  void start_epoch(int epoch, std::int64_t skip_batches = 0);
  // The next batch of the current epoch, or nullopt at its end. Throws what a worker threw.
  std::optional<Batch> next();

  std::int64_t batches_per_epoch() const;
  std::int64_t size() const { return static_cast<std::int64_t>(samples_.size()); }
  const std::vector<Sample>& samples() const { return samples_; }
  SkippedImages skipped() const;
  int workers() const;

 private:
  struct State;
  void worker_loop();
  // Decodes the samples at `positions` for `epoch`; nullopt when every one was unreadable.
  std::optional<Batch> build_batch(const std::vector<std::int64_t>& positions, int epoch);
  // Loads one sample for `epoch`: augmented when training, centre-cropped otherwise.
  std::optional<torch::Tensor> load_sample(std::int64_t position, int epoch,
                                           std::string* error) const;
  std::vector<Sample> samples_;
  LoaderOptions options_;
  std::unique_ptr<State> state_;
};

// Loader options for the training (shuffled, augmented) or validation split of `config`.
LoaderOptions make_loader_options(const Config& config, bool train);

// Cores this process may run on (sched_getaffinity, so containers' CPU sets count).
int available_cores();

// Loader threads for `data.workers: auto`: one per available core.
int default_worker_count();

// The seed of one sample's augmentation draw, from (seed, epoch, sample position).
std::uint64_t sample_seed(std::uint64_t seed, int epoch, std::int64_t position);

// uint8 [N,H,W,3] RGB -> float [N,3,H,W] ImageNet-normalised, on `device`, in one fused pass.
torch::Tensor normalize_images(const torch::Tensor& images, const torch::Device& device,
                               bool channels_last);

}  // namespace ltfit
