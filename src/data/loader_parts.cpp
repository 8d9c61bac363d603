// The loader's free parts (loader.h): its options from a config, worker counts, the per-image
// seeds, captions and multi-hot label rows, and the uint8 -> normalised float conversion of a
// batch. Pure functions (normalize_images runs on the given device). Thread-safe.
#include "ltfit/data/loader.h"

#include <sched.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <thread>

#include "ltfit/data/readable_images.h"
#include "ltfit/util/error.h"
#include "ltfit/util/random.h"

namespace ltfit {

LoaderOptions make_loader_options(const Config& config, bool train) {
  LoaderOptions options;
  options.data = config.data;
  if (!train) options.data.size_schedule.clear();  // validation stays at image_size
  options.train = train;
  options.seed = config.run.seed;
  return options;
}

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int default_worker_count() { return std::min(available_cores(), kMaxLoaderWorkers); }

std::uint64_t sample_seed(std::uint64_t seed, int epoch, std::int64_t position) {
  return mix_seed(mix_seed(seed, static_cast<std::uint64_t>(epoch)),
                  static_cast<std::uint64_t>(position));
}

std::uint64_t policy_seed(std::uint64_t augment_seed) {
  // A stream of its own beside draw_augment's; below 2^63, as torch.manual_seed takes it.
  constexpr std::uint64_t kPolicyStream = 0x52414e44;  // "RAND"
  return mix_seed(augment_seed, kPolicyStream) >> 1;
}

std::string batch_caption(const Batch& batch, std::int64_t i,
                          const std::vector<std::string>& classes) {
  const torch::Tensor row = batch.labels[i];
  if (row.dim() == 0) return classes.at(static_cast<std::size_t>(row.item<std::int64_t>()));
  std::string names;
  for (std::int64_t c = 0; c < row.size(0); ++c) {
    if (row[c].item<float>() > 0.5F) {
      names += (names.empty() ? "" : " ") + classes.at(static_cast<std::size_t>(c));
    }
  }
  return names.empty() ? "(no label)" : names;
}

torch::Tensor Loader::multi_hot(const std::vector<std::int64_t>& positions) const {
  const auto rows = static_cast<std::int64_t>(positions.size());
  torch::Tensor hot = torch::zeros({rows, options_.multi_label_classes}, torch::kFloat32);
  auto cells = hot.accessor<float, 2>();
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c : samples_[static_cast<std::size_t>(positions[r])].labels) {
      if (c >= 0 && c < options_.multi_label_classes) cells[r][c] = 1.0F;
    }
  }
  return hot;
}

namespace {

// (pixel - 255·mean) · 1/(255·std): the 0-255 form of torchvision's (pixel/255 - mean) / std.
std::array<float, 3> scaled_mean(const ImageNormalization& n) {
  return {n.mean[0] * 255.f, n.mean[1] * 255.f, n.mean[2] * 255.f};
}
std::array<float, 3> scaled_inv_std(const ImageNormalization& n) {
  return {1.f / (n.std[0] * 255.f), 1.f / (n.std[1] * 255.f), 1.f / (n.std[2] * 255.f)};
}

// CPU: one pass over the bytes through a 3x256 table, writing NHWC floats; the table holds
// exactly what (float(v) - mean) * inv_std gives, so results equal the tensor formula.
torch::Tensor normalize_on_cpu(const torch::Tensor& images, const ImageNormalization& norm) {
  const std::array<float, 3> mean = scaled_mean(norm), inv_std = scaled_inv_std(norm);
  std::array<std::array<float, 256>, 3> table{};
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) table[c][v] = (static_cast<float>(v) - mean[c]) * inv_std[c];
  }
  const torch::Tensor src = images.contiguous();
  torch::Tensor out = torch::empty(src.sizes(), torch::kFloat32);
  const std::uint8_t* in = src.data_ptr<std::uint8_t>();
  float* dst = out.data_ptr<float>();
  at::parallel_for(0, src.numel() / 3, /*grain_size=*/16384, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      dst[3 * i] = table[0][in[3 * i]];
      dst[3 * i + 1] = table[1][in[3 * i + 1]];
      dst[3 * i + 2] = table[2][in[3 * i + 2]];
    }
  });
  return out;
}

}  // namespace

torch::Tensor normalize_images(const torch::Tensor& images, const torch::Device& device,
                               bool channels_last, const ImageNormalization& normalization) {
  LTFIT_CHECK(images.dim() == 4 && images.size(3) == 3 && images.scalar_type() == torch::kUInt8,
              "images must be uint8 [N,H,W,3]");
  if (device.is_cpu()) {
    const torch::Tensor x = normalize_on_cpu(images, normalization).permute({0, 3, 1, 2});
    return channels_last ? x : x.contiguous();  // the permute is a view: memory stays NHWC
  }
  // Copy the bytes (pinned: asynchronously), convert and normalise on the device.
  return normalize_on_device(images.to(device, /*non_blocking=*/true),
                             normalization_tensors(normalization, device), channels_last);
}

NormalizationTensors normalization_tensors(const ImageNormalization& normalization,
                                           const torch::Device& device) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat32);
  const std::array<float, 3> m = scaled_mean(normalization), s = scaled_inv_std(normalization);
  return {torch::tensor(std::vector<float>(m.begin(), m.end()), options).to(device),
          torch::tensor(std::vector<float>(s.begin(), s.end()), options).to(device)};
}

torch::Tensor normalize_on_device(const torch::Tensor& images,
                                  const NormalizationTensors& constants, bool channels_last) {
  const torch::Tensor x =
      (images.to(torch::kFloat32) - constants.offset).mul_(constants.scale).permute({0, 3, 1, 2});
  return channels_last ? x : x.contiguous();
}

}  // namespace ltfit
