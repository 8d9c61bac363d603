// `ltfit predict`'s work: see predict_job.h.
#include "ltfit/jobs/predict_job.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>

#include "jobs/cam_pictures.h"
#include "ltfit/data/image_inputs.h"
#include "ltfit/data/loader.h"
#include "ltfit/eval/multi_label_metrics.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/jobs/export_meta.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/imagenet_classes.h"
#include "ltfit/model/pretrained.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/output_dir.h"
#include "ltfit/util/precision_name.h"
#include "ltfit/util/temp_files.h"

namespace ltfit {

namespace {

constexpr int kWeightsBatchSize = 64;
constexpr const char* kUnreadable = "unreadable image (the log says why)";

// The model and how images reach it.
struct Predictor {
  std::optional<LoadedModel> loaded;  // a checkpoint's (for TTA)
  Classifier model{nullptr};
  std::vector<std::string> classes;
  EvalOptions eval;
  LoaderOptions loader;
};

void validate(const PredictRequest& request) {
  if (request.weights.empty() && request.checkpoint.empty())
    throw ConfigError("predict needs --checkpoint CKPT or --weights FILE.pth --arch A");
  if (!request.weights.empty() && !request.checkpoint.empty())
    throw ConfigError("predict takes --checkpoint or --weights, not both",
                      "give --checkpoint CKPT alone, or --weights FILE.pth [--arch A]");
  if (!request.arch.empty() && request.weights.empty())
    throw ConfigError("--arch goes with --weights (a checkpoint names its own arch)",
                      "drop --arch, or give --weights FILE.pth");
  if (request.tta && request.checkpoint.empty()) throw ConfigError("--tta needs --checkpoint CKPT");
  if (request.tta && !request.cam.empty())
    throw ConfigError("--cam explains plain predictions, not --tta ones",
                      "drop --tta, or run predict twice: with --tta, then with --cam");
  if (request.batch_size < 0)
    throw ConfigError("--batch-size: expected a positive integer, got " +
                      std::to_string(request.batch_size));
}

// The files the model comes from: the checkpoint, or the weight file and its description.
std::vector<CommandInput> model_inputs(const PredictRequest& request) {
  if (!request.checkpoint.empty()) return {{"the checkpoint (--checkpoint)", request.checkpoint}};
  return {{"the weight file (--weights)", request.weights},
          {"the weight file's description", export_meta_path(request.weights)}};
}

// --out and --cam's pictures against the images read (the model's files are checked first).
void check_outputs_not_images(const PredictRequest& request,
                              const std::vector<std::string>& images) {
  if (!request.out.empty()) {
    std::vector<CommandInput> inputs;
    for (const std::string& image : images) inputs.push_back({"an image to predict", image});
    check_output_not_input(request.out, "the predictions file (--out)", inputs);
  }
  if (!request.cam.empty()) check_cam_names(request.cam, images);
}

// The arch of --weights: --arch, else its export's description; they must agree.
std::string weights_arch(const PredictRequest& request, const std::optional<ExportMeta>& meta) {
  if (meta && !request.arch.empty() && meta->arch != request.arch) {
    throw ConfigError("--arch " + request.arch + ", but " + export_meta_path(request.weights) +
                          " says the weights are " + meta->arch + "'s",
                      "use --arch " + meta->arch + " (or drop --arch)");
  }
  if (!request.arch.empty()) return request.arch;
  if (meta) return meta->arch;
  throw ConfigError(
      "--weights needs --arch (one of " + join(model_arch_names()) + ")",
      "or keep the " + export_meta_path(request.weights) + " that `ltfit export` writes beside it");
}

// The class names of a weight file's K classes: its export's, else ImageNet's for 1000, else
// class_0 ... class_<K-1>.
std::vector<std::string> weights_classes(const PredictRequest& request,
                                         const std::optional<ExportMeta>& meta, std::int64_t k) {
  if (meta) {
    if (static_cast<std::int64_t>(meta->classes.size()) == k) return meta->classes;
    throw CheckpointError(
        export_meta_path(request.weights) + " names " + std::to_string(meta->classes.size()) +
            " classes, but the classifier of " + request.weights + " has " + std::to_string(k),
        "export the checkpoint again, or remove the .json beside the weights");
  }
  if (k == static_cast<std::int64_t>(imagenet_classes().size())) return imagenet_classes();
  spdlog::warn("{} names no classes (no {} beside it): calling its {} classes class_0 ... class_{}",
               request.weights, export_meta_path(request.weights), k, k - 1);
  std::vector<std::string> names;
  for (std::int64_t i = 0; i < k; ++i) names.push_back("class_" + std::to_string(i));
  return names;
}

// The model a weight file holds, as it is: its own head (fastai's or the arch's torchvision
// classifier) for its own number of classes, loaded strictly. With the description `ltfit export`
// writes, its classes and the checkpoint's validation transform (as predict --checkpoint); else
// torchvision's eval transform for the arch, pixel for pixel: Resize(eval_resize) with its
// interpolation as Pillow computes it, then CenterCrop(eval_crop).
Predictor weights_predictor(const PredictRequest& request, const torch::Device& device) {
  const std::optional<ExportMeta> meta = read_export_meta(request.weights);
  const std::string arch_name = weights_arch(request, meta);
  const ArchInfo& arch = arch_info(arch_name);
  const StateDict state = read_torch_state_dict(request.weights);
  const WeightsHead head = weights_head(state, arch_name, request.weights);
  Predictor p;
  p.model = make_classifier(arch_name, head.num_classes, head.kind, /*dropout=*/0.0);
  load_state_dict_strict(p.model, state, request.weights);
  p.model->to(device);
  p.model->eval();
  p.classes = weights_classes(request, meta, head.num_classes);
  spdlog::info(
      "--weights {}: {} with a {} head for {} classes{}", request.weights, arch_name,
      head_kind_name(head.kind), head.num_classes,
      meta ? " (classes and transform from " + export_meta_path(request.weights) + ")" : "");
  p.eval.device = device;
  if (meta && meta->task == "multi_label" &&
      meta->thresholds.size() == static_cast<std::size_t>(head.num_classes)) {
    p.eval.thresholds = meta->thresholds;  // sigmoids, and the labels above threshold
  }
  if (meta) {
    p.loader.image_size = meta->image_size;
    if (meta->eval_resize > meta->image_size) {  // a torchvision Resize + CenterCrop
      p.loader.eval_transform = EvalTransform{meta->eval_resize, meta->image_size,
                                              resample_filter_named(meta->interpolation)};
    }
  } else {
    p.loader.image_size = arch.eval_crop;
    p.loader.eval_transform =
        EvalTransform{arch.eval_resize, arch.eval_crop, resample_filter_named(arch.interpolation)};
  }
  p.loader.batch_size = request.batch_size > 0 ? request.batch_size : kWeightsBatchSize;
  return p;
}

Predictor make_predictor(const PredictRequest& request, const torch::Device& device) {
  if (!request.weights.empty()) return weights_predictor(request, device);
  Predictor p;
  p.loaded = load_model_for_eval(request.checkpoint, device);
  p.model = p.loaded->model;
  p.classes = p.loaded->meta.classes;
  p.eval = eval_options_for(*p.loaded, device, "");
  p.loader = make_loader_options(p.loaded->config, /*train=*/false);
  if (request.batch_size > 0) p.loader.batch_size = request.batch_size;
  return p;
}

// Multi-label: the classes above their thresholds, most probable first (null: single-label).
std::optional<std::vector<RankedClass>> labels_above(const torch::Tensor& probs,
                                                     const std::vector<std::string>& classes,
                                                     const std::vector<double>& thresholds) {
  if (thresholds.empty()) return std::nullopt;
  std::vector<RankedClass> out;
  for (std::int64_t k = 0; k < probs.size(0); ++k) {
    const double p = probs[k].item<double>();
    if (predicted(static_cast<float>(p), thresholds[static_cast<std::size_t>(k)])) {
      out.push_back({classes[static_cast<std::size_t>(k)], k, p});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const RankedClass& a, const RankedClass& b) {
    return a.probability > b.probability;
  });
  return out;
}

std::vector<RankedClass> ranked(const torch::Tensor& probs, const std::vector<std::string>& classes,
                                int top) {
  const auto best = probs.topk(std::min<std::int64_t>(top, probs.size(0)));
  std::vector<RankedClass> out;
  for (std::int64_t i = 0; i < std::get<0>(best).size(0); ++i) {
    const auto label = std::get<1>(best)[i].item<std::int64_t>();
    out.push_back(
        {classes[static_cast<std::size_t>(label)], label, std::get<0>(best)[i].item<double>()});
  }
  return out;
}

// The --out file, written row by row into a temporary file, renamed over `path` by commit().
class PredictionsCsv {
 public:
  PredictionsCsv(const std::string& path, const std::vector<std::string>& classes, bool tta)
      : path_(path) {
    if (path.empty()) return;
    const std::filesystem::path parent = std::filesystem::absolute(path).parent_path();
    create_output_dir(parent, "folder of the predictions file (--out)");
    // Temporaries of this file that a killed predict left (temp_files.h: never a live writer's).
    remove_stale_temp_files(parent.string(), std::filesystem::path(path).filename().string());
    file_ = std::make_unique<AtomicFile>(path);
    std::string header = "path,predicted";
    for (const auto& c : classes) header += "," + csv_field("prob_" + c);
    if (tta) {
      for (const auto& c : classes) header += "," + csv_field("plain_prob_" + c);
    }
    file_->write(header + "\n");
  }
  // probs (and plain): float32 [classes] on the CPU.
  void add(const std::string& image, const std::string& predicted, const torch::Tensor& probs,
           const torch::Tensor& plain = {}) {
    if (!file_) return;
    std::string row = csv_field(image) + "," + csv_field(predicted);
    for (const torch::Tensor& t : {probs, plain}) {
      if (!t.defined()) continue;
      const float* p = t.contiguous().data_ptr<float>();
      for (std::int64_t k = 0; k < t.numel(); ++k) row += fmt::format(",{:.6g}", p[k]);
    }
    file_->write(row + "\n");
  }
  void commit() {
    if (!file_) return;
    file_->commit();
    spdlog::info("wrote {}", path_);
  }

