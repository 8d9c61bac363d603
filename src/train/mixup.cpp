// timm's Mixup, draw for draw: see mixup.h. Each function names the timm function it follows
// (timm/data/mixup.py, timm 1.0.31), and keeps its order of draws and its float32/float64
// arithmetic (NumPy 2's rules: a float32 scalar with a Python number stays float32).
#include "ltfit/train/mixup.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

namespace ltfit {

double MixupRandom::rand() {
  const double value = rng_.uniform();
  if (record != nullptr) record->push_back({'r', value});
  return value;
}

double MixupRandom::beta(double alpha) {
  const double value = beta_draw(rng_, alpha, alpha);
  if (record != nullptr) record->push_back({'b', value});
  return value;
}

std::int64_t MixupRandom::randint(std::int64_t low, std::int64_t high) {
  // numpy refuses high <= low; a box range that small (a tiny image) draws its low end.
  const std::int64_t value =
      high > low
          ? low + static_cast<std::int64_t>(rng_.below(static_cast<std::uint64_t>(high - low)))
          : low;
  if (record != nullptr) record->push_back({'i', static_cast<double>(value)});
  return value;
}

namespace {

struct Box {
  std::int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;
  std::int64_t area() const { return (y1 - y0) * (x1 - x0); }
};

// timm's alphas: cutmix_minmax turns CutMix on with alpha 1.
double cutmix_alpha(const MixupConfig& c) { return c.cutmix_minmax.empty() ? c.cutmix_alpha : 1.0; }

// rand_bbox: a box of sides ratio·(H, W), ratio = sqrt(1 − λ), centred at a random pixel and
// clipped to the image. `ratio` comes in the caller's precision (float32 per image, float64 for
// the batch).
Box rand_bbox(std::int64_t h, std::int64_t w, double ratio, bool f32, MixupRandom& random) {
  const auto side = [&](std::int64_t n) {
    return f32 ? static_cast<std::int64_t>(static_cast<float>(n) * static_cast<float>(ratio))
               : static_cast<std::int64_t>(static_cast<double>(n) * ratio);
  };
  const std::int64_t cut_h = side(h), cut_w = side(w);
  const std::int64_t cy = random.randint(0, h);
  const std::int64_t cx = random.randint(0, w);
  const auto clip = [](std::int64_t v, std::int64_t n) {
    return std::clamp<std::int64_t>(v, 0, n);
  };
  // Python's // floors; cut_h, cut_w >= 0, so C++'s / does the same.
  return {clip(cy - cut_h / 2, h), clip(cy + (cut_h + 1) / 2, h), clip(cx - cut_w / 2, w),
          clip(cx + (cut_w + 1) / 2, w)};
}

// rand_bbox_minmax: sides drawn in [min, max) of the image's, placed anywhere inside it.
Box rand_bbox_minmax(std::int64_t h, std::int64_t w, const std::vector<double>& minmax,
                     MixupRandom& random) {
  const auto at = [](std::int64_t n, double f) {
    return static_cast<std::int64_t>(static_cast<double>(n) * f);
  };
  const std::int64_t cut_h = random.randint(at(h, minmax[0]), at(h, minmax[1]));
  const std::int64_t cut_w = random.randint(at(w, minmax[0]), at(w, minmax[1]));
  const std::int64_t y0 = random.randint(0, h - cut_h + 1);
  const std::int64_t x0 = random.randint(0, w - cut_w + 1);
  return {y0, y0 + cut_h, x0, x0 + cut_w};
}

// cutmix_bbox_and_lam (correct_lam true): the box, and λ as the part of the image kept.
Box cutmix_box(const MixupConfig& c, std::int64_t h, std::int64_t w, double lam, bool f32,
               MixupRandom& random, double& corrected) {
  Box box;
  if (!c.cutmix_minmax.empty()) {
    box = rand_bbox_minmax(h, w, c.cutmix_minmax, random);
  } else {
    const double ratio =
        f32 ? std::sqrt(static_cast<float>(1.0F - static_cast<float>(lam))) : std::sqrt(1.0 - lam);
    box = rand_bbox(h, w, ratio, f32, random);
  }
  corrected = 1.0 - static_cast<double>(box.area()) / static_cast<double>(h * w);
  return box;
}

// _params_per_batch: λ and whether it is CutMix.
std::pair<double, bool> params_per_batch(const MixupConfig& c, MixupRandom& random) {
  if (!(random.rand() < c.prob)) return {1.0, false};
  const double mix_alpha = c.mixup_alpha, cut_alpha = cutmix_alpha(c);
  if (mix_alpha > 0 && cut_alpha > 0) {
    const bool cutmix = random.rand() < c.switch_prob;
    return {random.beta(cutmix ? cut_alpha : mix_alpha), cutmix};
  }
  if (mix_alpha > 0) return {random.beta(mix_alpha), false};
  return {random.beta(cut_alpha), true};
}

// _params_per_elem: float32 λ per entry and whether each is CutMix.
void params_per_elem(const MixupConfig& c, std::int64_t n, MixupRandom& random,
                     std::vector<float>& lam, std::vector<bool>& cutmix) {
  const auto count = static_cast<std::size_t>(n);
  lam.assign(count, 1.0F);
  cutmix.assign(count, false);
  const double mix_alpha = c.mixup_alpha, cut_alpha = cutmix_alpha(c);
  std::vector<double> mix(count);
  if (mix_alpha > 0 && cut_alpha > 0) {
    for (std::size_t i = 0; i < count; ++i) cutmix[i] = random.rand() < c.switch_prob;
    std::vector<double> cut(count), blend(count);
    for (auto& v : cut) v = random.beta(cut_alpha);  // np.where evaluates both arrays
    for (auto& v : blend) v = random.beta(mix_alpha);
    for (std::size_t i = 0; i < count; ++i) mix[i] = cutmix[i] ? cut[i] : blend[i];
  } else {
    const bool cut_only = !(mix_alpha > 0);
    for (std::size_t i = 0; i < count; ++i) {
      mix[i] = random.beta(cut_only ? cut_alpha : mix_alpha);
      cutmix[i] = cut_only;
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (random.rand() < c.prob) lam[i] = static_cast<float>(mix[i]);
  }
}

using torch::indexing::Slice;

void paste(torch::Tensor& into, const torch::Tensor& from, const Box& b) {
  const auto rows = Slice(b.y0, b.y1), cols = Slice(b.x0, b.x1);
  into.index_put_({Slice(), rows, cols}, from.index({Slice(), rows, cols}));
}

// _mix_batch
MixResult mix_batch(const MixupConfig& c, torch::Tensor& x, MixupRandom& random) {
  auto [lam, cutmix] = params_per_batch(c, random);
  MixResult result;
  if (lam == 1.0) return result;
  if (cutmix) {
    const Box b = cutmix_box(c, x.size(2), x.size(3), lam, /*f32=*/false, random, lam);
    const auto rows = Slice(b.y0, b.y1), cols = Slice(b.x0, b.x1);
    x.index_put_({Slice(), Slice(), rows, cols}, x.flip(0).index({Slice(), Slice(), rows, cols}));
  } else {
    const torch::Tensor flipped = x.flip(0).mul_(1.0 - lam);
    x.mul_(lam).add_(flipped);
  }
  result.lam = lam;
  return result;
}

// _mix_elem and _mix_pair: one draw per image, or per pair (i, N−1−i).
MixResult mix_each(const MixupConfig& c, torch::Tensor& x, MixupRandom& random, bool pairs) {
  const std::int64_t n = x.size(0);
  const std::int64_t entries = pairs ? n / 2 : n;
  std::vector<float> lam;
  std::vector<bool> cutmix;
  params_per_elem(c, entries, random, lam, cutmix);
  const torch::Tensor original = x.clone();
  for (std::int64_t i = 0; i < entries; ++i) {
    const std::int64_t j = n - i - 1;
    const float l = lam[static_cast<std::size_t>(i)];
    if (l == 1.0F) continue;
    torch::Tensor xi = x[i], xj = x[j];
    if (cutmix[static_cast<std::size_t>(i)]) {
      double corrected = l;
      const Box b = cutmix_box(c, x.size(2), x.size(3), l, /*f32=*/true, random, corrected);
      paste(xi, original[j], b);
      if (pairs) paste(xj, original[i], b);
      lam[static_cast<std::size_t>(i)] = static_cast<float>(corrected);
    } else {
      const double keep = l, take = 1.0F - l;  // numpy: float32 arithmetic
      xi.copy_(original[i] * keep + original[j] * take);
      if (pairs) xj.copy_(original[j] * keep + original[i] * take);
    }
  }
  std::vector<float> per_image(static_cast<std::size_t>(n), 1.0F);
  for (std::int64_t i = 0; i < entries; ++i) {
    per_image[static_cast<std::size_t>(i)] = lam[static_cast<std::size_t>(i)];
    if (pairs) per_image[static_cast<std::size_t>(n - i - 1)] = lam[static_cast<std::size_t>(i)];
  }
  MixResult result;
  result.per_image = true;
  result.lams = torch::tensor(per_image, torch::kFloat32).to(x.device());
  return result;
}

}  // namespace

MixResult mix_images(const MixupConfig& config, torch::Tensor& images, MixupRandom& random) {
  torch::NoGradGuard no_grad;
  switch (config.mode) {
    case MixupMode::kBatch:
      return mix_batch(config, images, random);
    case MixupMode::kPair:
      return mix_each(config, images, random, /*pairs=*/true);
    case MixupMode::kElem:
      break;
  }
  return mix_each(config, images, random, /*pairs=*/false);
}

torch::Tensor mixup_targets(const torch::Tensor& labels, std::int64_t classes, const MixResult& mix,
                            double smoothing) {
  const double off = smoothing / static_cast<double>(classes);
  const double on = 1.0 - smoothing + off;
  torch::Tensor y1;
  if (labels.dim() == 2) {  // multi-hot rows (multi-label): each label on, the others off
    y1 = labels.to(torch::kFloat32) * (on - off) + off;
  } else {
    const torch::Tensor index = labels.to(torch::kLong).view({-1, 1});
    y1 = torch::full({index.size(0), classes}, off,
                     torch::dtype(torch::kFloat32).device(labels.device()))
             .scatter_(1, index, on);
  }
  const torch::Tensor y2 = y1.flip(0);
  if (!mix.per_image) return y1 * mix.lam + y2 * (1.0 - mix.lam);
  const torch::Tensor lam = mix.lams.unsqueeze(1);
  return y1 * lam + y2 * (1.0 - lam);
}

MixupHook::MixupHook(MixupConfig config, std::int64_t classes, std::uint64_t seed, int rank,
                     int world)
    : config_(std::move(config)), classes_(classes), seed_(seed), rank_(rank), world_(world) {}

void MixupHook::before_batch(TrainContext& ctx) {
  if (ctx.images.size(0) == 0) return;  // a data-parallel rank's empty slice
  ctx.targets = mix(ctx.images, ctx.labels, ctx.state.global_step, ctx.batch_in_step);
}

torch::Tensor MixupHook::mix(torch::Tensor& images, const torch::Tensor& labels, std::int64_t step,
                             int batch_in_step) const {
  // One generator per (seed, optimizer step, slice): no state to keep.
  const std::uint64_t stream = mix_seed(seed_ ^ 0x4D49585550ULL, static_cast<std::uint64_t>(step));
  MixupRandom random(mix_seed(stream, slice_number(batch_in_step, rank_, world_)));
  const MixResult mixed = mix_images(config_, images, random);
  return mixup_targets(labels, classes_, mixed, /*smoothing=*/0.0);
}

}  // namespace ltfit
