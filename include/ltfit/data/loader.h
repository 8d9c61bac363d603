// A batching image loader: decode -> augment (training: fastai's affine warp, zoom, rotation,
// flip and lighting; validation: centre crop) -> batch on worker threads, one batch ahead.
//
// Threads, not processes: no shared-memory files, so no /dev/shm limits (PyTorch's DataLoader
// workers need them). Each epoch's order and each sample's augmentation derive from (seed,
// epoch, sample index) only, so batches are identical whatever the worker count. Unreadable
// images (including files over data.max_pixels or of a format not in data.formats, FIFOs,
// directories and dangling links) are skipped, counted once and named in the log; an exception in a
// worker is re-raised on the caller's thread. A training loader checks every file's header when it
// starts (readable_images.h) and plans each epoch over the readable images only: unreadable files
// are not batches, and no readable image repeats to stand in for them. The check depends on the
// files alone, so every rank and a resumed run plan the same epochs, and batches_per_epoch() (which
// the one-cycle schedule's length is computed from) is fixed for the loader's life. A file that
// passes the check but fails to decode (a corrupt body) is refilled in its training batch, in a
// fixed order, from the images after it in the epoch's order, so the batch keeps its size and a
// resumed run sees the same batches; found_unreadable() reports it, and the Trainer leaves it out
// of later epochs' plans (leave_out: such an epoch has fewer batches, and ends early). Decoding
// holds memory from a DecodeBudget shared by all workers (and, by default, all loaders), so
// data.workers does not multiply the worst case. A Loader is used from one thread; its destructor
// joins its workers.
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
#include "ltfit/data/decode_budget.h"
#include "ltfit/data/decode_cache.h"
#include "ltfit/data/image_header.h"
#include "ltfit/data/image_io.h"
#include "ltfit/data/shard.h"
#include "ltfit/util/image_normalization.h"
#include "ltfit/util/random.h"  // mix_seed, epoch_permutation: the loader's order and crops

