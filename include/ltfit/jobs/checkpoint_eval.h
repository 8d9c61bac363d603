// Evaluating and predicting with a saved checkpoint: what `ltfit evaluate` and `ltfit predict`
// run, kept out of the command files.
//
// The model is rebuilt from the checkpoint's own config (arch, head, classes) and run under the
// checkpoint's train.precision where the device supports it (fp16 on a CPU falls back to fp32,
// logged). Not thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "ltfit/config/config.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/eval/tta.h"
#include "ltfit/model/classifier.h"
#include "ltfit/train/checkpoint.h"

namespace ltfit {

struct LoaderOptions;
struct SkippedImages;

// Which of a checkpoint's weights to use: the trained ones, or their moving average (train.ema,
// kept in the checkpoint's "ema" hook state). kAuto: the average when the checkpoint has one.
enum class WeightChoice { kAuto, kEma, kModel };
// "auto" | "ema" | "model"; ConfigError naming --weights otherwise.
WeightChoice parse_weight_choice(const std::string& text);

struct LoadedModel {
  Classifier model{nullptr};  // weights loaded, on the requested device
  Config config;              // the run's resolved config
  CheckpointMeta meta;        // classes, epochs, ...
  bool ema = false;           // the weights are the checkpoint's moving average
};

// Rebuilds and loads the model of `checkpoint` onto `device`, with the weights `weights` picks
// (logged when the checkpoint has an average). CheckpointError (exit 4) names the file when it
// is missing, corrupt or does not match its own config, or when kEma is asked of a checkpoint
// without an average.
LoadedModel load_model_for_eval(const std::string& checkpoint, const torch::Device& device,
                                WeightChoice weights = WeightChoice::kAuto);

// `base` with the command line's overrides: a different `mode` (v1 | v2, empty: keep) takes that
// mode's fastai default beta (0.4 | 0.25) unless `beta` is given. ConfigError for bad values.
EvalConfig tta_settings(const EvalConfig& base, const std::string& mode,
                        std::optional<double> beta);

// The evaluation options for `loaded` on `device`, precision `precision` (empty: the
// checkpoint's train.precision), resolved by resolve_eval_precision; the thresholds and the
// temperature of the checkpoint's eval section (so predict, evaluate and their TTA divide the
// logits by eval.temperature).
EvalOptions eval_options_for(const LoadedModel& loaded, const torch::Device& device,
                             const std::string& precision);

// The model of `loaded` made ready for the commands that only run it (predict, serve): its
// BatchNorms folded into the convolutions before them where its family knows the pairs
// (ClassifierImpl::fold_batch_norms: logits within about 1e-6 of the unfolded model's), then the
// memory format its training used: with train.channels_last, NHWC weights, and `options` feeds
// NHWC batches (as training's own validation ran it). On a two-core AVX2 CPU a ResNet-18 forward
// takes 27 ms instead of 40 at 224 px in NHWC, and folding saves about 14 % more at batch 16.
// Under a lower precision (`options.precision` bf16 or fp16), the convolutions' and linear
// layers' weights are cast to it once (cast_for_autocast), as autocast would at each forward.
// Not for a model whose weights are written out or trained afterwards.
void prepare_for_inference(LoadedModel& loaded, EvalOptions& options);

struct CheckpointEvalRequest {
  std::string checkpoint;  // .ckpt file
  // A folder of <class>/ folders, or a dataset root (index_eval_data); empty: the validation
  // split of the checkpoint's config (data.root).
  std::string data;
  // Of the dataset root (--data, else the config's data.root): train | valid | test. Empty:
  // valid (without --data: the config's validation split, data.subset applied).
  std::string split;
  std::string device = "auto";     // auto | cpu | cuda | cuda:N
  std::string precision;           // fp32 | fp16 | bf16; empty: the checkpoint's train.precision
  bool tta = false;                // also run test-time augmentation
  std::string tta_mode;            // v1 | v2; empty: the checkpoint's eval.tta_mode
  std::optional<double> tta_beta;  // blend weight of the plain predictions; see tta_settings
};

struct CheckpointEvaluation {
  std::string checkpoint;            // as requested
  std::string arch;                  // model.arch
  std::string device;                // describe_device()
  std::string precision;             // the precision actually used
  std::vector<std::string> classes;  // label order
  std::vector<Sample> samples;       // the evaluated set; result indices point into it
  std::string data_folder;           // where the samples are (e.g. <root>/valid)
  std::string split;                 // train | valid | test; empty at a class-folder level
  double temperature = 1.0;          // eval.temperature the probabilities were computed at
  EvalResult plain;                  // plain figures (with TTA: the TTA run's plain pass);
                                     // plain.logits: the raw logits
  std::optional<TtaResult> tta;      // when requested
};

// Loads the checkpoint, indexes the data and evaluates (plain, or TTA with its plain pass), at
// the checkpoint's eval.temperature. An out-of-memory error names the checkpoint's
// data.batch_size (OutOfMemoryError, exit 5).
CheckpointEvaluation evaluate_checkpoint(const CheckpointEvalRequest& request);

// The same with the model already loaded (load_model_for_eval of request.checkpoint on
// `device`), which stays usable afterwards: interpret's Grad-CAM runs on it without reading the
// checkpoint a second time.
CheckpointEvaluation evaluate_checkpoint(const CheckpointEvalRequest& request, LoadedModel& loaded,
                                         const torch::Device& device);

// The path beside `checkpoint` with `suffix` added to its name's stem: (runs/a/last.ckpt,
// "-tuned") -> runs/a/last-tuned.ckpt.
std::filesystem::path sibling_checkpoint(const std::string& checkpoint, const std::string& suffix);

// Writes to `target` a weights-only copy of checkpoint `source` whose config is `config`: the
// trained weights, classes and hook states (a moving average among them) as they are. What
// `evaluate --tune-thresholds` and `calibrate` write. CheckpointError (exit 4) for a source that
// cannot be read; RuntimeError (exit 5) when the target cannot be written.
void save_checkpoint_with_config(const std::string& source, const std::string& target,
                                 const Config& config);

// TTA on loose image files (labels unknown: 0), for `ltfit predict --tta`, `batch_size` images
// per batch (0: the checkpoint's data.batch_size). Unreadable images are skipped and logged; they
// are named in `skipped` when given. TtaResult indices point into `paths`. DataError if none is
// readable (`skipped` filled then too).
TtaResult tta_predict_images(LoadedModel& loaded, const std::vector<std::string>& paths,
                             const EvalConfig& eval, const EvalOptions& options, int batch_size = 0,
                             SkippedImages* skipped = nullptr);

// Loader threads for predicting `images` images: `options.workers` (0: default_worker_count()),
// at most one per batch.
int prediction_workers(const LoaderOptions& options, std::size_t images);

}  // namespace ltfit
