#include "ltfit/data/batch_feed.h"

#include <utility>

// LibTorch's device-generic streams and events: CUDA's once ltfit's CUDA half is loaded
// (util/cuda_half.h); the binary needs no CUDA header.
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "ltfit/util/device.h"

namespace ltfit {

struct BatchFeed::SideStream {
  c10::Stream stream;
  NormalizationTensors constants;  // on the device, made once: no host copy per batch
};

BatchFeed::BatchFeed(const torch::Device& device, bool channels_last,
                     ImageNormalization normalization)
    : device_(device), channels_last_(channels_last), normalization_(std::move(normalization)) {
  if (device_.is_cuda()) {
    const c10::Device on(c10::DeviceType::CUDA, cuda_device_index(device_));
    const c10::DeviceGuard guard(on);
    side_ = std::make_unique<SideStream>(
        SideStream{c10::impl::VirtualGuardImpl(on.type()).getStreamFromGlobalPool(
                       on, /*isHighPriority=*/false),
                   normalization_tensors(normalization_, on)});
  }
}

BatchFeed::~BatchFeed() = default;

StagedBatch BatchFeed::stage(const Batch& batch) const {
  // A batch made on the device (data.cache: device) is normalised on the current stream, in
  // order after the work that made it: there is no copy to overlap.
  const bool on_host = batch.images.device().is_cpu();
  if (side_ != nullptr && on_host) {
    // Pinned host memory is what lets the copy run without the host waiting (the loader pins
    // its images; the small label tensor is pinned here). The caching host allocator keeps a
    // pinned block until the copies that read it are done, so the batch may be dropped at once.
    const auto pinned = [](const torch::Tensor& t) {
      return t.numel() == 0 || t.is_pinned() ? t : t.pin_memory();
    };
    const c10::StreamGuard guard(side_->stream);
    StagedBatch staged;
    staged.labels = pinned(batch.labels).to(device_, /*non_blocking=*/true);
    staged.images = normalize_on_device(pinned(batch.images).to(device_, /*non_blocking=*/true),
                                        side_->constants, channels_last_);
    staged.ready = std::make_shared<c10::Event>(side_->stream.device_type());
    staged.ready->record(side_->stream);
    return staged;
  }
  return {normalize_images(batch.images, device_, channels_last_, normalization_),
          batch.labels.to(device_), nullptr};
}

void BatchFeed::use(const StagedBatch& staged) const {
  if (side_ == nullptr || staged.ready == nullptr) return;
  const c10::Stream current =
      c10::impl::VirtualGuardImpl(side_->stream.device_type()).getStream(side_->stream.device());
  staged.ready->block(current);
  // Made on the side stream, read on this one: without this the allocator could give their
  // memory to the next batch's copy while this step still reads it.
  for (const torch::Tensor& t : {staged.images, staged.labels}) {
    if (t.defined() && t.numel() > 0) t.record_stream(current);
  }
}

}  // namespace ltfit
