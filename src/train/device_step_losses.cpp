// The training losses kept on the device between reads: see device_step_losses.h.
#include "ltfit/train/device_step_losses.h"

#include <cmath>

#include <torch/torch.h>

namespace ltfit {

namespace {

torch::Tensor zero_scalar(const torch::Device& device) {
  return torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
}

}  // namespace

DeviceStepLosses::DeviceStepLosses(const torch::Device& device)
    : step_sum_(zero_scalar(device)), average_(zero_scalar(device)), count_(zero_scalar(device)) {}

void DeviceStepLosses::add_batch(const torch::Tensor& loss, int batches_in_step) {
  torch::NoGradGuard no_grad;
  const torch::Tensor value = loss.detach().to(torch::kDouble).reshape({});
  // As the host's `step_loss += loss / batches_in_step`: a NaN or inf is kept (the step's row
  // shows it) and the loss check sees it at the read.
  step_sum_.add_(value / static_cast<double>(batches_in_step));
  const torch::Tensor finite = torch::isfinite(value);
  // As add_to_smoothed_loss's `beta * avg + (1 - beta) * loss`, for finite losses only.
  average_.copy_(
      torch::where(finite, average_ * kLossSmoothing + value * (1.0 - kLossSmoothing), average_));
  count_.add_(finite.to(torch::kDouble));
}

void DeviceStepLosses::end_step(std::int64_t step, double factor, const torch::Tensor& scale,
                                double host_scale) {
  torch::NoGradGuard no_grad;
  const torch::Tensor loss = step_sum_ * factor;  // times 1.0: the sum itself, bit for bit
  const torch::Tensor scale_now = scale.defined() ? scale.detach().to(torch::kDouble).reshape({})
                                                  : torch::full({}, host_scale, loss.options());
  closed_.push_back(torch::stack({loss, scale_now}));
  steps_.push_back(step);
  step_sum_.zero_();
}

DeviceStepLosses::Reading DeviceStepLosses::read() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parts = closed_;
  parts.push_back(torch::stack({average_, count_}));
  const torch::Tensor host = torch::cat(parts).cpu();
  const double* v = host.data_ptr<double>();
  Reading reading;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    reading.steps.push_back({steps_[i], v[2 * i], v[2 * i + 1]});
  }
  reading.added = v[2 * steps_.size()];
  reading.count = static_cast<std::int64_t>(v[2 * steps_.size() + 1]);
  closed_.clear();
  steps_.clear();
  average_.zero_();
  count_.zero_();
  return reading;
}

void DeviceStepLosses::Reading::apply(TrainPosition& at) const {
  at.loss_avg = std::pow(kLossSmoothing, static_cast<double>(count)) * at.loss_avg + added;
  at.loss_count += count;
}

}  // namespace ltfit
