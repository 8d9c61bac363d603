// The data-parallel hook: see data_parallel.h.
#include "ltfit/train/data_parallel.h"

#include <cmath>

#include "ltfit/train/standard_hooks.h"
#include "ltfit/train/trainer.h"

namespace ltfit {

namespace {

// Control values at the start of the first bucket: the stop and save votes, then for each batch
// of the step (at most train.accumulate) its images and loss sum; the step's totals are their
// sums.
constexpr std::int64_t kStop = 0, kSave = 1, kVotes = 2;

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
std::vector<torch::Tensor> float_buffers(Classifier& model) {
  std::vector<torch::Tensor> out;
  for (const auto& b : model->buffers()) {
    if (b.is_floating_point()) out.push_back(b);
  }
  return out;
}

using GradBuckets = std::vector<std::vector<std::size_t>>;

// Each bucket's gradients into its flat buffer (zeros for a parameter without one), times
// `weight`; bucket 0's first `controls` values (the control block) are left alone.
void pack_gradients(const GradBuckets& buckets, const std::vector<torch::Tensor>& params,
                    std::int64_t controls, double weight, std::vector<torch::Tensor>& flats) {
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const std::int64_t first = b == 0 ? controls : 0;
    std::int64_t at = first;
    for (const std::size_t i : buckets[b]) {
      const torch::Tensor& g = params[i].grad();
      torch::Tensor slice = flats[b].narrow(0, at, params[i].numel());
      if (g.defined()) {
        slice.copy_(g.reshape(-1));
      } else {
        slice.zero_();
      }
      at += params[i].numel();
    }
    flats[b].narrow(0, first, at - first).mul_(weight);
  }
}

// The reduced flat buffers, times `scale`, back into each parameter's gradient (made where a
// parameter had none).
void unpack_gradients(const GradBuckets& buckets, std::int64_t controls, float scale,
                      std::vector<torch::Tensor>& flats, std::vector<torch::Tensor>& params) {
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    flats[b].mul_(scale);
    std::int64_t at = b == 0 ? controls : 0;
    for (const std::size_t i : buckets[b]) {
      torch::Tensor& p = params[i];
      const torch::Tensor slice = flats[b].narrow(0, at, p.numel()).view(p.sizes());
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      p.mutable_grad().copy_(slice);
      at += p.numel();
    }
  }
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

void DataParallelHook::stage_begin(TrainContext& ctx) {
  params_ = trained_parameters(ctx.optimizer);
  controls_ = kVotes + 2 * static_cast<std::int64_t>(ctx.accumulate);
  // Buckets of whole parameters, each at most bucket_bytes_ (a larger parameter alone).
  buckets_.assign(1, {});
  std::int64_t bytes = 0;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const std::int64_t size = params_[i].numel() * static_cast<std::int64_t>(sizeof(float));
    if (!buckets_.back().empty() && bytes + size > bucket_bytes_) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().push_back(i);
    bytes += size;
  }
  flats_.clear();
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(group_.device());
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    std::int64_t numel = b == 0 ? controls_ : 0;
    for (const std::size_t i : buckets_[b]) numel += params_[i].numel();
    flats_.push_back(torch::empty({numel}, options));
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
  torch::NoGradGuard no_grad;
  double local_images = 0.0;
  for (const double n : batch_images_) local_images += n;
  // Weighted by this rank's images: the sum over ranks is the global loss sum's gradient.
  pack_gradients(buckets_, params_, controls_, local_images, flats_);
  std::vector<float> control(static_cast<std::size_t>(controls_), 0.0f);
  control[kStop] = ctx.vote_stop ? 1.0f : 0.0f;
  control[kSave] = ctx.vote_save ? 1.0f : 0.0f;
  for (std::size_t k = 0; k < batch_images_.size(); ++k) {
    control[kVotes + 2 * k] = static_cast<float>(batch_images_[k]);
    control[kVotes + 2 * k + 1] = static_cast<float>(batch_loss_sums_[k]);
  }
  flats_[0].narrow(0, 0, controls_).copy_(torch::tensor(control));
  group_.all_reduce_sum(flats_);

  const torch::Tensor total_controls = flats_[0].narrow(0, 0, controls_).cpu();
  const auto* c = total_controls.data_ptr<float>();
  ctx.vote_stop = c[kStop] > 0.0f;
  ctx.vote_save = c[kSave] > 0.0f;
  if (ctx.vote_stop || ctx.vote_save) sync_buffers(ctx);
  // The smoothed loss follows the global batches' losses, not this rank's.
  TrainPosition& position = ctx.state.position;
  position.loss_avg = smoothed_avg_;
  position.loss_count = smoothed_count_;
  double images = 0.0;
  double loss_sum = 0.0;
  for (std::size_t k = 0; k < batch_images_.size(); ++k) {
    const double n = c[kVotes + 2 * k];
    const double sum = c[kVotes + 2 * k + 1];
    images += n;
    loss_sum += sum;
    if (n > 0 && std::isfinite(sum)) add_to_smoothed_loss(position, sum / n);
  }
  ctx.epoch_images += static_cast<std::int64_t>(images - local_images);  // every rank's images
  if (!std::isfinite(loss_sum) && !ctx.scaler.enabled()) {
    throw non_finite_loss_error(loss_sum, ctx.state.global_step);
  }
  ctx.step_loss = images > 0 ? loss_sum / images : 0.0;
  if (images <= 0) {  // no rank had an image in this step: nobody steps
    ctx.skip_step = true;
    return;
  }
  unpack_gradients(buckets_, controls_, static_cast<float>(1.0 / images), flats_, params_);
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
