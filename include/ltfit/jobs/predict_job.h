// `ltfit predict`: class probabilities per image, from a checkpoint (load_model_for_eval) or
// from torchvision ImageNet weights (a .pth and its arch: ImageNet's 1000 class names,
// torchvision's Resize(256) + CenterCrop(224)). With `tta` (checkpoints only) the probabilities are
// test-time augmented per the checkpoint's eval section (tta_predict_images). Runs on the CPU. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ltfit {

struct PredictRequest {
  std::string checkpoint;           // .ckpt file; or:
  std::string weights, arch;        // a torchvision ImageNet .pth and its resnetNN (wins if set)
  std::vector<std::string> images;  // image files, in the order results are returned
  int top = 5;                      // classes ranked per image
  bool logits = false;              // also return the raw logits (not with tta)
  bool tta = false;                 // test-time augmented probabilities (checkpoint only)
  std::string tta_mode;             // v1 | v2; empty: the checkpoint's eval.tta_mode
};

struct RankedClass {
  std::string name;    // class name
  std::int64_t label;  // its index in the model's classes
  double probability;
};

struct ImagePrediction {
  std::string image;                         // as given
  std::optional<std::string> error;          // why it could not be read; then nothing below is set
  std::vector<RankedClass> top;              // best first (with tta: the TTA-blended probabilities)
  std::vector<RankedClass> plain_top;        // with tta: the plain ones
  std::string tta_mode;                      // with tta: the mode used (v1 | v2)
  std::optional<std::vector<float>> logits;  // with `logits` (plain prediction)
};

// One prediction per image of `request.images`, in order; unreadable images carry an error (and
// are logged). ConfigError for a request without a model, --weights without --arch, --tta without
// a checkpoint; CheckpointError for a checkpoint or weights file that cannot be read; an
// out-of-memory error under tta names the checkpoint's data.batch_size.
std::vector<ImagePrediction> run_predict_job(const PredictRequest& request);

}  // namespace ltfit