 private:
  std::string path_;
  std::unique_ptr<AtomicFile> file_;
};

// Hands predictions to the sink and the CSV in image order, unreadable images included.
class Emitter {
 public:
  Emitter(const std::vector<std::string>& images, const std::vector<std::string>& classes,
          const PredictRequest& r, const PredictionSink& sink, PredictionsCsv& csv,
          CamPictures* cams)
      : images_(images), classes_(classes), request_(r), sink_(sink), csv_(csv), cams_(cams) {}

  // The prediction of image `index` (all before it without one were unreadable).
  void predicted(std::int64_t index, ImagePrediction prediction, const torch::Tensor& probs,
                 const torch::Tensor& plain = {}) {
    unreadable_until(index);
    prediction.image = images_[static_cast<std::size_t>(index)];
    const auto best = static_cast<std::size_t>(probs.argmax().item<std::int64_t>());
    csv_.add(prediction.image, classes_[best], probs, plain);
    sink_(prediction);
    next_ = index + 1;
    ++count_;
  }
  // Every image before `end` not yet handed over was unreadable.
  void unreadable_until(std::int64_t end) {
    for (; next_ < end; ++next_) {
      ImagePrediction p;
      p.image = images_[static_cast<std::size_t>(next_)];
      p.error = kUnreadable;
      sink_(p);
    }
  }
  std::int64_t count() const { return count_; }
  const PredictRequest& request() const { return request_; }
  CamPictures* cams() const { return cams_; }  // --cam's writer; null without --cam

