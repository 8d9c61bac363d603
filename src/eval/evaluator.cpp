#include "ltfit/eval/evaluator.h"

#include <chrono>

#include <torch/nn/functional/loss.h>

#include "ltfit/data/loader.h"
#include "ltfit/util/error.h"

namespace ltfit {

EvalResult evaluate(ResNet& model, Loader& loader, const EvalOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  std::vector<torch::Tensor> probs, targets, indices;
  double loss_sum = 0.0;
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    const torch::Tensor x = normalize_images(batch->images, options.device, options.channels_last);
    const torch::Tensor logits = model->forward(x).to(torch::kCPU, torch::kFloat32);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, batch->labels,
                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    probs.push_back(torch::softmax(logits, 1));
    targets.push_back(batch->labels);
    indices.push_back(torch::tensor(batch->indices, torch::kInt64));
  }
  model->train(was_training);
  if (probs.empty()) throw DataError("no readable image to evaluate");
  EvalResult result;
  result.probabilities = torch::cat(probs);
  result.targets = torch::cat(targets);
  result.indices = torch::cat(indices);
  result.count = result.targets.size(0);
  result.loss = loss_sum / static_cast<double>(result.count);
  const torch::Tensor predicted = result.probabilities.argmax(1);
  result.accuracy = predicted.eq(result.targets).to(torch::kFloat64).mean().item<double>();
  const std::int64_t classes = result.probabilities.size(1);
  result.confusion = torch::bincount(result.targets * classes + predicted, {}, classes * classes)
                         .reshape({classes, classes});
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace ltfit
