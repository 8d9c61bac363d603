// Plain evaluation over a loader: see evaluator.h.
#include "ltfit/eval/evaluator.h"

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
  std::vector<torch::Tensor> probs, targets, indices;
  double loss_sum = 0.0;
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    const torch::Tensor x = normalize_images(batch->images, options.device, options.channels_last,
                                             model->input_normalization());
    const torch::Tensor logits = forward_logits(model, x, options).to(torch::kCPU);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, batch->labels,
                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    probs.push_back(torch::softmax(logits, 1));
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
      score_predictions(torch::cat(probs), torch::cat(targets), torch::cat(indices), loss_sum);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

EvalResult all_reduce_eval(const EvalResult& local, DistGroup& group) {
  const double count = static_cast<double>(local.count);
  const torch::Tensor sums = torch::tensor(
      {count > 0 ? local.loss * count : 0.0, count > 0 ? local.accuracy * count : 0.0, count},
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
  return result;
}

Precision resolve_eval_precision(Precision requested, const torch::Device& device) {
  if (requested == Precision::kFp16 && device.is_cpu()) {
    spdlog::info("precision fp16 needs a CUDA device: evaluating in fp32 on the CPU");
    return Precision::kFp32;
  }
  return requested;
}

torch::Tensor forward_logits(Classifier& model, const torch::Tensor& images,
                             const EvalOptions& options) {
  // Callers pass a precision resolved for the device (resolve_eval_precision).
  AutocastGuard autocast(options.device.type(), precision_dtype(options.precision));
  return model->forward(images).to(torch::kFloat32);
}

EvalResult score_predictions(torch::Tensor probabilities, torch::Tensor targets,
                             torch::Tensor indices, double loss_sum) {
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
  return result;
}

double nll_sum(const torch::Tensor& probabilities, const torch::Tensor& targets) {
  const torch::Tensor p = probabilities.gather(1, targets.unsqueeze(1)).clamp_min(1e-12);
  return -p.to(torch::kFloat64).log().sum().item<double>();
}

}  // namespace ltfit
