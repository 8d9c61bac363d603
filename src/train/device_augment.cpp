// fastai v2's batch transforms on the training batch's device; see device_augment.h.
#include "ltfit/train/device_augment.h"

#include <vector>

#include <torch/torch.h>

#include "ltfit/data/batch_augment.h"
#include "ltfit/model/classifier.h"
#include "ltfit/train/mixup.h"
#include "ltfit/util/random.h"

namespace ltfit {
namespace {

// [1, 3, 1, 1] of `values` on `like`'s device.
torch::Tensor per_channel(const std::array<float, 3>& values, const torch::Tensor& like) {
  return torch::tensor(std::vector<float>(values.begin(), values.end()), like.options())
      .view({1, 3, 1, 1});
}

}  // namespace

DeviceAugmentHook::DeviceAugmentHook(AugmentConfig config, std::uint64_t seed, int rank, int world)
    : config_(std::move(config)), seed_(seed), rank_(rank), world_(world) {}

std::uint64_t DeviceAugmentHook::batch_seed(std::uint64_t seed, std::int64_t step,
                                            std::uint64_t slice) {
  constexpr std::uint64_t kStream = 0x44455641;  // "DEVA": apart from the other hooks' draws
  return mix_seed(mix_seed(mix_seed(seed, kStream), static_cast<std::uint64_t>(step)), slice);
}

void DeviceAugmentHook::before_batch(TrainContext& ctx) {
  if (ctx.images.size(0) == 0) return;
  ctx.images = augment(ctx.images, ctx.model->input_normalization(), ctx.state.global_step,
                       ctx.batch_in_step);
}

torch::Tensor DeviceAugmentHook::augment(const torch::Tensor& images,
                                         const ImageNormalization& norm, std::int64_t step,
                                         int batch_in_step) const {
  const torch::Tensor mean = per_channel(norm.mean, images);
  const torch::Tensor std = per_channel(norm.std, images);
  const bool channels_last =
      images.is_contiguous(torch::MemoryFormat::ChannelsLast) && !images.is_contiguous();
  const BatchAugmentDraw draw = draw_batch_augment(
      config_, images.size(0), batch_seed(seed_, step, slice_number(batch_in_step, rank_, world_)));
  torch::NoGradGuard no_grad;
  const torch::Tensor pixels = images * std + mean;  // [0, 1]
  const torch::Tensor augmented = augment_batch(pixels, draw, static_cast<int>(images.size(2)));
  torch::Tensor out = (augmented - mean) / std;
  if (channels_last) out = out.contiguous(torch::MemoryFormat::ChannelsLast);
  return out;
}

}  // namespace ltfit
