// DeviceCacheSource (device_cache.h).
#include "ltfit/data/device_cache.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <string>

#include "ltfit/data/shard.h"
#include "ltfit/util/error.h"
#include "ltfit/util/random.h"

namespace ltfit {

namespace {

namespace F = torch::nn::functional;

[[noreturn]] void refuse(const std::string& why) {
  throw ConfigError(
      "data.cache: device keeps images a source holds decoded (CIFAR's records) on "
      "the device; " +
          why,
      "use data.cache: ram (decoded images kept in memory) or none for image files");
}

}  // namespace

DeviceCacheSource::DeviceCacheSource(const std::vector<Sample>& samples,
                                     const LoaderOptions& options, const torch::Device& device,
                                     int crop_padding)
    : options_(options), padding_(crop_padding) {
  if (samples.empty()) refuse("the training split is empty");
  if (options.multi_label_classes > 0) refuse("a multi-label task is not supported");
  if (!options.data.size_schedule.empty()) refuse("data.size_schedule is not supported");
  const SampleImage& first = samples.front().image;
  if (!first) refuse("'" + samples.front().path + "' is an image file");
  const int side = first.width;
  auto host = torch::empty({static_cast<std::int64_t>(samples.size()), side, side, 3},
                           torch::TensorOptions().dtype(torch::kUInt8));
  auto labels = torch::empty({static_cast<std::int64_t>(samples.size())}, torch::kInt64);
  auto* out = host.data_ptr<std::uint8_t>();
  auto* label = labels.data_ptr<std::int64_t>();
  const std::size_t bytes = static_cast<std::size_t>(side) * side * 3;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const SampleImage& image = samples[i].image;
    if (!image) refuse("'" + samples[i].path + "' is an image file");
    if (image.width != side || image.height != side) {
      refuse("'" + samples[i].path + "' is " + std::to_string(image.width) + "×" +
             std::to_string(image.height) + ", not " + std::to_string(side) + "×" +
             std::to_string(side) + " as the first");
    }
    std::memcpy(out + i * bytes, image.data(), bytes);
    label[i] = samples[i].label;
  }
  images_ = host.to(device);
  labels_ = labels.to(device);
}

std::int64_t DeviceCacheSource::batches_per_epoch() const {
  return images_.size(0) / options_.data.batch_size;  // the last partial batch is dropped
}

void DeviceCacheSource::start_epoch(int epoch, std::int64_t skip_batches) {
  epoch_ = epoch;
  order_ = epoch_permutation(images_.size(0), options_.seed, epoch);
  next_batch_ = std::clamp<std::int64_t>(skip_batches, 0, batches_per_epoch());
}

std::optional<Batch> DeviceCacheSource::next() {
  if (next_batch_ >= batches_per_epoch()) return std::nullopt;
  const std::int64_t b = options_.data.batch_size;
  const Span slice = options_.shard.count > 1 ? batch_slice(b, options_.shard) : Span{0, b};
  const std::int64_t n = slice.size();
  Batch batch;
  for (std::int64_t i = 0; i < n; ++i) {
    batch.indices.push_back(order_[static_cast<std::size_t>(next_batch_ * b + slice.begin + i)]);
  }
  // The draws of the whole global batch, so a rank's rows are the same as on one device.
  auto generator = at::make_generator<at::CPUGeneratorImpl>(
      mix_seed(mix_seed(options_.seed, 0xCAC4E000ULL + static_cast<std::uint64_t>(epoch_)),
               static_cast<std::uint64_t>(next_batch_)));
  const auto cpu_long = torch::TensorOptions().dtype(torch::kInt64);
  const torch::Tensor dy = torch::randint(0, 2 * padding_ + 1, {b}, generator, cpu_long);
  const torch::Tensor dx = torch::randint(0, 2 * padding_ + 1, {b}, generator, cpu_long);
  const torch::Tensor flip = torch::randint(0, 2, {b}, generator, cpu_long);
  ++next_batch_;

  const torch::Device device = images_.device();
  const auto rows_of = [&](const torch::Tensor& t) {
    return t.slice(0, slice.begin, slice.end).to(device);
  };
  const torch::Tensor index = torch::tensor(batch.indices, cpu_long).to(device);
  const std::int64_t side = images_.size(1);
  // [n,H,W,3] -> zero-padded [n,H+2p,W+2p,3], then each row's window gathered (mirrored).
  const torch::Tensor picked = images_.index_select(0, index);
  const torch::Tensor padded =
      torch::constant_pad_nd(picked, {0, 0, padding_, padding_, padding_, padding_}, 0);
  const torch::Tensor steps =
      torch::arange(side, torch::TensorOptions().dtype(torch::kInt64).device(device));
  const torch::Tensor rows = rows_of(dy).view({n, 1}) + steps.view({1, side});
  const torch::Tensor mirrored = rows_of(flip).view({n, 1}).to(torch::kBool);
  const torch::Tensor cols =
      rows_of(dx).view({n, 1}) +
      torch::where(mirrored, (side - 1) - steps.view({1, side}), steps.view({1, side}));
  const torch::Tensor which = torch::arange(n, steps.options()).view({n, 1, 1});
  torch::Tensor images = padded.index({which, rows.view({n, side, 1}), cols.view({n, 1, side})});
  const int size = options_.data.image_size;
  if (size != side) {
    images = F::interpolate(images.permute({0, 3, 1, 2}).to(torch::kFloat32),
                            F::InterpolateFuncOptions()
                                .size(std::vector<std::int64_t>{size, size})
                                .mode(torch::kBilinear)
                                .align_corners(false))
                 .round()
                 .clamp(0, 255)
                 .to(torch::kUInt8)
                 .permute({0, 2, 3, 1});
  }
  batch.images = images.contiguous();
  batch.labels = labels_.index_select(0, index);
  return batch;
}

}  // namespace ltfit
