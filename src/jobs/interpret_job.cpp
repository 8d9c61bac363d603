// `ltfit interpret`'s work: see interpret_job.h. The files' text and the pictures are made in
// interpret_report.cpp.
#include "ltfit/jobs/interpret_job.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "interpret_report.h"
#include "ltfit/config/config.h"
#include "ltfit/data/loader.h"
#include "ltfit/eval/grad_cam.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/jobs/train_job.h"
#include "ltfit/run/event_file.h"
#include "ltfit/run/tensorboard.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/output_dir.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

// Single-label: -ln p[actual] per image, the highest first.
std::vector<TopLoss> single_label_top_losses(const EvalResult& r, int top) {
  const torch::Tensor p = r.probabilities.to(torch::kFloat64).contiguous();
  const torch::Tensor t = r.targets.to(torch::kLong).contiguous();
  const std::int64_t n = p.size(0);
  const auto pa = p.accessor<double, 2>();
  const auto ta = t.accessor<std::int64_t, 1>();
  const torch::Tensor indices = r.indices.to(torch::kLong).contiguous();
  const auto ia = indices.accessor<std::int64_t, 1>();
  std::vector<TopLoss> all;
  all.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    TopLoss item;
    item.sample = ia[i];
    item.actual = ta[i];
    item.predicted = p[i].argmax().item<std::int64_t>();
    item.probability = pa[i][item.actual];
    item.loss = -std::log(std::max(item.probability, 1e-12));
    all.push_back(item);
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const TopLoss& a, const TopLoss& b) { return a.loss > b.loss; });
  all.resize(std::min<std::size_t>(all.size(), static_cast<std::size_t>(top)));
  return all;
}

// Multi-label: per class, the images of highest binary cross-entropy for that class.
std::vector<TopLoss> multi_label_top_losses(const EvalResult& r, int top) {
  const torch::Tensor p = r.probabilities.to(torch::kFloat64).contiguous();
  const torch::Tensor y = r.targets.to(torch::kFloat64).contiguous();
  const auto pa = p.accessor<double, 2>();
  const auto ya = y.accessor<double, 2>();
  const torch::Tensor indices = r.indices.to(torch::kLong).contiguous();
  const auto ia = indices.accessor<std::int64_t, 1>();
  const std::int64_t n = p.size(0);
  std::vector<TopLoss> out;
  for (std::int64_t c = 0; c < p.size(1); ++c) {
    const double threshold = r.thresholds.empty() ? 0.5 : r.thresholds[static_cast<size_t>(c)];
    std::vector<TopLoss> column;
    for (std::int64_t i = 0; i < n; ++i) {
      TopLoss item;
      item.sample = ia[i];
      item.class_index = c;
      item.actual = ya[i][c] > 0.5 ? 1 : 0;
      item.probability = pa[i][c];
      item.predicted = item.probability > threshold ? 1 : 0;
      const double q = std::clamp(item.probability, 1e-12, 1.0 - 1e-12);
      item.loss = item.actual == 1 ? -std::log(q) : -std::log(1.0 - q);
      column.push_back(item);
    }
    std::stable_sort(column.begin(), column.end(),
                     [](const TopLoss& a, const TopLoss& b) { return a.loss > b.loss; });
    column.resize(std::min<std::size_t>(column.size(), static_cast<std::size_t>(top)));
    out.insert(out.end(), column.begin(), column.end());
  }
  return out;
}

// The output folder: --out, else <run dir>/interpret, else ./interpret.
fs::path interpret_out_dir(const InterpretRequest& request) {
  if (!request.out.empty()) return request.out;
  const std::optional<std::string> run = run_dir_of_checkpoint(request.eval.checkpoint);
  return run ? fs::path(*run) / "interpret" : fs::path("interpret");
}

void check_interpret_request(const InterpretRequest& request) {
  if (request.top < 1) {
    throw ConfigError("--top " + std::to_string(request.top) + ": at least one image is shown",
                      "pass --top 1 or more (default 9)");
  }
  if (request.min_count < 1) {
    throw ConfigError(
        "--min-count " + std::to_string(request.min_count) + ": a pair is confused at least once",
        "pass --min-count 1 or more (default 1)");
  }
}

