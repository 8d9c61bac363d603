// Test-time augmentation, v1 corner views and v2 augmented passes: see tta.h.
#include "ltfit/eval/tta.h"

#include <chrono>

#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>

#include "ltfit/data/loader.h"
#include "ltfit/eval/tta_views.h"
#include "ltfit/util/error.h"
#include "ltfit/util/stopwatch.h"

namespace ltfit {

namespace {

using Clock = std::chrono::steady_clock;

// NoGradGuard + eval mode for the scope; the model's previous mode is restored.
class InferenceScope {
 public:
  explicit InferenceScope(Classifier& model) : model_(model), was_training_(model->is_training()) {
    model_->eval();
  }
  ~InferenceScope() { model_->train(was_training_); }
  InferenceScope(const InferenceScope&) = delete;
  InferenceScope& operator=(const InferenceScope&) = delete;

 private:
  torch::NoGradGuard no_grad_;
  Classifier& model_;
  bool was_training_;
};

struct V1Parts {
  std::vector<torch::Tensor> plain, logits, augmented, targets, indices;  // per batch, CPU
  double plain_loss_sum = 0.0;
  double plain_seconds = 0.0;
};

}  // namespace

torch::Tensor v1_view_probabilities(Classifier& model, const torch::Tensor& x, double scale,
                                    const EvalOptions& options) {
  torch::Tensor sum;
  for (int corner = 0; corner < kTtaV1Views / 2; ++corner) {  // views i and i|4 share a zoom
    const CornerView view = tta_v1_view(corner);
    const torch::Tensor zoomed = zoom_toward_corner(x, scale, view.row_pct, view.col_pct);
    torch::Tensor both = torch::cat({zoomed, zoomed.flip({3})});
    if (options.channels_last) both = both.contiguous(torch::MemoryFormat::ChannelsLast);
    const torch::Tensor probs = output_probabilities(forward_logits(model, both, options), options);
    const torch::Tensor pair_sum = probs.view({2, x.size(0), probs.size(1)}).sum(0);
    sum = sum.defined() ? sum + pair_sum : pair_sum;
  }
  return (sum / static_cast<double>(kTtaV1Views)).to(torch::kCPU);
}

namespace {

// Scores the plain and blended predictions into `result` (mode, beta, views already set).
void score_tta(TtaResult& result, EvalResult plain, const torch::Tensor& augmented,
               const EvalOptions& options) {
  result.plain = std::move(plain);
  const torch::Tensor blended = blend_tta(result.plain.probabilities, augmented, result.beta);
  result.tta = score_outputs(blended, result.plain.targets, result.plain.indices,
                             probability_loss_sum(blended, result.plain.targets, options), options);
}

}  // namespace

torch::Tensor blend_tta(const torch::Tensor& plain, const torch::Tensor& augmented, double beta) {
  LTFIT_CHECK(plain.sizes() == augmented.sizes(), "TTA blend needs equal shapes");
  return torch::lerp(augmented.to(torch::kFloat32), plain.to(torch::kFloat32), beta);
}

TtaResult tta_v1(Classifier& model, Loader& loader, const EvalConfig& eval,
                 const EvalOptions& options) {
  const auto start = Clock::now();
  InferenceScope inference(model);
  V1Parts parts;
  loader.start_epoch(0);
  auto plain_start = Clock::now();
  while (auto batch = loader.next()) {
    const torch::Tensor x = normalize_images(batch->images, options.device, options.channels_last,
                                             model->input_normalization());
    const torch::Tensor logits = forward_logits(model, x, options).to(torch::kCPU);
    parts.plain_loss_sum += batch_loss_sum(logits, batch->labels, options);
    parts.plain.push_back(output_probabilities(logits, options));
    parts.logits.push_back(logits);
    parts.plain_seconds += seconds_since(plain_start);
    parts.augmented.push_back(v1_view_probabilities(model, x, eval.tta_scale, options));
    parts.targets.push_back(batch->labels);
    parts.indices.push_back(torch::tensor(batch->indices, torch::kInt64));
    plain_start = Clock::now();
  }
  parts.plain_seconds += seconds_since(plain_start);  // the final wait for the end of the epoch
  if (parts.plain.empty()) throw DataError("no readable image to evaluate with TTA");
  TtaResult result;
  result.mode = tta_mode_name(TtaMode::kV1);
  result.beta = eval.tta_beta;
  result.views = kTtaV1Views;
  EvalResult plain = score_outputs(torch::cat(parts.plain), torch::cat(parts.targets),
                                   torch::cat(parts.indices), parts.plain_loss_sum, options);
  plain.logits = torch::cat(parts.logits);
  plain.seconds = parts.plain_seconds;
  score_tta(result, std::move(plain), torch::cat(parts.augmented), options);
  result.seconds = result.tta.seconds = seconds_since(start);
  return result;
}

TtaResult tta_v2(Classifier& model, Loader& loader, const LoaderOptions& loader_options,
                 const EvalConfig& eval, const EvalOptions& options) {
  const auto start = Clock::now();
  EvalResult plain = evaluate(model, loader, options);
  LoaderOptions augment_options = loader_options;
  augment_options.train = false;
  augment_options.augment_in_order = true;
  Loader augmented_loader(loader.samples(), augment_options);
  InferenceScope inference(model);
  const std::int64_t classes = plain.probabilities.size(1);
  torch::Tensor sum = torch::zeros({loader.size(), classes}, torch::kFloat32);
  torch::Tensor count = torch::zeros({loader.size()}, torch::kFloat32);
  for (int pass = 0; pass < eval.tta_n; ++pass) {
    augmented_loader.start_epoch(pass);
    while (auto batch = augmented_loader.next()) {
      const torch::Tensor x = normalize_images(batch->images, options.device, options.channels_last,
                                               model->input_normalization());
      const torch::Tensor probs =
          output_probabilities(forward_logits(model, x, options), options).to(torch::kCPU);
      const torch::Tensor at = torch::tensor(batch->indices, torch::kInt64);
      sum.index_add_(0, at, probs);
      count.index_add_(0, at, torch::ones({at.size(0)}, torch::kFloat32));
    }
  }
  // A sample that decoded plainly but never augmented (not expected) keeps its plain figures.
  const torch::Tensor seen = count.index_select(0, plain.indices).unsqueeze(1);
  const torch::Tensor augmented = torch::where(
      seen > 0, sum.index_select(0, plain.indices) / seen.clamp_min(1), plain.probabilities);
  TtaResult result;
  result.mode = tta_mode_name(TtaMode::kV2);
  result.beta = eval.tta_beta;
  result.views = eval.tta_n;
  score_tta(result, std::move(plain), augmented, options);
  result.seconds = result.tta.seconds = seconds_since(start);
  return result;
}

int tta_passes(const EvalConfig& eval) {
  return 1 + (eval.tta_mode == TtaMode::kV2 ? eval.tta_n : kTtaV1Views);
}

TtaResult run_tta(Classifier& model, Loader& loader, const LoaderOptions& loader_options,
                  const EvalConfig& eval, const EvalOptions& options) {
  spdlog::info("TTA {}: {} images, beta {}, {} precision", tta_mode_name(eval.tta_mode),
               loader.size(), eval.tta_beta, precision_name(options.precision));
  TtaResult result = eval.tta_mode == TtaMode::kV1
                         ? tta_v1(model, loader, eval, options)
                         : tta_v2(model, loader, loader_options, eval, options);
  spdlog::info("TTA {}: accuracy {:.4f} (plain {:.4f}) in {:.2f} s", result.mode,
               result.tta.accuracy, result.plain.accuracy, result.seconds);
  return result;
}

}  // namespace ltfit
