// Checkpoint evaluation and TTA prediction for the CLI: see checkpoint_eval.h.
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/ema.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "ltfit/config/config_loader.h"
#include "ltfit/data/class_counts.h"
#include "ltfit/data/loader.h"
#include "ltfit/jobs/training_setup.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/format.h"

namespace ltfit {

namespace {

// Validation loader options of `config` for `device` (pinned batches for CUDA copies).
// A multi-label checkpoint's batches carry multi-hot rows of its `classes`.
LoaderOptions valid_loader_options(const Config& config, const torch::Device& device,
                                   std::size_t classes) {
  LoaderOptions options = make_loader_options(config, /*train=*/false);
  options.pin_memory = device.is_cuda();
  if (is_multi_label(config)) options.multi_label_classes = static_cast<std::int64_t>(classes);
  return options;
}

// Whether the checkpoint's own layout must index `--data` (and `--split` train | valid): its
// data section knows the labels (CSV, file names, multi-label sets) and how the split is drawn,
// which a folder of class folders cannot say.
bool indexed_as_trained(const CheckpointEvalRequest& request, const Config& config) {
  if (request.split == "test") return false;
  if (request.data.empty()) return true;
  const DataLayout layout = config.data.layout;
  return is_multi_label(config) || layout == DataLayout::kCsv || layout == DataLayout::kPattern;
}

// The samples `request` asks for, with where they come from, into `out`.
void index_eval_samples(const CheckpointEvalRequest& request, const LoadedModel& loaded,
                        CheckpointEvaluation& out) {
  const Config& config = loaded.config;
  if (indexed_as_trained(request, config)) {
    DataConfig data = config.data;
    if (!request.data.empty()) data.root = request.data;
    const DatasetIndex index = index_dataset(data, config.run.seed, is_multi_label(config));
    out.split = request.split.empty() ? "valid" : request.split;
    out.samples = out.split == "train" ? index.train : index.valid;
    if (out.split == "valid" && index.valid.empty() && !index.train.empty()) {
      throw DataError("the checkpoint's run has no validation split: it trained on all of " +
                          data.root + " (data.valid_pct 0)",
                      "evaluate other images (--data DIR, class folders), or its training "
                      "images (--split train)");
    }
    // A train/ valid/ tree names the split's folder; a drawn split (class folders alone, a CSV,
    // file names) has only the root.
    const std::filesystem::path split_folder = std::filesystem::path(data.root) / out.split;
    std::error_code error;
    out.data_folder = index.layout == data_layout_name(DataLayout::kFolders) &&
                              std::filesystem::is_directory(split_folder, error)
                          ? split_folder.string()
                          : data.root;
    return;
  }
  if (is_multi_label(config)) {
    throw ConfigError("--split test: a multi-label checkpoint's data.layout has no test split",
                      "evaluate its train or valid split, or give --data with the same layout");
  }
  const std::string& data = request.data.empty() ? config.data.root : request.data;
  EvalDataSet set =
      index_eval_data(data, loaded.meta.classes, request.split, config.data, config.run.seed);
  out.samples = std::move(set.samples);
  out.data_folder = std::move(set.folder);
  out.split = std::move(set.split);
}

// A test set may lack some classes: they are reported with support 0, said once here
// (single-label; a multi-label set's counts per class are in the log's class counts).
void warn_absent_classes(const CheckpointEvaluation& out) {
  std::vector<bool> present(out.classes.size(), false);
  for (const Sample& s : out.samples) present[static_cast<std::size_t>(s.label)] = true;
  std::string absent;
  for (std::size_t k = 0; k < present.size(); ++k) {
    if (!present[k]) absent += (absent.empty() ? "" : ", ") + out.classes[k];
  }
  if (absent.empty()) return;
  spdlog::warn("no images of class(es) {} in {}: they are reported with support 0", absent,
               out.data_folder);
}

// evaluate_checkpoint's work once the model is loaded.
CheckpointEvaluation evaluate_loaded(const CheckpointEvalRequest& request, LoadedModel& loaded,
                                     const torch::Device& device) {
  const EvalOptions options = eval_options_for(loaded, device, request.precision);
  CheckpointEvaluation out;
  out.checkpoint = request.checkpoint;
  out.arch = loaded.config.model.arch;
  out.device = describe_device(device);
  out.precision = precision_name(options.precision);
  out.classes = loaded.meta.classes;
  out.temperature = options.temperature;
  if (options.temperature != 1.0) {
    spdlog::info("eval.temperature {}: probabilities of the logits divided by it",
                 options.temperature);
  }
  index_eval_samples(request, loaded, out);
  const LoaderOptions loader_options =
      valid_loader_options(loaded.config, device, loaded.meta.classes.size());
  Loader loader(out.samples, loader_options);
  spdlog::info("evaluating {} on {}{}: {} images of {} classes ({}, {}, {})", request.checkpoint,
               out.data_folder, out.split.empty() ? "" : " (split " + out.split + ")",
               loader.size(), out.classes.size(), out.arch, out.precision, out.device);
  spdlog::info("{}: {}", out.split.empty() ? "images" : out.split,
               describe_class_counts(out.samples, out.classes));
  if (!is_multi_label(loaded.config)) warn_absent_classes(out);
  if (request.tta) {
    const EvalConfig eval = tta_settings(loaded.config.eval, request.tta_mode, request.tta_beta);
    out.tta = run_tta(loaded.model, loader, loader_options, eval, options);
    out.plain = out.tta->plain;
  } else {
    out.plain = evaluate(loaded.model, loader, options);
  }
  spdlog::info("accuracy {:.4f} in {}", out.plain.accuracy, format_mm_ss(out.plain.seconds));
  return out;
}

}  // namespace

WeightChoice parse_weight_choice(const std::string& text) {
  const std::vector<std::string> names{"auto", "ema", "model"};
  return static_cast<WeightChoice>(parse_choice("--weights", names, text));
}

LoadedModel load_model_for_eval(const std::string& checkpoint, const torch::Device& device,
                                WeightChoice weights) {
  LoadedModel loaded;
  loaded.meta = read_checkpoint_meta(checkpoint);
  loaded.config = load_config_from_string(loaded.meta.config_yaml, checkpoint + " (config)");
  const ModelConfig& m = loaded.config.model;
  loaded.model = make_classifier(m.arch, static_cast<std::int64_t>(loaded.meta.classes.size()),
                                 m.head, m.dropout, m.stem);
  load_checkpoint(checkpoint, loaded.model, nullptr);
  const HookState* ema = find_ema_state(loaded.meta.hook_states);
  if (weights == WeightChoice::kEma && ema == nullptr) {
    throw CheckpointError("checkpoint '" + checkpoint +
                              "' holds no moving average of the weights (train.ema was off)",
                          "leave --weights out, or use --weights model");
  }
  if (ema != nullptr && weights != WeightChoice::kModel) {
    apply_ema_state(loaded.model, *ema);
    loaded.ema = true;
  }
  if (ema != nullptr) {
    spdlog::info("weights: the {} of {} (--weights {} for the {})",
                 loaded.ema ? "moving average (train.ema)" : "trained weights", checkpoint,
                 loaded.ema ? "model" : "ema", loaded.ema ? "trained weights" : "average");
  }
  loaded.model->to(device);
  loaded.model->eval();
  return loaded;
}

void prepare_for_inference(LoadedModel& loaded, EvalOptions& options) {
  const std::int64_t folded = loaded.model->fold_batch_norms();
  if (folded > 0) spdlog::info("inference: {} BatchNorms folded into their convolutions", folded);
  if (loaded.config.train.channels_last) {
    set_channels_last(loaded.model);
    options.channels_last = true;
  }
  // Under autocast (bf16, fp16) the layers autocast casts at each forward are cast once here:
  // the same logits, a batch's weight casting saved.
  const torch::Dtype lower = precision_dtype(options.precision);
  if (lower == torch::kFloat) return;
  const std::int64_t cast = cast_for_autocast(loaded.model, lower);
  spdlog::debug("inference: {} layers' weights in {} once, not at each forward", cast,
                precision_name(options.precision));
}

EvalConfig tta_settings(const EvalConfig& base, const std::string& mode,
                        std::optional<double> beta) {
  EvalConfig eval = base;
  if (!mode.empty()) {
    TtaMode parsed = base.tta_mode;
    try {
      parsed = parse_tta_mode(mode);
    } catch (const ChoiceError& e) {
      throw ConfigError("--tta-mode: expected " + e.expected() + ", got '" + mode + "'", e.hint());
    }
    if (parsed != base.tta_mode) {
      eval.tta_mode = parsed;
      eval.tta_beta = default_tta_beta(parsed);
    }
  }
  if (beta) {
    if (!(*beta >= 0.0 && *beta <= 1.0))
      throw ConfigError("--tta-beta: expected a number in [0, 1], got " + std::to_string(*beta));
    eval.tta_beta = *beta;
  }
  return eval;
}

EvalOptions eval_options_for(const LoadedModel& loaded, const torch::Device& device,
                             const std::string& precision) {
  EvalOptions options;
  options.device = device;
  options.precision = resolve_eval_precision(
      precision.empty() ? loaded.config.train.precision : parse_precision(precision, "--precision"),
      device);
  options.thresholds = class_thresholds(loaded.config, loaded.meta.classes.size());
  options.temperature = loaded.config.eval.temperature;
  options.top_k = loaded.config.eval.top_k;
  return options;
}

CheckpointEvaluation evaluate_checkpoint(const CheckpointEvalRequest& request) {
  const torch::Device device = resolve_device(request.device, "--device");
  LoadedModel loaded = load_model_for_eval(request.checkpoint, device);
  return evaluate_checkpoint(request, loaded, device);
}

CheckpointEvaluation evaluate_checkpoint(const CheckpointEvalRequest& request, LoadedModel& loaded,
                                         const torch::Device& device) {
  try {
    return evaluate_loaded(request, loaded, device);
  } catch (...) {
    rethrow_naming_batch_size(loaded.config.data.batch_size);
  }
}

std::filesystem::path sibling_checkpoint(const std::string& checkpoint, const std::string& suffix) {
  const std::filesystem::path source(checkpoint);
  return source.parent_path() / (source.stem().string() + suffix + source.extension().string());
}

void save_checkpoint_with_config(const std::string& source, const std::string& target,
                                 const Config& config) {
  CheckpointMeta meta = read_checkpoint_meta(source);
  meta.config_yaml = to_yaml(config);
  meta.weights_only = true;
  LoadedModel trained = load_model_for_eval(source, torch::kCPU, WeightChoice::kModel);
  save_checkpoint(target, trained.model, nullptr, meta);
}

TtaResult tta_predict_images(LoadedModel& loaded, const std::vector<std::string>& paths,
                             const EvalConfig& eval, const EvalOptions& options, int batch_size,
                             SkippedImages* skipped) {
  std::vector<Sample> samples;
  for (const auto& path : paths) samples.push_back({path, 0});
  LoaderOptions loader_options =
      valid_loader_options(loaded.config, options.device, loaded.meta.classes.size());
  if (batch_size > 0) loader_options.data.batch_size = batch_size;
  loader_options.data.workers = prediction_workers(loader_options, paths.size());
  Loader loader(std::move(samples), loader_options);
  try {
    TtaResult result = run_tta(loaded.model, loader, loader_options, eval, options);
    if (skipped) *skipped = loader.skipped();
    return result;
  } catch (...) {
    if (skipped) *skipped = loader.skipped();
    throw;
  }
}

int prediction_workers(const LoaderOptions& options, std::size_t images) {
  const int workers = options.data.workers == 0 ? default_worker_count() : options.data.workers;
  const std::size_t batch = static_cast<std::size_t>(std::max(1, options.data.batch_size));
  const std::size_t batches = std::max<std::size_t>(1, (images + batch - 1) / batch);
  return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(workers), batches));
}

}  // namespace ltfit
