#include "ltfit/data/batch_feed.h"

#include <utility>

// The stream and event types exist only in a CUDA build of LibTorch.
#include "ltfit/util/cuda_build.h"
#ifdef LTFIT_HAS_CUDA_HEADERS
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace ltfit {

#ifdef LTFIT_HAS_CUDA_HEADERS
struct BatchFeed::SideStream {
  c10::cuda::CUDAStream stream;
  NormalizationTensors constants;  // on the device, made once: no host copy per batch
};
#else
struct BatchFeed::SideStream {};
#endif

BatchFeed::BatchFeed(const torch::Device& device, bool channels_last,
                     ImageNormalization normalization)
    : device_(device), channels_last_(channels_last), normalization_(std::move(normalization)) {
#ifdef LTFIT_HAS_CUDA_HEADERS
  if (device_.is_cuda()) {
    const c10::DeviceIndex index =
        device_.has_index() ? device_.index() : c10::cuda::current_device();
    c10::cuda::CUDAGuard guard(index);
    side_ = std::make_unique<SideStream>(
        SideStream{c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index),
                   normalization_tensors(normalization_, torch::Device(torch::kCUDA, index))});
  }
#endif
}

BatchFeed::~BatchFeed() = default;

StagedBatch BatchFeed::stage(const Batch& batch) const {
  // A batch made on the device (data.cache: device) is normalised on the current stream, in
  // order after the work that made it: there is no copy to overlap.
  const bool on_host = batch.images.device().is_cpu();
#ifdef LTFIT_HAS_CUDA_HEADERS
  if (side_ != nullptr && on_host) {
    // Pinned host memory is what lets the copy run without the host waiting (the loader pins
    // its images; the small label tensor is pinned here). The caching host allocator keeps a
    // pinned block until the copies that read it are done, so the batch may be dropped at once.
    const auto pinned = [](const torch::Tensor& t) {
      return t.numel() == 0 || t.is_pinned() ? t : t.pin_memory();
    };
    const c10::cuda::CUDAStreamGuard guard(side_->stream);
    StagedBatch staged;
    staged.labels = pinned(batch.labels).to(device_, /*non_blocking=*/true);
    staged.images = normalize_on_device(pinned(batch.images).to(device_, /*non_blocking=*/true),
                                        side_->constants, channels_last_);
    auto ready = std::make_shared<at::cuda::CUDAEvent>();
    ready->record(side_->stream);
    staged.ready = std::move(ready);
    return staged;
  }
#endif
  (void)on_host;
  return {normalize_images(batch.images, device_, channels_last_, normalization_),
          batch.labels.to(device_), nullptr};
}

void BatchFeed::use(const StagedBatch& staged) const {
#ifdef LTFIT_HAS_CUDA_HEADERS
  if (side_ == nullptr || staged.ready == nullptr) return;
  const c10::cuda::CUDAStream current =
      c10::cuda::getCurrentCUDAStream(side_->stream.device_index());
  static_cast<at::cuda::CUDAEvent*>(staged.ready.get())->block(current);
  // Made on the side stream, read on this one: without this the allocator could give their
  // memory to the next batch's copy while this step still reads it.
  for (const torch::Tensor& t : {staged.images, staged.labels}) {
    if (t.defined() && t.numel() > 0) t.record_stream(current);
  }
#else
  (void)staged;
#endif
}

}  // namespace ltfit
