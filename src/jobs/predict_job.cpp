// `ltfit predict`'s work: see predict_job.h.
#include "ltfit/jobs/predict_job.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "ltfit/data/image_io.h"
#include "ltfit/data/loader.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/model/imagenet_classes.h"
#include "ltfit/model/pretrained.h"
#include "ltfit/model/resnet.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr int kImagenetSize = 224;
constexpr double kImagenetCrop = 224.0 / 256.0;  // torchvision: Resize(256), CenterCrop(224)

struct Predictor {
  ResNet model{nullptr};
  std::vector<std::string> classes;
  int size = 224;
  CropFlip crop;
};

Predictor make_predictor(const PredictRequest& request) {
  Predictor p;
  if (!request.weights.empty()) {
    if (request.arch.empty()) throw ConfigError("--weights needs --arch (resnet18 ... resnet152)");
    p.model = ResNet(resnet_spec(request.arch), 1000);
    load_pretrained_body(p.model, read_torch_state_dict(request.weights), request.weights);
    p.model->eval();
    p.classes = imagenet_classes();
    p.size = kImagenetSize;
    p.crop.scale = kImagenetCrop;
    return p;
  }
  if (request.checkpoint.empty())
    throw ConfigError("predict needs --checkpoint CKPT or --weights FILE.pth --arch A");
  LoadedModel loaded = load_model_for_eval(request.checkpoint, torch::kCPU);
  p.model = loaded.model;
  p.classes = loaded.meta.classes;
  p.size = loaded.config.data.image_size;
  return p;
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

// Every image through the checkpoint's TTA (eval section, or tta_mode), batched.
std::vector<ImagePrediction> predict_tta(const PredictRequest& request) {
  if (request.checkpoint.empty()) throw ConfigError("--tta needs --checkpoint CKPT");
  LoadedModel loaded = load_model_for_eval(request.checkpoint, torch::kCPU);
  const EvalConfig eval = tta_settings(loaded.config.eval, request.tta_mode, std::nullopt);
  TtaResult r;
  try {
    r = tta_predict_images(loaded, request.images, eval, eval_options_for(loaded, torch::kCPU, ""));
  } catch (...) {
    rethrow_naming_batch_size(loaded.config.data.batch_size);
  }
  std::vector<ImagePrediction> results(request.images.size());
  for (std::size_t i = 0; i < request.images.size(); ++i) {
    results[i].image = request.images[i];
    results[i].error = "unreadable image (see the log)";
  }
  for (std::int64_t row = 0; row < r.tta.count; ++row) {
    ImagePrediction& p = results[static_cast<std::size_t>(r.tta.indices[row].item<std::int64_t>())];
    p.error.reset();
    p.tta_mode = r.mode;
    p.top = ranked(r.tta.probabilities[row], loaded.meta.classes, request.top);
    p.plain_top = ranked(r.plain.probabilities[row], loaded.meta.classes, request.top);
  }
  return results;
}

ImagePrediction predict_one(Predictor& p, const std::string& path, const PredictRequest& request) {
  ImagePrediction result;
  result.image = path;
  std::string error;
  const auto image = load_square_image(path, p.size, p.crop, &error);
  if (!image) {
    result.error = error;
    return result;
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor logits =
      p.model->forward(normalize_images(image->unsqueeze(0), torch::kCPU, false))[0];
  result.top = ranked(torch::softmax(logits, 0), p.classes, request.top);
  if (request.logits) {
    result.logits =
        std::vector<float>(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
  }
  return result;
}

std::vector<ImagePrediction> predict_plain(const PredictRequest& request) {
  Predictor p = make_predictor(request);
  std::vector<ImagePrediction> results;
  for (const auto& path : request.images) {
    results.push_back(predict_one(p, path, request));
    if (results.back().error)
      spdlog::warn("skipping unreadable image {}: {}", path, *results.back().error);
  }
  return results;
}

}  // namespace

std::vector<ImagePrediction> run_predict_job(const PredictRequest& request) {
  return request.tta ? predict_tta(request) : predict_plain(request);
}

}  // namespace ltfit
