// `ltfit predict`'s work: see predict_job.h. The model and its loader options come from
// predict_model.h; this file checks the request and outputs, expands the image inputs, runs the
// model over them (plain batches with --cam's pictures, or TTA) and hands each prediction, in image
// order with the unreadable ones, to the sink and the --out CSV.
#include "ltfit/jobs/predict_job.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>

#include "jobs/cam_pictures.h"
#include "jobs/predict_model.h"
#include "ltfit/data/image_inputs.h"
#include "ltfit/data/loader.h"
#include "ltfit/eval/multi_label_metrics.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/jobs/prediction_json.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/output_dir.h"
#include "ltfit/util/precision_name.h"
#include "ltfit/util/temp_files.h"

namespace ltfit {

namespace {

constexpr const char* kUnreadable = "unreadable image (the log says why)";

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
    const torch::Tensor pixels = normalize_images(
        batch->images, p.eval.device, p.eval.channels_last, p.model->input_normalization());
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
    r = tta_predict_images(*p.loaded, images, eval, p.eval, p.loader.data.batch_size, &skipped);
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
  p.loader.data.workers = prediction_workers(p.loader, images.size());
  spdlog::info("predicting {} image(s) with {} on {} ({}), batches of {}, {} loader thread(s)",
               images.size(), request.weights.empty() ? request.checkpoint : request.weights,
               describe_device(device), precision_name(p.eval.precision), p.loader.data.batch_size,
               p.loader.data.workers);
  PredictionsCsv csv(request.out, p.classes, request.tta);
  std::optional<CamPictures> cams;
  if (!request.cam.empty()) cams.emplace(request.cam);
  Emitter emitter(images, p.classes, request, sink, csv, cams ? &*cams : nullptr);
  const auto start = std::chrono::steady_clock::now();
  SkippedImages skipped;
  try {
    skipped = request.tta ? predict_tta(p, images, emitter) : predict_plain(p, images, emitter);
  } catch (...) {
    rethrow_naming_batch_size(p.loader.data.batch_size);
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
