// Plain evaluation over a loader: see evaluator.h.
#include "ltfit/eval/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>

#include "ltfit/data/loader.h"
#include "ltfit/util/error.h"
#include "ltfit/util/precision.h"

namespace ltfit {

EvalResult evaluate(Classifier& model, Loader& loader, const EvalOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  std::vector<torch::Tensor> probs, raw, targets, indices;
  double loss_sum = 0.0;
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    const torch::Tensor x = normalize_images(batch->images, options.device, options.channels_last,
                                             model->input_normalization());
    const torch::Tensor logits = forward_logits(model, x, options).to(torch::kCPU);
    loss_sum += batch_loss_sum(logits, batch->labels, options);
    probs.push_back(output_probabilities(logits, options));
    raw.push_back(logits);
    targets.push_back(batch->labels);
    indices.push_back(torch::tensor(batch->indices, torch::kInt64));
  }
  model->train(was_training);
  if (probs.empty() && options.allow_empty) {
    EvalResult empty;
    empty.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return empty;
  }
  if (probs.empty()) throw DataError("no readable image to evaluate");
  EvalResult result =
      score_outputs(torch::cat(probs), torch::cat(targets), torch::cat(indices), loss_sum, options);
  result.logits = torch::cat(raw);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

namespace {

EvalResult all_reduce_multi_label(const EvalResult& local, DistGroup& group,
                                  const std::vector<double>& thresholds) {
  const auto classes = static_cast<std::int64_t>(thresholds.size());
  torch::Tensor counts = torch::zeros({group.size() + 1}, torch::kFloat64);
  counts[group.rank()] = static_cast<double>(local.count);
  counts[group.size()] = local.count > 0 ? local.loss * static_cast<double>(local.count) : 0.0;
  std::vector<torch::Tensor> reduced{counts.to(group.device())};
  group.all_reduce_sum(reduced);
  const torch::Tensor all = reduced[0].cpu();
  const auto total =
      static_cast<std::int64_t>(all.narrow(0, 0, group.size()).sum().item<double>() + 0.5);
  if (total <= 0) throw DataError("no readable image to evaluate (on any rank)");
  const auto offset =
      static_cast<std::int64_t>(all.narrow(0, 0, group.rank()).sum().item<double>() + 0.5);
  torch::Tensor probs = torch::zeros({total, classes}, torch::kFloat32);
  torch::Tensor targets = torch::zeros({total, classes}, torch::kFloat32);
  if (local.count > 0) {
    probs.narrow(0, offset, local.count).copy_(local.probabilities);
    targets.narrow(0, offset, local.count).copy_(local.targets);
  }
  std::vector<torch::Tensor> rows{probs.to(group.device()), targets.to(group.device())};
  group.all_reduce_sum(rows);
  EvalOptions options;
  options.thresholds = thresholds;
  EvalResult merged = score_outputs(rows[0].cpu(), rows[1].cpu(), torch::arange(total),
                                    all[group.size()].item<double>(), options);
  // Per-image tensors stay this rank's own, as single-label results do.
  merged.probabilities = local.probabilities;
  merged.logits = local.logits;
  merged.targets = local.targets;
  merged.indices = local.indices;
  merged.seconds = local.seconds;
  return merged;
}

}  // namespace

EvalResult all_reduce_eval(const EvalResult& local, DistGroup& group,
                           const std::vector<double>& thresholds) {
  if (!thresholds.empty()) return all_reduce_multi_label(local, group, thresholds);
  const double count = static_cast<double>(local.count);
  const bool scored = count > 0;
  // Sums of: loss, correct, images, top-k correct, and the k and count of the ranks that scored
  // (all score the same k; an empty rank knows none).
  const torch::Tensor sums =
      torch::tensor({scored ? local.loss * count : 0.0, scored ? local.accuracy * count : 0.0,
                     count, scored ? local.top_k_accuracy * count : 0.0,
                     scored ? static_cast<double>(local.top_k) : 0.0, scored ? 1.0 : 0.0},
                    torch::kFloat64);
  std::vector<torch::Tensor> reduced{sums.to(group.device())};
  group.all_reduce_sum(reduced);
  const torch::Tensor total = reduced[0].cpu();
  const double images = total[2].item<double>();
  if (images <= 0) throw DataError("no readable image to evaluate (on any rank)");
  EvalResult result = local;
  result.count = static_cast<std::int64_t>(images + 0.5);
  result.loss = total[0].item<double>() / images;
  // Correct predictions are whole numbers: round away the products' float error.
  result.accuracy = std::round(total[1].item<double>()) / images;
  result.top_k = static_cast<int>(std::round(total[4].item<double>() / total[5].item<double>()));
  result.top_k_accuracy = result.top_k > 0 ? std::round(total[3].item<double>()) / images : 0.0;
  return result;
}

int resolve_top_k(int configured, std::int64_t classes) {
  if (configured >= 1) return static_cast<int>(std::min<std::int64_t>(configured, classes));
  return classes > 5 ? 5 : 0;
}

Precision resolve_eval_precision(Precision requested, const torch::Device& device) {
  if (requested == Precision::kFp16 && device.is_cpu()) {
    spdlog::info("precision fp16 needs a CUDA device: evaluating in fp32 on the CPU");
    return Precision::kFp32;
  }
  warn_if_bf16_emulated(requested, device);
  return requested;
}

torch::Tensor forward_logits(Classifier& model, const torch::Tensor& images,
                             const EvalOptions& options) {
  // Callers pass a precision resolved for the device (resolve_eval_precision).
  AutocastGuard autocast(options.device.type(), precision_dtype(options.precision));
  return model->forward(images).to(torch::kFloat32);
}

EvalResult score_predictions(torch::Tensor probabilities, torch::Tensor targets,
                             torch::Tensor indices, double loss_sum, int top_k) {
  EvalResult result;
  result.count = targets.numel();
  if (result.count == 0) throw DataError("no readable image to evaluate");
  LTFIT_CHECK(probabilities.dim() == 2 && probabilities.size(0) == result.count,
              "probabilities must be [N, classes] with one row per target");
  result.probabilities = std::move(probabilities);
  result.targets = std::move(targets);
  result.indices = std::move(indices);
  result.loss = loss_sum / static_cast<double>(result.count);
  const torch::Tensor predicted = result.probabilities.argmax(1);
  result.accuracy = predicted.eq(result.targets).to(torch::kFloat64).mean().item<double>();
  const std::int64_t classes = result.probabilities.size(1);
  result.confusion = torch::bincount(result.targets * classes + predicted, {}, classes * classes)
                         .reshape({classes, classes});
  result.top_k = resolve_top_k(top_k, classes);
  if (result.top_k > 0) {  // ties ranked as torch.topk ranks them, as timm's accuracy() does
    const torch::Tensor top = std::get<1>(result.probabilities.topk(result.top_k, 1));
    result.top_k_accuracy =
        top.eq(result.targets.unsqueeze(1)).any(1).to(torch::kFloat64).mean().item<double>();
  }
  return result;
}

double nll_sum(const torch::Tensor& probabilities, const torch::Tensor& targets) {
  const torch::Tensor p = probabilities.gather(1, targets.unsqueeze(1)).clamp_min(1e-12);
  return -p.to(torch::kFloat64).log().sum().item<double>();
}

namespace {

// logits / options.temperature; the logits themselves at 1, so an uncalibrated evaluation's
// figures stay bit for bit what they were.
torch::Tensor tempered_logits(const torch::Tensor& logits, const EvalOptions& options) {
  LTFIT_CHECK(options.temperature > 0 && std::isfinite(options.temperature),
              "the evaluation temperature must be finite and > 0");
  return options.temperature == 1.0 ? logits : logits / options.temperature;
}

}  // namespace

torch::Tensor output_probabilities(const torch::Tensor& raw_logits, const EvalOptions& options) {
  const torch::Tensor logits = tempered_logits(raw_logits, options);
  return options.thresholds.empty() ? torch::softmax(logits, 1) : torch::sigmoid(logits);
}

double batch_loss_sum(const torch::Tensor& raw_logits, const torch::Tensor& labels,
                      const EvalOptions& options) {
  namespace F = torch::nn::functional;
  const torch::Tensor logits = tempered_logits(raw_logits, options);
  if (options.thresholds.empty()) {
    return F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum))
        .item<double>();
  }
  const double classes = static_cast<double>(std::max<std::int64_t>(logits.size(1), 1));
  return F::binary_cross_entropy_with_logits(
             logits, labels.to(torch::kFloat32),
             F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kSum))
             .item<double>() /
         classes;
}

