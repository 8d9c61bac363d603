// The data-parallel hook: see data_parallel.h.
#include "ltfit/train/data_parallel.h"

#include <cmath>
#include <limits>

#include "ltfit/train/standard_hooks.h"
#include "ltfit/train/trainer.h"

namespace ltfit {

namespace {

// Control values at the start of the first bucket: images, loss sum, stop, save, then
// per batch of the step its images and loss sum.
constexpr std::int64_t kImages = 0, kLossSum = 1, kStop = 2, kSave = 3, kControls = 4;

// The parameters that train in this stage, in the optimizer's order (the same on every rank).
std::vector<torch::Tensor> trained_parameters(torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> params;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      if (p.requires_grad()) params.push_back(p);
    }
  }
  return params;
}

// Floating-point buffers (BatchNorm running mean and variance); counters stay as they are.
std::vector<torch::Tensor> float_buffers(ResNet& model) {
  std::vector<torch::Tensor> out;
  for (const auto& b : model->buffers()) {
    if (b.is_floating_point()) out.push_back(b);
  }
  return out;
}

}  // namespace

DataParallelHook::DataParallelHook(DistGroup& group, const DistConfig& config)
    : group_(group),
      bucket_bytes_(std::max<std::int64_t>(
          1024, static_cast<std::int64_t>(config.bucket_mb * 1024.0 * 1024.0))),
      bn_buffers_(config.bn_buffers) {}

void DataParallelHook::fit_begin(TrainContext& ctx) {
  ctx.distributed = true;
  ctx.agree = [this](bool local) { return group_.any(local); };
  // Every rank starts from rank 0's weights and statistics (DDP does the same).
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> state;
  for (const auto& p : ctx.model->parameters()) state.push_back(p);
  for (const auto& b : ctx.model->buffers()) state.push_back(b);
  for (auto& t : state) {
    std::vector<torch::Tensor> on{t.to(group_.device()).contiguous()};
    group_.broadcast(on);
    if (group_.rank() != 0) t.copy_(on[0]);
  }
}

void DataParallelHook::before_batch(TrainContext& ctx) {
  buffers_synced_ = false;
  if (ctx.batch_in_step != 0) return;
  batch_images_.clear();
  batch_loss_sums_.clear();
  smoothed_avg_ = ctx.state.position.loss_avg;
  smoothed_count_ = ctx.state.position.loss_count;
}

void DataParallelHook::after_loss(TrainContext& ctx) {
  if (ctx.cancel_batch) return;
  const auto images = static_cast<double>(ctx.labels.size(0));
  batch_images_.push_back(images);
  batch_loss_sums_.push_back(images > 0 ? ctx.loss_value * images : 0.0);
}