namespace ltfit {

struct LoaderOptions {
  // The config's data section, read where the loader needs it, not copied key by key:
  // image_size (the output side), batch_size, augment (used when train or augment_in_order;
  // the policy when train only), workers (1..kMaxLoaderWorkers; 0 = default_worker_count()),
  // max_pixels and formats (what a file must pass to be decoded), and, training only,
  // size_schedule (the side from each step's global epoch on). A loader made for another purpose
  // changes its copy (predict's batch size, a checkpoint's image size, TTA's augmentation).
  DataConfig data;
  bool train = false;  // shuffle, random crop + flip, drop the last partial batch
  // Not training (in order, every sample, no drop) but with training augmentation drawn from
  // (seed, epoch, position): fastai v2's TTA passes, one epoch number per pass.
  bool augment_in_order = false;
  // Not training: each image goes through torchvision's eval transform (resize, centre crop,
  // Pillow's filter; `predict --weights`) instead of the centre square at image_size, which must
  // then equal eval_transform->crop.
  std::optional<EvalTransform> eval_transform;
  std::uint64_t seed = 0;   // base of every random choice (run.seed)
  bool pin_memory = false;  // allocate batches in page-locked memory (for CUDA copies)
  // Bounds the memory decodes hold at once; null: the process-wide default_decode_budget().
  std::shared_ptr<DecodeBudget> decode_budget;
  // data.cache: ram — decoded images kept across epochs, shared with the run's other loaders
  // (decode_cache.h); null: none.
  std::shared_ptr<DecodedImageCache> cache;
  // Training in a data-parallel run: batch_size is the global batch and this loader delivers
  // only `shard`'s slice of each (shard.h). A slice without enough readable images is then
  // delivered empty (0 images) instead of being passed over, so every rank counts the same
  // batches and no rank waits for a collective that another skipped.
  Shard shard;
  // Multi-label: the number of classes; each batch's labels are then float [N, classes]
  // multi-hot rows from the samples' label sets. 0: int64 [N] class indices.
  std::int64_t multi_label_classes = 0;
  // Called on the worker thread before each image is loaded; may throw. For fault-injection
  // tests (an exception here must reach the consumer with the image's path).
  std::function<void(const std::string& path)> before_load;
};

struct Batch {
  torch::Tensor images;               // uint8 [N,H,W,3] RGB
  torch::Tensor labels;               // int64 [N], or float [N, classes] multi-hot (multi-label)
  std::vector<std::int64_t> indices;  // positions in the sample list, for predictions
};

// The label of image `i` of `batch` in words: its class, or (multi-hot rows) its classes joined
// by spaces, "(no label)" for an empty set. For captions (show-batch, TensorBoard).
std::string batch_caption(const Batch& batch, std::int64_t i,
                          const std::vector<std::string>& classes);

// Images that could not be decoded, each counted once per loader.
struct SkippedImages {
  std::int64_t count = 0;             // number of distinct unreadable files
  std::vector<std::string> examples;  // "path: reason", first few
  // Training batches dropped because fewer than 2 readable images could fill them (the whole
  // epoch has fewer than 2 readable images); BatchNorm cannot train on one.
  std::int64_t dropped_batches = 0;
  std::vector<std::string> paths;  // every unreadable file, sorted (count of them)
};

// What the Trainer draws training batches from: a Loader, or a test's or find-batch's own.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Starts epoch `epoch` at its batch `skip_batches` (mid-epoch resume).
  virtual void start_epoch(int epoch, std::int64_t skip_batches) = 0;
  // The next batch of the epoch, or nullopt at its end.
  virtual std::optional<Batch> next() = 0;
  // Batches of an epoch as planned at the start (the schedule's length); an epoch after
  // leave_out() may have fewer.
  virtual std::int64_t batches_per_epoch() const = 0;
  // Side of epoch `epoch`'s images (data.size_schedule); 0: not known.
  virtual int image_size_at(int /*epoch*/) const { return 0; }
  // Batches the epoch last started delivers (fewer than batches_per_epoch() once images were
  // left out).
  virtual std::int64_t epoch_batch_count() const { return batches_per_epoch(); }
  // Samples in the list that positions index (leave_out, found_unreadable); 0: not tracked.
  virtual std::int64_t sample_count() const { return 0; }
  // Positions of the samples whose decoding failed so far, ascending: those of the batches
  // delivered (each batch reports every unreadable candidate it went through), so the answer
  // depends only on how far the epochs got.
  virtual std::vector<std::int64_t> found_unreadable() const { return {}; }
  // The epochs started from now on are planned without `positions` (ascending), replacing the
  // set given before.
  virtual void leave_out(const std::vector<std::int64_t>& /*positions*/) {}
};

