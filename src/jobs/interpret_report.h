// The files and pictures of `ltfit interpret` (interpret_job.h), kept apart from its work.
// Pure formatting, thread-safe.
#pragma once

#include <torch/torch.h>

#include <string>

#include "ltfit/jobs/interpret_job.h"
#include "ltfit/pictures/image_grid.h"

namespace ltfit {

// The top-loss images as the model saw them and their Grad-CAM maps, in top_losses order.
struct TopLossImages {
  torch::Tensor images;  // uint8 [N,H,W,3] RGB
  torch::Tensor cams;    // float [N,H,W] in [0, 1]
};

// Each image beside its Grad-CAM overlay, captioned (single-label) "predicted/actual / loss /
// probability of the actual class", or (multi-label) "class: has|not / p / loss", one row per
// class.
EncodedPng top_losses_png(const InterpretResult& result, const TopLossImages& images);
// rank,path,actual,predicted,loss,probability; multi-label: class,rank,path,actual,predicted,...
// with actual/predicted 1 or 0.
std::string top_losses_csv(const InterpretResult& result);
// actual,predicted,count.
std::string most_confused_csv(const InterpretResult& result);

}  // namespace ltfit
