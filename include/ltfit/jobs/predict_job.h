// `ltfit predict`: class probabilities per image, from a checkpoint (load_model_for_eval) or
// from a weight file (a .pth and its arch), used as it is: the model is built with the file's
// own head (fastai's or the arch's torchvision classifier) for the file's number of classes and
// loaded strictly. Class names come from the description `ltfit export` writes beside it
// (export_meta.h; with its validation transform), else ImageNet's for 1000 classes (with
// torchvision's eval transform for the arch), else class_0 ... class_<K-1>.
//
// The request names files, folders and glob patterns (data/image_inputs.h). Images are decoded
// by a Loader (parallel, the validation preprocessing) and predicted in batches on the device,
// a checkpoint's under its train.precision (eval_options_for); each prediction is handed to the
// caller as its batch completes. With `tta` (checkpoints only) the probabilities are test-time
// augmented per the checkpoint's eval section (tta_predict_images), handed over at the end. With
// `cam` each plain prediction also gets a Grad-CAM picture (eval/grad_cam.h), made from the
// batch the model just saw. Unreadable images are skipped, counted and named in the log, as in
// training. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ltfit {

struct PredictRequest {
  std::string checkpoint;     // .ckpt file; or (never both):
  std::string weights, arch;  // a .pth and its arch (empty: its export description's)
  // Image files, folders (searched recursively) and glob patterns; predictions come in this
  // order, each folder's and pattern's images sorted by path.
  std::vector<std::string> images;
  int top = 5;                  // classes ranked per image
  bool logits = false;          // also return the raw logits (not with tta)
  bool tta = false;             // test-time augmented probabilities (checkpoint only)
  std::string tta_mode;         // v1 | v2; empty: the checkpoint's eval.tta_mode
  int batch_size = 0;           // images per batch; 0: the checkpoint's data.batch_size, else 64
  std::string device = "auto";  // auto | cpu | cuda | cuda:N
  // CSV written at the end (atomically), one row per readable image:
  // path,predicted,prob_<class>... (with tta: TTA-blended, then plain_prob_<class>...). Empty:
  // none. Checked before any work.
  std::string out;
  // Folder for Grad-CAM pictures (eval/grad_cam.h), one per readable image: <file stem>_cam.png
  // (a stem met before gets a counter: <stem>_2_cam.png), the image at the model's input size
  // beside its heat map for the predicted class (multi-label: the most probable class), captioned
  // with class and probability. Created if missing; checked before any work. Empty: none. Not
  // with tta (it explains plain predictions).
  std::string cam;
};

struct RankedClass {
  std::string name;    // class name
  std::int64_t label;  // its index in the model's classes
  double probability;
};

struct ImagePrediction {
  std::string image;                         // path of the image file
  std::optional<std::string> error;          // why it could not be read; then nothing below is set
  std::vector<RankedClass> top;              // best first (with tta: the TTA-blended probabilities)
  std::vector<RankedClass> plain_top;        // with tta: the plain ones
  std::string tta_mode;                      // with tta: the mode used (v1 | v2)
  std::optional<std::vector<float>> logits;  // with `logits` (plain prediction)
  // A multi-label checkpoint: the classes whose probability is above their threshold
  // (eval.threshold(s)), most probable first; `top` then ranks every class's own sigmoid.
  std::optional<std::vector<RankedClass>> labels;
  std::vector<double> thresholds;  // multi-label: each class's threshold, by label; else empty
  std::optional<std::string> cam;  // with request.cam: the Grad-CAM picture written
};

struct PredictSummary {
  std::int64_t images = 0;     // image files the request named
  std::int64_t predicted = 0;  // those predicted (readable)
  std::int64_t skipped = 0;    // unreadable ones, skipped
  double seconds = 0.0;        // decoding and prediction wall time (model loading excluded)
};

using PredictionSink = std::function<void(const ImagePrediction&)>;

// Predicts every image `request` names, calling `sink` once per image in order (unreadable ones
// with their error) and writing request.out. ConfigError (exit 2) for a request without a model,
// --checkpoint with --weights, --arch without --weights, --weights without --arch and without an
// export description (or with one naming another arch), --tta without a checkpoint, --cam with
// --tta, a negative batch size, an --out or a --cam picture that is the model's file or one of
// the images (check_output_not_input, before any work); CheckpointError (exit 4) for weights whose
// keys fit neither head; RuntimeError (exit 5) for an --out or --cam folder that cannot be written,
// before any work; CheckpointError (exit 4) for a checkpoint or weights file that cannot be read;
// DataError (exit 3) for a path, folder or pattern without images (image_inputs.h) or when no image
// is readable; OutOfMemoryError naming the batch size.
PredictSummary run_predict_job(const PredictRequest& request, const PredictionSink& sink);

// The same, collecting the predictions.
std::vector<ImagePrediction> run_predict_job(const PredictRequest& request);

}  // namespace ltfit