 private:
  const std::vector<std::string>& images_;
  const std::vector<std::string>& classes_;
  const PredictRequest& request_;
  const PredictionSink& sink_;
  PredictionsCsv& csv_;
  CamPictures* cams_;
  std::int64_t next_ = 0;
  std::int64_t count_ = 0;
};

// Plain predictions, batch by batch as the loader delivers them.
SkippedImages predict_plain(Predictor& p, const std::vector<std::string>& images, Emitter& out) {
  std::vector<Sample> samples;
  for (const auto& path : images) samples.push_back({path, 0});
  Loader loader(std::move(samples), p.loader);
  torch::NoGradGuard no_grad;
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    const torch::Tensor pixels =
        normalize_images(batch->images, p.eval.device, false, p.model->input_normalization());
    const torch::Tensor logits = forward_logits(p.model, pixels, p.eval).to(torch::kCPU);
    const torch::Tensor probs = output_probabilities(logits, p.eval);
    std::vector<std::string> cams;  // --cam: the batch's pictures, for its predicted classes
    if (out.cams() != nullptr) {
      std::vector<std::string> paths;
      for (const std::int64_t i : batch->indices)
        paths.push_back(images[static_cast<std::size_t>(i)]);
      cams =
          out.cams()->write_batch(p.model, p.eval, pixels, batch->images, probs, paths, p.classes);
    }
    for (std::size_t row = 0; row < batch->indices.size(); ++row) {
      const auto r = static_cast<std::int64_t>(row);
      ImagePrediction prediction;
      if (!cams.empty()) prediction.cam = cams[row];
      prediction.top = ranked(probs[r], p.classes, out.request().top);
      prediction.labels = labels_above(probs[r], p.classes, p.eval.thresholds);
      prediction.thresholds = p.eval.thresholds;
      if (out.request().logits) {
        const torch::Tensor l = logits[r].contiguous();
        prediction.logits =
            std::vector<float>(l.data_ptr<float>(), l.data_ptr<float>() + l.numel());
      }
      out.predicted(batch->indices[row], std::move(prediction), probs[r]);
    }
  }
  out.unreadable_until(static_cast<std::int64_t>(images.size()));
  return loader.skipped();
}

// TTA predictions (the checkpoint's eval section, or --tta-mode), handed over at the end.
SkippedImages predict_tta(Predictor& p, const std::vector<std::string>& images, Emitter& out) {
  const EvalConfig eval = tta_settings(p.loaded->config.eval, out.request().tta_mode, std::nullopt);
  SkippedImages skipped;
  TtaResult r;
  try {
    r = tta_predict_images(*p.loaded, images, eval, p.eval, p.loader.batch_size, &skipped);
  } catch (const DataError&) {
    if (skipped.count < static_cast<std::int64_t>(images.size())) throw;
    out.unreadable_until(static_cast<std::int64_t>(images.size()));  // none readable: below
    return skipped;
  }
  for (std::int64_t row = 0; row < r.tta.count; ++row) {
    ImagePrediction prediction;
    prediction.tta_mode = r.mode;
    prediction.top = ranked(r.tta.probabilities[row], p.classes, out.request().top);
    prediction.labels = labels_above(r.tta.probabilities[row], p.classes, p.eval.thresholds);
    prediction.thresholds = p.eval.thresholds;
    prediction.plain_top = ranked(r.plain.probabilities[row], p.classes, out.request().top);
    out.predicted(r.tta.indices[row].item<std::int64_t>(), std::move(prediction),
                  r.tta.probabilities[row], r.plain.probabilities[row]);
  }
  out.unreadable_until(static_cast<std::int64_t>(images.size()));
  return skipped;
}

void log_summary(const PredictSummary& s, const SkippedImages& skipped) {
  spdlog::info("predicted {} images in {:.2f} s, {:.1f} images/s{}", s.predicted, s.seconds,
               s.seconds > 0 ? static_cast<double>(s.predicted) / s.seconds : 0.0,
               s.skipped > 0 ? fmt::format(", {} unreadable skipped", s.skipped) : "");
  if (skipped.count > 0) {
    spdlog::warn("{} unreadable image(s) were skipped: {}{}", skipped.count,
                 skipped.examples.empty() ? "" : skipped.examples.front(),
                 skipped.count > 1 ? " ... (all listed above)" : "");
  }
}

}  // namespace

