// The Grad-CAM pictures of `ltfit predict --cam DIR`: per predicted image, DIR/<file stem>_cam.png,
// the image as the model saw it (eval size) beside its Grad-CAM overlay (eval/grad_cam.h), the
// first captioned with the probability and the class explained ("0.873 dog"; a long name is cut
// to the picture's width). Private to src/jobs
// (predict_job.cpp). Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include <torch/types.h>

#include "ltfit/eval/evaluator.h"
#include "ltfit/model/classifier.h"

namespace ltfit {

// Before any work: RuntimeError (exit 5) naming `dir` (--cam) when no picture could be written
// into it (output_check.h).
void check_cam_folder(const std::string& dir);

// Before any work: ConfigError (exit 2) when the picture of one of `images` would be written over
// one of them (an image named a_cam.png in `dir` with an a.jpg among them: check_output_not_input).
void check_cam_names(const std::string& dir, const std::vector<std::string>& images);

class CamPictures {
 public:
  // Creates `dir` and its parents (RuntimeError, exit 5, naming it when it cannot).
  explicit CamPictures(std::string dir);

  // Writes the picture of `image` (a path; the file is named after its stem, and a stem this
  // writer already used gets a counter: a_cam.png, a_2_cam.png, a_3_cam.png, ...) from `rgb`
  // uint8 [H,W,3] and `cam` float [H,W] in [0,1]; returns the path written.
  std::string write(const std::string& image, const torch::Tensor& rgb, const torch::Tensor& cam,
                    const std::string& class_name, double probability);

  // The pictures of one predicted batch, in its order, each for its most probable class (the
  // predicted one; multi-label: the highest sigmoid): `pixels` the normalised batch the model
  // just saw [N,3,H,W] on `eval.device`, `rgb` the same images decoded, uint8 [N,H,W,3],
  // `probabilities` float [N,classes] on the CPU, `images` the N images' paths, `classes` the
  // class names. Returns the paths written.
  std::vector<std::string> write_batch(Classifier& model, const EvalOptions& eval,
                                       const torch::Tensor& pixels, const torch::Tensor& rgb,
                                       const torch::Tensor& probabilities,
                                       const std::vector<std::string>& images,
                                       const std::vector<std::string>& classes);

  std::int64_t written() const { return written_; }  // pictures written so far

 private:
  // A file name not yet used by this writer for an image called `image`.
  std::string unused_name(const std::string& image);

  std::string dir_;
  std::unordered_set<std::string> used_;
  std::int64_t written_ = 0;
};

}  // namespace ltfit
