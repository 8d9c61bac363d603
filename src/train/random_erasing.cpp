// Random erasing, draw for draw as torchvision's: see random_erasing.h.
#include "ltfit/train/random_erasing.h"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "ltfit/train/mixup.h"
#include "ltfit/util/random.h"

namespace ltfit {

ErasedBox random_erase(torch::Tensor image, const RandomErasingConfig& config,
                       at::Generator& generator) {
  using torch::indexing::Slice;
  // forward: `if torch.rand(1) < self.p` (a float32 comparison)
  if (!(torch::rand({1}, generator) < config.p).item<bool>()) return {};
  const std::int64_t c = image.size(0), img_h = image.size(1), img_w = image.size(2);
  const auto area = static_cast<double>(img_h * img_w);
  // get_params: log_ratio is float32, each uniform a float32 tensor read back with .item()
  const torch::Tensor log_ratio =
      torch::log(torch::tensor({config.ratio[0], config.ratio[1]}, torch::kFloat32));
  const double log_low = log_ratio[0].item<double>(), log_high = log_ratio[1].item<double>();
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double erase_area =
        area *
        torch::empty({1}).uniform_(config.scale[0], config.scale[1], generator).item<double>();
    const double aspect =
        torch::exp(torch::empty({1}).uniform_(log_low, log_high, generator)).item<double>();
    // Python's round: half to even, as std::nearbyint in the default rounding mode
    const auto h = static_cast<std::int64_t>(std::nearbyint(std::sqrt(erase_area * aspect)));
    const auto w = static_cast<std::int64_t>(std::nearbyint(std::sqrt(erase_area / aspect)));
    if (!(h < img_h && w < img_w)) continue;
    torch::Tensor v = config.random_value
                          ? torch::empty({c, h, w}, torch::kFloat32).normal_(0.0, 1.0, generator)
                          : torch::full({c, 1, 1}, config.value, torch::kFloat32);
    const std::int64_t i =
        torch::randint(0, img_h - h + 1, {1}, generator, torch::kLong).item<std::int64_t>();
    const std::int64_t j =
        torch::randint(0, img_w - w + 1, {1}, generator, torch::kLong).item<std::int64_t>();
    torch::NoGradGuard no_grad;
    image.index_put_({Slice(), Slice(i, i + h), Slice(j, j + w)},
                     v.to(image.device(), image.scalar_type()));
    return {true, i, j, h, w};
  }
  return {};  // no box fitted in 10 tries: the image as it was
}

RandomErasingHook::RandomErasingHook(RandomErasingConfig config, std::uint64_t seed, int rank,
                                     int world)
    : config_(std::move(config)), seed_(seed), rank_(rank), world_(world) {}

std::uint64_t RandomErasingHook::image_seed(std::uint64_t seed, std::int64_t step,
                                            std::uint64_t slice, std::int64_t index) {
  std::uint64_t s = mix_seed(seed ^ 0x45524153ULL, static_cast<std::uint64_t>(step));
  s = mix_seed(s, slice);
  // torch.manual_seed takes the seed as a signed 64-bit number too: keep it below 2^63.
  return mix_seed(s, static_cast<std::uint64_t>(index)) >> 1;
}

void RandomErasingHook::before_batch(TrainContext& ctx) {
  erase(ctx.images, ctx.state.global_step, ctx.batch_in_step);
}

void RandomErasingHook::erase(torch::Tensor& images, std::int64_t step, int batch_in_step) const {
  for (std::int64_t n = 0; n < images.size(0); ++n) {
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(
        image_seed(seed_, step, slice_number(batch_in_step, rank_, world_), n));
    random_erase(images[n], config_, generator);
  }
}

}  // namespace ltfit