double probability_loss_sum(const torch::Tensor& probabilities, const torch::Tensor& targets,
                            const EvalOptions& options) {
  if (options.thresholds.empty()) return nll_sum(probabilities, targets);
  const torch::Tensor p = probabilities.to(torch::kFloat64).clamp(1e-12, 1.0 - 1e-12);
  const torch::Tensor y = targets.to(torch::kFloat64);
  const double classes = static_cast<double>(std::max<std::int64_t>(p.size(1), 1));
  return -(y * p.log() + (1.0 - y) * (1.0 - p).log()).sum().item<double>() / classes;
}

MultiLabelScores multi_label_scores(const torch::Tensor& probabilities,
                                    const torch::Tensor& targets) {
  MultiLabelScores scores;
  scores.rows = probabilities.size(0);
  scores.classes = probabilities.size(1);
  const torch::Tensor p = probabilities.to(torch::kFloat32).contiguous();
  scores.probs.assign(p.data_ptr<float>(), p.data_ptr<float>() + p.numel());
  const torch::Tensor t = targets.gt(0.5).to(torch::kUInt8).contiguous();
  scores.targets.assign(t.data_ptr<std::uint8_t>(), t.data_ptr<std::uint8_t>() + t.numel());
  return scores;
}

EvalResult score_outputs(torch::Tensor probabilities, torch::Tensor targets, torch::Tensor indices,
                         double loss_sum, const EvalOptions& options) {
  if (options.thresholds.empty()) {
    return score_predictions(std::move(probabilities), std::move(targets), std::move(indices),
                             loss_sum, options.top_k);
  }
  EvalResult result;
  result.count = targets.size(0);
  if (result.count == 0) throw DataError("no readable image to evaluate");
  const std::int64_t classes = probabilities.size(1);
  LTFIT_CHECK(probabilities.dim() == 2 && targets.dim() == 2 && targets.size(1) == classes &&
                  static_cast<std::int64_t>(options.thresholds.size()) == classes,
              "multi-label scores need [N, classes] probabilities and targets, a threshold each");
  const MultiLabelReport report =
      multi_label_report(multi_label_scores(probabilities, targets), options.thresholds);
  result.multi_label = true;
  result.thresholds = options.thresholds;
  result.accuracy = report.accuracy_multi;
  result.f1_samples = report.f1_samples;
  result.f1_macro = report.f1_macro;
  result.map = report.mean_average_precision;
  result.per_class = report.per_class;
  result.loss = loss_sum / static_cast<double>(result.count);
  result.probabilities = std::move(probabilities);
  result.targets = std::move(targets);
  result.indices = std::move(indices);
  return result;
}

}  // namespace ltfit