// The top-loss images as the model sees them (uint8 [N,H,W,3], the validation transform) with
// their Grad-CAM maps [N,H,W] for the class each is judged on: the predicted class
// (single-label; why the model chose it), or the class of its row (multi-label).
TopLossImages top_loss_images(const InterpretRequest& request, const InterpretResult& result,
                              LoadedModel& loaded, const torch::Device& device) {
  const EvalOptions options = eval_options_for(loaded, device, request.eval.precision);
  std::vector<Sample> samples;
  for (const TopLoss& t : result.top_losses) {
    samples.push_back(result.evaluation.samples[static_cast<std::size_t>(t.sample)]);
  }
  LoaderOptions loader_options = make_loader_options(loaded.config, /*train=*/false);
  if (result.evaluation.plain.multi_label) {
    loader_options.multi_label_classes = static_cast<std::int64_t>(loaded.meta.classes.size());
  }
  loader_options.data.workers = prediction_workers(loader_options, samples.size());
  Loader loader(samples, loader_options);
  std::vector<torch::Tensor> images(samples.size()), cams(samples.size());
  loader.start_epoch(0);
  while (std::optional<Batch> batch = loader.next()) {
    std::vector<std::int64_t> classes;
    for (const std::int64_t i : batch->indices) {
      const TopLoss& t = result.top_losses[static_cast<std::size_t>(i)];
      classes.push_back(t.class_index >= 0 ? t.class_index : t.predicted);
    }
    const torch::Tensor x = normalize_images(batch->images, device, /*channels_last=*/false,
                                             loaded.model->input_normalization());
    const torch::Tensor maps =
        grad_cam(loaded.model, x, torch::tensor(classes, torch::kLong), options);
    for (std::size_t b = 0; b < batch->indices.size(); ++b) {
      const auto at = static_cast<std::size_t>(batch->indices[b]);
      images[at] = batch->images[static_cast<std::int64_t>(b)];
      cams[at] = maps[static_cast<std::int64_t>(b)];
    }
  }
  for (std::size_t i = 0; i < images.size(); ++i) {
    if (!images[i].defined()) {  // decoded for the evaluation, not now (the file changed)
      throw DataError("interpret: '" + samples[i].path + "' could not be decoded again",
                      "check that the dataset is not being changed while interpret runs");
    }
  }
  TopLossImages out;
  out.images = torch::stack(images);
  out.cams = torch::stack(cams);
  return out;
}

// The pictures into a new events file of the run's tb/ folder, at the checkpoint's step.
std::string write_interpret_events(const InterpretRequest& request, const CheckpointMeta& meta,
                                   const EncodedPng& top,
                                   const std::optional<EncodedPng>& confusion) {
  const std::optional<std::string> run = run_dir_of_checkpoint(request.eval.checkpoint);
  if (!request.tensorboard || !run) return "";
  EventFileWriter events(new_events_path((fs::path(*run) / "tb").string()));
  events.add_image(meta.global_step, "interpret/top_losses", top);
  if (confusion) events.add_image(meta.global_step, "interpret/confusion_matrix", *confusion);
  events.flush();
  return events.path();
}

}  // namespace

std::vector<ConfusedPair> most_confused(const torch::Tensor& confusion, std::int64_t min_count) {
  const torch::Tensor c = confusion.to(torch::kLong).contiguous();
  const auto a = c.accessor<std::int64_t, 2>();
  std::vector<ConfusedPair> pairs;
  for (std::int64_t i = 0; i < c.size(0); ++i) {
    for (std::int64_t j = 0; j < c.size(1); ++j) {
      if (i != j && a[i][j] >= min_count) pairs.push_back({i, j, a[i][j]});
    }
  }
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const ConfusedPair& x, const ConfusedPair& y) { return x.count > y.count; });
  return pairs;
}

std::vector<TopLoss> top_losses(const EvalResult& result, int top) {
  if (result.count == 0 || top <= 0) return {};
  return result.multi_label ? multi_label_top_losses(result, top)
                            : single_label_top_losses(result, top);
}

InterpretResult run_interpret_job(const InterpretRequest& request) {
  check_interpret_request(request);
  const fs::path out = interpret_out_dir(request);
  check_outputs_not_inputs(
      out,
      {"top_losses.png", "top_losses.csv", "most_confused.csv", "confusion_matrix.png",
       "predictions.csv"},
      request.out.empty() ? "the interpret output folder" : "the interpret output folder (--out)",
      {{"the checkpoint (--checkpoint)", request.eval.checkpoint}});
  check_output_file(out / "top_losses.csv", request.out.empty()
                                                ? "interpret output folder"
                                                : "interpret output folder (--out)");
  CheckpointEvalRequest eval = request.eval;
  eval.tta = false;
  const torch::Device device = resolve_device(eval.device, "--device");
  LoadedModel loaded = load_model_for_eval(eval.checkpoint, device);
  InterpretResult result;
  result.evaluation = evaluate_checkpoint(eval, loaded, device);
  result.out_dir = out.string();
  const EvalResult& r = result.evaluation.plain;
  result.top_losses = top_losses(r, request.top);
  if (!r.multi_label) result.most_confused = most_confused(r.confusion, request.min_count);
  spdlog::info("Grad-CAM of the {} top-loss images", result.top_losses.size());
  const TopLossImages images = top_loss_images(request, result, loaded, device);
  const EncodedPng top_png = top_losses_png(result, images);
  std::optional<EncodedPng> confusion;
  if (!r.multi_label) confusion = confusion_png(result.evaluation);
  create_output_dir(out, "interpret output folder");
  const auto write = [&](const std::string& name, const std::string& bytes) {
    const std::string path = (out / name).string();
    write_file_atomic(path, bytes);
    result.files.push_back(path);
  };
  write("top_losses.png", top_png.bytes);
  write("top_losses.csv", top_losses_csv(result));
  if (!r.multi_label) {
    write("most_confused.csv", most_confused_csv(result));
    write("confusion_matrix.png", confusion->bytes);
  }
  write("predictions.csv", predictions_csv(result.evaluation));
  result.events_file = write_interpret_events(request, loaded.meta, top_png, confusion);
  spdlog::info("wrote {} files into {}{}", result.files.size(), out.string(),
               result.events_file.empty() ? "" : " and the pictures into " + result.events_file);
  return result;
}

}  // namespace ltfit
