// POST /v1/cam of `ltfit serve` (service.h): one image's Grad-CAM overlay.
#include <spdlog/fmt/fmt.h>
#include <torch/torch.h>

#include <mutex>

#include "ltfit/data/loader.h"
#include "ltfit/eval/grad_cam.h"
#include "ltfit/pictures/image_grid.h"
#include "ltfit/util/intra_op_threads.h"
#include "serve/service.h"

namespace ltfit {

namespace {

// The label `?class=` names (a class name, else its index); the predicted one when absent.
// nullopt with `error` set for a class the model does not have.
std::optional<std::int64_t> cam_class(const HttpRequest& request,
                                      const std::vector<std::string>& classes,
                                      std::int64_t predicted, std::string* error) {
  const auto found = request.query.find("class");
  if (found == request.query.end() || found->second.empty()) return predicted;
  for (std::size_t i = 0; i < classes.size(); ++i)
    if (classes[i] == found->second) return static_cast<std::int64_t>(i);
  try {
    std::size_t used = 0;
    const long label = std::stol(found->second, &used);
    if (used == found->second.size() && label >= 0 && label < static_cast<long>(classes.size())) {
      return label;
    }
  } catch (const std::exception&) {
  }
  *error = "class: '" + found->second + "' is none of the model's " +
           std::to_string(classes.size()) +
           " classes (GET /v1/info lists them; an index works too)";
  return std::nullopt;
}

}  // namespace

// POST /v1/cam: one image's Grad-CAM overlay (PNG, the eval size) for the predicted class or
// `?class=`; the class, its label and probability in X-Ltfit-* headers.
HttpResponse Service::cam(const HttpRequest& request) {
  std::vector<ImagePart> parts;
  if (PartsResult r = request_images(request.header("content-type"), request.body, 1, parts);
      r.status) {
    return json_error(r.status, r.status == 413 ? "POST /v1/cam takes one image" : r.reason);
  }
  std::string error;
  const std::optional<torch::Tensor> rgb = decode(parts[0], &error);
  if (!rgb) return json_error(400, "not a readable image: " + error);
  std::unique_lock<ComputeGate> alone(gate_);
  // The model's work as wide as the batcher's, on a thread of its own: this one stays narrow.
  return on_a_wide_thread([&] { return cam_of(request, *rgb); });
}

HttpResponse Service::cam_of(const HttpRequest& request, const torch::Tensor& rgb) {
  const torch::Tensor pixels = normalize_images(rgb.unsqueeze(0), eval_.device, eval_.channels_last,
                                                loaded_.model->input_normalization());
  torch::Tensor probabilities;
  std::string error;
  {
    torch::NoGradGuard no_grad;
    loaded_.model->eval();
    probabilities = output_probabilities(
        forward_logits(loaded_.model, pixels, eval_).to(torch::kCPU), eval_)[0];
  }
  const std::optional<std::int64_t> label =
      cam_class(request, loaded_.meta.classes, probabilities.argmax().item<std::int64_t>(), &error);
  if (!label) return json_error(400, error);
  const torch::Tensor map =
      grad_cam(loaded_.model, pixels, torch::tensor({*label}, torch::kInt64), eval_)[0];
  const EncodedPng png = encode_png(cam_overlay(rgb, map));
  const std::string& name = loaded_.meta.classes[static_cast<std::size_t>(*label)];
  return {200,
          "image/png",
          png.bytes,
          {{"X-Ltfit-Class", name},
           {"X-Ltfit-Label", std::to_string(*label)},
           {"X-Ltfit-Probability", fmt::format("{:.6f}", probabilities[*label].item<double>())}}};
}

}  // namespace ltfit