PredictSummary run_predict_job(const PredictRequest& request, const PredictionSink& sink) {
  validate(request);
  check_output_not_input(request.out, "the predictions file (--out)", model_inputs(request));
  if (!request.out.empty()) check_output_file(request.out, "predictions file (--out)");
  if (!request.cam.empty()) check_cam_folder(request.cam);
  const torch::Device device = resolve_device(request.device, "--device");
  Predictor p = make_predictor(request, device);
  const std::vector<std::string> images = expand_image_inputs(request.images);
  check_outputs_not_images(request, images);
  p.loader.pin_memory = device.is_cuda();
  p.loader.workers = prediction_workers(p.loader, images.size());
  spdlog::info("predicting {} image(s) with {} on {} ({}), batches of {}, {} loader thread(s)",
               images.size(), request.weights.empty() ? request.checkpoint : request.weights,
               describe_device(device), precision_name(p.eval.precision), p.loader.batch_size,
               p.loader.workers);
  PredictionsCsv csv(request.out, p.classes, request.tta);
  std::optional<CamPictures> cams;
  if (!request.cam.empty()) cams.emplace(request.cam);
  Emitter emitter(images, p.classes, request, sink, csv, cams ? &*cams : nullptr);
  const auto start = std::chrono::steady_clock::now();
  SkippedImages skipped;
  try {
    skipped = request.tta ? predict_tta(p, images, emitter) : predict_plain(p, images, emitter);
  } catch (...) {
    rethrow_naming_batch_size(p.loader.batch_size);
  }
  PredictSummary summary;
  summary.images = static_cast<std::int64_t>(images.size());
  summary.predicted = emitter.count();
  summary.skipped = summary.images - summary.predicted;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log_summary(summary, skipped);
  if (summary.predicted == 0) {
    throw DataError("none of the " + std::to_string(summary.images) +
                        " image(s) could be read (the log names each and says why)",
                    "give JPEG, PNG, BMP, WebP or TIFF images");
  }
  csv.commit();
  if (cams) spdlog::info("wrote {} Grad-CAM picture(s) to {}", cams->written(), request.cam);
  return summary;
}

std::vector<ImagePrediction> run_predict_job(const PredictRequest& request) {
  std::vector<ImagePrediction> results;
  run_predict_job(request, [&](const ImagePrediction& p) { results.push_back(p); });
  return results;
}

}  // namespace ltfit