void DataParallelHook::after_backward(TrainContext& ctx) {
  if (!ctx.step_now) return;
  ScopedPhase phase(ctx.profiler, Phase::kGradSync);
  const std::vector<torch::Tensor> params = trained_parameters(ctx.optimizer);
  const auto batches = static_cast<std::int64_t>(batch_images_.size());
  double local_images = 0.0;
  double local_loss = 0.0;
  for (std::int64_t k = 0; k < batches; ++k) {
    local_images += batch_images_[static_cast<std::size_t>(k)];
    local_loss += batch_loss_sums_[static_cast<std::size_t>(k)];
  }
  // Buckets of whole parameters, each at most bucket_bytes_ (a larger parameter alone).
  std::vector<std::vector<std::size_t>> buckets(1);
  std::int64_t bytes = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::int64_t size = params[i].numel() * static_cast<std::int64_t>(sizeof(float));
    if (!buckets.back().empty() && bytes + size > bucket_bytes_) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(i);
    bytes += size;
  }
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(group_.device());
  const std::int64_t controls = kControls + 2 * batches;
  std::vector<torch::Tensor> flats;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    std::int64_t numel = b == 0 ? controls : 0;
    for (const std::size_t i : buckets[b]) numel += params[i].numel();
    torch::Tensor flat = torch::zeros({numel}, options);
    std::int64_t at = b == 0 ? controls : 0;
    for (const std::size_t i : buckets[b]) {
      const torch::Tensor& g = params[i].grad();
      const std::int64_t n = params[i].numel();
      // Weighted by this rank's images: the sum over ranks is the global loss sum's gradient.
      if (g.defined()) flat.narrow(0, at, n).copy_(g.reshape(-1)).mul_(local_images);
      at += n;
    }
    flats.push_back(flat);
  }
  std::vector<float> control(static_cast<std::size_t>(controls), 0.0f);
  control[kImages] = static_cast<float>(local_images);
  control[kLossSum] = static_cast<float>(local_loss);
  control[kStop] = ctx.vote_stop ? 1.0f : 0.0f;
  control[kSave] = ctx.vote_save ? 1.0f : 0.0f;
  for (std::int64_t k = 0; k < batches; ++k) {
    control[static_cast<std::size_t>(kControls + 2 * k)] =
        static_cast<float>(batch_images_[static_cast<std::size_t>(k)]);
    control[static_cast<std::size_t>(kControls + 2 * k + 1)] =
        static_cast<float>(batch_loss_sums_[static_cast<std::size_t>(k)]);
  }
  flats[0].narrow(0, 0, controls).copy_(torch::tensor(control));
  group_.all_reduce_sum(flats);

  const torch::Tensor total_controls = flats[0].narrow(0, 0, controls).cpu();
  const auto* c = total_controls.data_ptr<float>();
  const double images = c[kImages];
  const double loss_sum = c[kLossSum];
  ctx.vote_stop = c[kStop] > 0.0f;
  ctx.vote_save = c[kSave] > 0.0f;
  if (ctx.vote_stop || ctx.vote_save) sync_buffers(ctx);
  ctx.epoch_images += static_cast<std::int64_t>(images - local_images);  // every rank's images
  if (!std::isfinite(loss_sum) && !ctx.scaler.enabled()) {
    throw non_finite_loss_error(loss_sum, ctx.state.global_step);
  }
  ctx.step_loss = images > 0 ? loss_sum / images : 0.0;
  // The smoothed loss follows the global batches' losses, not this rank's.
  TrainPosition& at = ctx.state.position;
  at.loss_avg = smoothed_avg_;
  at.loss_count = smoothed_count_;
  for (std::int64_t k = 0; k < batches; ++k) {
    const double n = c[kControls + 2 * k];
    const double sum = c[kControls + 2 * k + 1];
    if (n > 0 && std::isfinite(sum)) add_to_smoothed_loss(at, sum / n);
  }
  if (images <= 0) {  // no rank had an image in this step: nobody steps
    ctx.skip_step = true;
    return;
  }
  torch::NoGradGuard no_grad;
  const float scale = static_cast<float>(1.0 / images);
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    torch::Tensor flat = flats[b].mul_(scale);
    std::int64_t at_elem = b == 0 ? controls : 0;
    for (const std::size_t i : buckets[b]) {
      torch::Tensor p = params[i];
      const std::int64_t n = p.numel();
      const torch::Tensor slice = flat.narrow(0, at_elem, n).view(p.sizes());
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      p.mutable_grad().copy_(slice);
      at_elem += n;
    }
  }
}

void DataParallelHook::sync_buffers(TrainContext& ctx) {
  if (buffers_synced_) return;
  torch::NoGradGuard no_grad;
  ScopedPhase phase(ctx.profiler, Phase::kGradSync);
  std::vector<torch::Tensor> buffers = float_buffers(ctx.model);
  if (buffers.empty()) return;
  std::vector<torch::Tensor> flat_views;
  for (const auto& b : buffers) flat_views.push_back(b.reshape(-1).to(torch::kFloat32));
  std::vector<torch::Tensor> flat{torch::cat(flat_views).to(group_.device())};
  if (bn_buffers_ == BnBuffers::kAverage) {
    group_.all_reduce_sum(flat);
    flat[0].div_(static_cast<double>(group_.size()));
  } else {
    group_.broadcast(flat);
  }
  const torch::Tensor back = flat[0].to(buffers.front().device());
  std::int64_t at = 0;
  for (auto& b : buffers) {
    b.copy_(back.narrow(0, at, b.numel()).view(b.sizes()));
    at += b.numel();
  }
  buffers_synced_ = true;
}

void DataParallelHook::validation_begin(TrainContext& ctx) { sync_buffers(ctx); }

void DataParallelHook::epoch_end(TrainContext& ctx) { sync_buffers(ctx); }

}  // namespace ltfit
