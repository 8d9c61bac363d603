// `ltfit predict`: class probabilities per image, from a checkpoint or from torchvision ImageNet
// weights (`--weights FILE.pth --arch resnetNN`, top-k with ImageNet class names). With --tta
// (checkpoints only) the probabilities are test-time augmented (src/eval/checkpoint_eval.cpp).
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/data/image_io.h"
#include "ltfit/data/loader.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/model/imagenet_classes.h"
#include "ltfit/model/pretrained.h"
#include "ltfit/model/resnet.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/util/error.h"
#include "ltfit/util/json.h"

namespace ltfit::cli {

namespace {

constexpr int kImagenetSize = 224;
constexpr double kImagenetCrop = 224.0 / 256.0;  // torchvision: Resize(256), CenterCrop(224)

struct PredictArgs {
  std::string checkpoint, weights, arch;
  std::vector<std::string> images;
  int top = 5;
  bool logits = false;
  bool json = false;
  bool tta = false;
  std::string tta_mode;
};

struct Predictor {
  ResNet model{nullptr};
  std::vector<std::string> classes;
  int size = 224;
  CropFlip crop;
};

Predictor make_predictor(const PredictArgs& args) {
  Predictor p;
  if (!args.weights.empty()) {
    if (args.arch.empty()) throw ConfigError("--weights needs --arch (resnet18 ... resnet152)");
    p.model = ResNet(resnet_spec(args.arch), 1000);
    load_pretrained_body(p.model, read_torch_state_dict(args.weights), args.weights);
    p.classes = imagenet_classes();
    p.size = kImagenetSize;
    p.crop.scale = kImagenetCrop;
    return p;
  }
  if (args.checkpoint.empty())
    throw ConfigError("predict needs --checkpoint CKPT or --weights FILE.pth --arch A");
  const CheckpointMeta meta = read_checkpoint_meta(args.checkpoint);
  const Config config = load_config_from_string(meta.config_yaml, args.checkpoint + " (config)");
  p.model = ResNet(resnet_spec(config.model.arch), static_cast<std::int64_t>(meta.classes.size()),
                   parse_head_kind(config.model.head), config.model.dropout);
  load_checkpoint(args.checkpoint, p.model, nullptr);
  p.classes = meta.classes;
  p.size = config.data.image_size;
  return p;
}

nlohmann::json ranked_json(const torch::Tensor& probs, const std::vector<std::string>& classes,
                           int top) {
  const auto best = probs.topk(std::min<std::int64_t>(top, probs.size(0)));
  nlohmann::json ranked = nlohmann::json::array();
  for (std::int64_t i = 0; i < std::get<0>(best).size(0); ++i) {
    const auto label = std::get<1>(best)[i].item<std::int64_t>();
    ranked.push_back({{"class", classes[static_cast<std::size_t>(label)]},
                      {"label", label},
                      {"probability", std::get<0>(best)[i].item<double>()}});
  }
  return ranked;
}

// --tta: every image through the checkpoint's TTA (eval section, or --tta-mode), batched.
std::vector<nlohmann::json> predict_tta(const PredictArgs& args) {
  if (args.checkpoint.empty()) throw ConfigError("--tta needs --checkpoint CKPT");
  LoadedModel loaded = load_model_for_eval(args.checkpoint, torch::kCPU);
  const EvalConfig eval = tta_settings(loaded.config.eval, args.tta_mode, std::nullopt);
  const TtaResult r = naming_batch_size_on_oom(loaded.config.data.batch_size, [&] {
    return tta_predict_images(loaded, args.images, eval, eval_options_for(loaded, torch::kCPU, ""));
  });
  std::vector<nlohmann::json> results(args.images.size());
  for (std::size_t i = 0; i < args.images.size(); ++i) {
    results[i] = {{"image", args.images[i]}, {"error", "unreadable image (see the log)"}};
  }
  for (std::int64_t row = 0; row < r.tta.count; ++row) {
    const auto i = static_cast<std::size_t>(r.tta.indices[row].item<std::int64_t>());
    results[i] = {
        {"image", args.images[i]},
        {"tta", r.mode},
        {"top", ranked_json(r.tta.probabilities[row], loaded.meta.classes, args.top)},
        {"plain_top", ranked_json(r.plain.probabilities[row], loaded.meta.classes, args.top)}};
  }
  return results;
}

nlohmann::json predict_one(Predictor& p, const std::string& path, const PredictArgs& args) {
  std::string error;
  const auto image = load_square_image(path, p.size, p.crop, &error);
  if (!image) return {{"image", path}, {"error", error}};
  torch::NoGradGuard no_grad;
  const torch::Tensor logits =
      p.model->forward(normalize_images(image->unsqueeze(0), torch::kCPU, false))[0];
  const torch::Tensor probs = torch::softmax(logits, 0);
  nlohmann::json result = {{"image", path}, {"top", ranked_json(probs, p.classes, args.top)}};
  if (args.logits) {
    result["logits"] =
        std::vector<float>(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
  }
  return result;
}

std::vector<nlohmann::json> predict_plain(const PredictArgs& args) {
  Predictor p = make_predictor(args);
  p.model->eval();
  std::vector<nlohmann::json> results;
  for (const auto& path : args.images) {
    results.push_back(predict_one(p, path, args));
    if (results.back().contains("error")) {
      spdlog::warn("skipping unreadable image {}: {}", path,
                   results.back()["error"].get<std::string>());
    }
  }
  return results;
}

void run_predict(const PredictArgs& args) {
  const std::vector<nlohmann::json> results = args.tta ? predict_tta(args) : predict_plain(args);
  nlohmann::json all = nlohmann::json::array();
  int readable = 0;
  for (const auto& r : results) {
    const std::string path = r["image"].get<std::string>();
    if (!r.contains("error")) ++readable;
    if (!args.json && !r.contains("error")) {
      std::cout << path << (args.tta ? " (TTA " + r["tta"].get<std::string>() + ")" : "") << "\n";
      for (const auto& t : r["top"]) {
        std::printf("  %-30s %8.4f\n", t["class"].get<std::string>().c_str(),
                    t["probability"].get<double>());
      }
      if (args.logits && r.contains("logits"))
        std::cout << "  logits: " << dump_json(r["logits"], -1) << "\n";
    }
    all.push_back(r);
  }
  if (args.json) std::cout << dump_json(all) << std::endl;
  if (readable == 0) throw DataError("none of the given images could be read");
}

}  // namespace

void add_predict_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand("predict", "class and probabilities per image");
  cmd->add_option("--checkpoint", args->checkpoint, "checkpoint file (.ckpt)");
  cmd->add_option("--weights", args->weights,
                  "a torchvision ImageNet .pth instead of a checkpoint");
  cmd->add_option("--arch", args->arch,
                  "with --weights: resnet18 | resnet34 | resnet50 | resnet101 | resnet152");
  cmd->add_option("--top", args->top, "classes shown per image")->capture_default_str();
  cmd->add_flag("--logits", args->logits, "also print the raw logits");
  cmd->add_flag("--json", args->json, "print one JSON document on stdout");
  cmd->add_flag("--tta", args->tta,
                "with --checkpoint: test-time augmented probabilities (the checkpoint's eval "
                "section; JSON adds plain_top, the plain ones)");
  cmd->add_option("--tta-mode", args->tta_mode,
                  "v1 | v2 (default: the checkpoint's eval.tta_mode)");
  cmd->add_option("images", args->images, "image files")->required();
  cmd->callback([args, exit_code] {
    run_predict(*args);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
