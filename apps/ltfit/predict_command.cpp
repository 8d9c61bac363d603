// `ltfit predict`: class probabilities per image of the files, folders and glob patterns given,
// from a checkpoint or from a weight file (`--weights FILE.pth --arch A`: a torchvision file or
// an `ltfit export`, with its own classifier and class names), batched on the device. With --tta
// (checkpoints only) the probabilities are test-time augmented (jobs/predict_job.h); --cam DIR
// writes a Grad-CAM picture per image. --json prints JSON Lines.
#include <spdlog/fmt/fmt.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "ltfit/jobs/predict_job.h"
#include "ltfit/jobs/prediction_json.h"
#include "ltfit/util/json.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

namespace {

struct PredictArgs {
  PredictRequest request;
  bool json = false;
};

bool is_label(const ImagePrediction& p, std::int64_t label) {
  return p.labels && std::any_of(p.labels->begin(), p.labels->end(),
                                 [&](const RankedClass& l) { return l.label == label; });
}

std::string prediction_text(const ImagePrediction& p) {
  std::string out = p.image + (p.tta_mode.empty() ? "" : " (TTA " + p.tta_mode + ")") + "\n";
  if (p.labels) {
    std::string names;
    for (const auto& l : *p.labels) names += fmt::format(" {} ({:.4f})", l.name, l.probability);
    out += "  labels (each class whose probability is above its threshold):" +
           (names.empty() ? std::string(" none") : names) + "\n";
  }
  for (const auto& t : p.top) {
    out += fmt::format("  {:<30} {:8.4f}", t.name, t.probability);
    if (!p.thresholds.empty()) {
      out +=
          fmt::format("  threshold {:.4f}: {}", p.thresholds.at(static_cast<std::size_t>(t.label)),
                      is_label(p, t.label) ? "label" : "not a label");
    }
    out += "\n";
  }
  if (p.logits) out += "  logits: " + dump_json(nlohmann::json(*p.logits), -1) + "\n";
  if (p.cam) out += "  Grad-CAM: " + *p.cam + "\n";
  return out;
}

void run_predict(const PredictArgs& args) {
  run_predict_job(args.request, [&](const ImagePrediction& p) {
    if (args.json) {
      write_stdout(dump_json(prediction_json(p), -1) + "\n");  // one line per image, now
    } else if (!p.error) {
      write_stdout(prediction_text(p));
    }
  });
}

}  // namespace

void add_predict_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<PredictArgs>();
  PredictRequest& r = args->request;
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "class and probabilities per image of the files, folders and glob patterns given, batched "
      "on the device; unreadable images are skipped and named, images/s logged at the end");
  cmd->add_option("--checkpoint", r.checkpoint, "checkpoint file (.ckpt)");
  cmd->add_option("--weights", r.weights,
                  "instead of --checkpoint: a .pth (torchvision's ImageNet file, or `ltfit "
                  "export`'s, whose FILE.json beside it gives the classes), used with its own "
                  "classifier");
  cmd->add_option("--arch", r.arch,
                  "with --weights: the file's architecture (one of `ltfit models`; default: "
                  "the one FILE.json names)");
  cmd->add_option("--top", r.top,
                  "classes shown per image (at least 1; more than the classes: all)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--logits", r.logits, "also print the raw logits");
  cmd->add_flag("--json", args->json,
                "print one JSON object per image and line on stdout as it is predicted: "
                "{image, top: [{class, label, probability}...]} or {image, error}");
  cmd->add_flag("--tta", r.tta,
                "with --checkpoint: test-time augmented probabilities (the checkpoint's eval "
                "section; JSON adds plain_top, the plain ones)");
  cmd->add_option("--tta-mode", r.tta_mode, "v1 | v2 (default: the checkpoint's eval.tta_mode)");
  cmd->add_option("--batch-size", r.batch_size,
                  "images per batch (default: the checkpoint's data.batch_size; 64 with --weights)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--device", r.device, "auto | cpu | cuda | cuda:N")->capture_default_str();
  cmd->add_option("--out", r.out,
                  "also write this CSV, one row per readable image: path,predicted,prob_<class>... "
                  "(with --tta: the TTA-blended probabilities, then plain_prob_<class>...)");
  cmd->add_option("--cam", r.cam,
                  "also write DIR/<image stem>_cam.png per image: the image at the model's input "
                  "size beside its Grad-CAM heat map for the predicted class (red: the evidence "
                  "the prediction rests on), captioned with class and probability; JSON adds "
                  "\"cam\", the file (not with --tta)");
  cmd->add_option("images", r.images,
                  "image files, folders (searched recursively for *.jpg, *.jpeg, *.png, *.bmp, "
                  "*.webp, *.tif, *.tiff) and glob patterns (quoted: 'photos/*.jpg')")
      ->required();
  cmd->callback([args, exit_code] {
    StopSignals signals(StopMode::kExitNow);  // nothing to save: exit 130, temporaries removed
    run_predict(*args);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
