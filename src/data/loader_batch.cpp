// Building one batch of the Loader (loader.h) on a worker thread: each sample decoded (augmented
// when training, centre-cropped otherwise), unreadable images noted once and passed over, a
// training batch refilled from the images after it in the epoch's order and dropped when fewer
// than kMinTrainBatch are readable, and the labels as indices or multi-hot rows.
#include "ltfit/data/loader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "data/loader_state.h"
#include "data/system_io.h"
#include "ltfit/data/augment.h"
#include "ltfit/data/auto_augment.h"
#include "ltfit/data/image_io.h"
#include "ltfit/util/error.h"
#include "ltfit/util/random.h"

namespace ltfit {

namespace {

constexpr std::size_t kSkippedExamples = 20;

}  // namespace

std::optional<torch::Tensor> Loader::load_sample(std::int64_t position, int epoch,
                                                 std::uint64_t augment_seed,
                                                 std::string* error) const {
  const Sample& sample = samples_[static_cast<std::size_t>(position)];
  DecodeBudget* budget = options_.decode_budget.get();
  try {
    if (options_.before_load) options_.before_load(sample.path);
    if (options_.eval_transform) {
      return load_eval_image(sample, *options_.eval_transform, error, limits_, budget);
    }
    const Framing framing{options_.data.resize_method, options_.data.pad_mode};
    if (!options_.train && !options_.augment_in_order) {
      return load_square_image(sample, options_.data.image_size, CropFlip{.framing = framing},
                               error, limits_, budget, options_.cache.get());
    }
    const AugmentParams params = draw_augment(options_.data.augment, augment_seed, framing);
    // data.augment.on: device: only the crop here, in the same one warp (DeviceAugmentHook does
    // the rest on the batch).
    const bool on_device = options_.train && options_.data.augment.on == AugmentPlace::kDevice;
    std::optional<torch::Tensor> image =
        load_augmented_image(sample, image_size_at(epoch), on_device ? crop_only(params) : params,
                             error, limits_, budget, options_.cache.get());
    if (image && options_.train &&
        options_.data.augment.policy != AugmentPolicy::kNone) {  // not TTA
      image = apply_augment_policy(*image, options_.data.augment.policy,
                                   options_.data.augment.rand_augment, policy_seed(augment_seed));
    }
    return image;
  } catch (const SystemIoError&) {  // already names the path; exit 5, not a data error
    throw;
  } catch (const std::bad_alloc&) {  // out of memory (exit 5), never a skipped image
    throw;
  } catch (const std::exception& e) {  // not a bad image: a real failure, named by its path
    throw DataError("loading image '" + sample.path + "' failed: " + e.what());
  }
}

bool Loader::note_unreadable(const std::string& path, const std::string& error) {
  std::lock_guard lock(state_->mutex);
  if (!state_->bad_paths.insert(path).second) return false;
  spdlog::warn("skipping unreadable image {}: {}", path, error);
  if (state_->bad_examples.size() < kSkippedExamples) {
    state_->bad_examples.push_back(path + ": " + error);
  }
  return true;
}

bool Loader::add_sample(std::int64_t position, int epoch, std::int64_t refill,
                        torch::Tensor& images, Batch& batch, std::vector<std::int64_t>& labels,
                        std::vector<std::int64_t>& unreadable) {
  const Sample& sample = samples_[static_cast<std::size_t>(position)];
  {
    std::lock_guard lock(state_->mutex);  // known unreadable: no need to read it again
    if (state_->bad_paths.count(sample.path)) {
      unreadable.push_back(position);
      return false;
    }
  }
  std::uint64_t seed = sample_seed(options_.seed, epoch, position);
  if (refill > 0) seed = mix_seed(seed, static_cast<std::uint64_t>(refill));
  std::string error;
  std::optional<torch::Tensor> image = load_sample(position, epoch, seed, &error);
  if (!image) {
    note_unreadable(sample.path, error);
    unreadable.push_back(position);
    return false;
  }
  images[static_cast<std::int64_t>(labels.size())].copy_(*image);
  labels.push_back(sample.label);
  batch.indices.push_back(position);
  return true;
}

std::optional<Batch> Loader::build_batch(const Work& work, std::vector<std::int64_t>& unreadable) {
  const std::vector<std::int64_t>& order = *work.order;
  const auto n = static_cast<std::int64_t>(order.size());
  const std::int64_t b = options_.data.batch_size;
  const bool sharded = options_.train && options_.shard.count > 1;
  const Span slice = sharded ? batch_slice(b, options_.shard) : Span{0, b};
  const std::int64_t want = slice.size();  // images this loader delivers per batch
  const std::int64_t begin = work.index * b + slice.begin;
  const std::int64_t end = std::min(work.index * b + slice.end, n);
  const std::int64_t global_end = std::min(work.index * b + b, n);
  const int size = image_size_at(work.epoch);
  torch::Tensor images =
      torch::empty({std::max<std::int64_t>(end - begin, 0), size, size, 3},
                   torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(options_.pin_memory));
  std::vector<std::int64_t> labels;
  Batch batch;
  for (std::int64_t i = begin; i < end; ++i) {
    add_sample(order[static_cast<std::size_t>(i)], work.epoch, 0, images, batch, labels,
               unreadable);
  }
  if (options_.train) {
    // Refill from the images after this (global) batch in the epoch's order (wrapping), in that
    // fixed order: which images fill the gap depends only on the order and on which files are
    // readable, never on timing, so a resumed epoch rebuilds the same batch. Rank r of N takes
    // every N-th candidate from the r-th, so ranks never refill with the same image.
    const std::int64_t stride = sharded ? options_.shard.count : 1;
    const std::int64_t first = sharded ? options_.shard.rank : 0;
    for (std::int64_t t = first;
         t < n - (global_end - work.index * b) && static_cast<std::int64_t>(labels.size()) < want;
         t += stride) {
      add_sample(order[static_cast<std::size_t>((global_end + t) % n)], work.epoch, work.index + 1,
                 images, batch, labels, unreadable);
    }
    if (static_cast<std::int64_t>(labels.size()) < kMinTrainBatch) {
      std::lock_guard lock(state_->mutex);
      ++state_->dropped_batches;
      spdlog::warn(
          "dropping training batch {} of epoch {}: fewer than {} readable images in the "
          "whole epoch (BatchNorm cannot train on one)",
          work.index, work.epoch, kMinTrainBatch);
      if (!sharded) return std::nullopt;
      labels.clear();  // delivered empty: every rank still counts this batch
      batch.indices.clear();
    }
  }
  if (labels.empty() && !sharded) return std::nullopt;
  batch.images = images.narrow(0, 0, static_cast<std::int64_t>(labels.size()));
  batch.labels = options_.multi_label_classes > 0 ? multi_hot(batch.indices)
                                                  : torch::tensor(labels, torch::kInt64);
  return batch;
}

}  // namespace ltfit