class Loader : public BatchSource {
 public:
  // Starts the worker threads. Throws ConfigError for more than kMaxLoaderWorkers workers or a
  // training batch size under 2, RuntimeError (exit 5) when a thread cannot be started (any
  // started ones are joined first).
  Loader(std::vector<Sample> samples, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Starts an epoch (0-based); any batches of a previous epoch still in flight are discarded.
  // `skip_batches` > 0 starts at that batch of the epoch (resuming mid-epoch): the batches after
  // it are exactly those an uninterrupted epoch would have delivered.
  void start_epoch(int epoch, std::int64_t skip_batches = 0) override;
  // The next batch of the current epoch, or nullopt at its end. Throws what a worker threw.
  std::optional<Batch> next() override;

  std::int64_t batches_per_epoch() const override;
  std::int64_t epoch_batch_count() const override;
  std::int64_t sample_count() const override { return size(); }
  int image_size_at(int epoch) const override;
  std::vector<std::int64_t> found_unreadable() const override;
  void leave_out(const std::vector<std::int64_t>& positions) override;
  std::int64_t size() const { return static_cast<std::int64_t>(samples_.size()); }
  // Images the next epoch is planned over: training, those whose header check passed (size()
  // less those found unreadable when the loader started) less those left out; otherwise size().
  std::int64_t planned() const { return static_cast<std::int64_t>(plan_.size()); }
  // Images whose header check passed (training; otherwise size()): planned() before leave_out.
  std::int64_t header_readable() const { return static_cast<std::int64_t>(readable_.size()); }
  const std::vector<Sample>& samples() const { return samples_; }
  SkippedImages skipped() const;
  int workers() const;

 private:
  struct State;
  struct Work;
  void start_workers(int count);
  void worker_loop();
  // Decodes batch `work.index` of an epoch; nullopt when no image (training: fewer than 2)
  // could be read.
  // `unreadable` gets the positions among its candidates that could not be read.
  std::optional<Batch> build_batch(const Work& work, std::vector<std::int64_t>& unreadable);
  // float [positions, multi_label_classes]: the samples' label sets as multi-hot rows.
  torch::Tensor multi_hot(const std::vector<std::int64_t>& positions) const;
  // Decodes the sample at `position` into row `row` of `images`; false (and counted) if it is
  // unreadable. `refill` > 0 draws a different augmentation for a sample refilling batch
  // refill - 1.
  bool add_sample(std::int64_t position, int epoch, std::int64_t refill, torch::Tensor& images,
                  Batch& batch, std::vector<std::int64_t>& labels,
                  std::vector<std::int64_t>& unreadable);
  // Loads one sample for `epoch`: augmented when training, centre-cropped otherwise.
  std::optional<torch::Tensor> load_sample(std::int64_t position, int epoch,
                                           std::uint64_t augment_seed, std::string* error) const;
  // Records `path` as unreadable (counted and logged once); false if it was already known.
  bool note_unreadable(const std::string& path, const std::string& error);
  // Training: the header check of every sample, which fills plan_ and the skipped list.
  void plan_readable();
  // Batches of an epoch planned over plan_.
  std::int64_t epoch_batches() const;
  std::vector<Sample> samples_;
  std::vector<std::int64_t> readable_;  // training: positions whose header check passed
  std::vector<std::int64_t> plan_;      // positions the next epoch is planned over, ascending
  std::int64_t scheduled_batches_ = 0;  // batches_per_epoch(): from the plan at the start
  LoaderOptions options_;
  ImageLimits limits_;    // image_limits(options_.data): what a file must pass to be decoded
  int worker_count_ = 0;  // fixed before any worker starts
  std::unique_ptr<State> state_;
};

// Loader options for the training (shuffled, augmented) or validation split of `config`.
LoaderOptions make_loader_options(const Config& config, bool train);

// Cores this process may run on (sched_getaffinity, so containers' CPU sets count).
int available_cores();

// Loader threads for `data.workers: auto`: one per available core, at most kMaxLoaderWorkers.
int default_worker_count();

// The seed of one sample's augmentation draw, from (seed, epoch, sample position).
std::uint64_t sample_seed(std::uint64_t seed, int epoch, std::int64_t position);

// The torch generator seed of one sample's data.augment.policy draws, from its augmentation seed
// (sample_seed): a stream apart from draw_augment's.
std::uint64_t policy_seed(std::uint64_t augment_seed);

// uint8 [N,H,W,3] RGB -> float [N,3,H,W] normalised with `normalization` (the model's:
// Classifier::input_normalization(); default ImageNet's), on `device`, in one fused pass.
torch::Tensor normalize_images(const torch::Tensor& images, const torch::Device& device,
                               bool channels_last, const ImageNormalization& normalization = {});

// A normalisation as two float [3] tensors on one device: x_norm = (x_uint8 - offset) * scale.
struct NormalizationTensors {
  torch::Tensor offset;
  torch::Tensor scale;
};
NormalizationTensors normalization_tensors(const ImageNormalization& normalization,
                                           const torch::Device& device);

// normalize_images for uint8 images already on the device, with its constants there too: no
// host copy, so nothing in it waits for the device.
torch::Tensor normalize_on_device(const torch::Tensor& images,
                                  const NormalizationTensors& constants, bool channels_last);

}  // namespace ltfit
