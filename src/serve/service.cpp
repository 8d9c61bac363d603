// The service behind `ltfit serve`: its model and batcher, the routes, /v1/predict (service.h).
#include "serve/service.h"

#include <spdlog/fmt/fmt.h>
#include <torch/torch.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <shared_mutex>

#include "ltfit/data/image_io.h"
#include "ltfit/data/loader.h"
#include "ltfit/eval/tta.h"
#include "ltfit/jobs/prediction_json.h"
#include "ltfit/util/cpu_block_cache.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/sha256.h"
#include "serve/serve_page.h"

namespace ltfit {

namespace {

constexpr std::size_t kMaxImagesPerRequest = 64;

// The bearer token in `path` (its first line, spaces trimmed); ConfigError when unreadable.
std::string read_token(const std::string& path) {
  std::ifstream in(path);
  std::string token;
  if (!in || !std::getline(in, token)) {
    throw ConfigError("--token-file " + path + ": cannot read a token from it",
                      "write the token on the file's first line");
  }
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.front())))
    token.erase(0, 1);
  if (token.size() < 16) {
    throw ConfigError("--token-file " + path + ": the token is shorter than 16 characters",
                      "use a long random token, e.g. openssl rand -hex 32 > " + path);
  }
  return token;
}

// Compares in time independent of where the strings differ.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// 503 with Retry-After: the request's time ran out before the model answered it.
HttpResponse too_late() {
  HttpResponse r = json_error(503, "the model did not answer within --request-timeout-s");
  r.headers.push_back({"Retry-After", "1"});
  return r;
}

// A query parameter that is a flag: absent, "0" or "false" off; "", "1", "true" or "v1" on.
std::optional<bool> query_flag(const HttpRequest& request, const std::string& name) {
  const auto found = request.query.find(name);
  if (found == request.query.end()) return false;
  const std::string value = ascii_lower(found->second);
  if (value == "0" || value == "false") return false;
  if (value.empty() || value == "1" || value == "true" || value == "v1") return true;
  return std::nullopt;
}

}  // namespace

Service::Service(const ServeRequest& request) : request_(request), budget_(512ull << 20) {
  if (request.max_batch < 1 || request.max_batch > 1024) {
    throw ConfigError("--max-batch: expected 1 to 1024, got " + std::to_string(request.max_batch));
  }
  if (request.max_wait_ms < 0 || request.max_wait_ms > 10000) {
    throw ConfigError("--max-wait-ms: expected 0 to 10000, got " +
                      std::to_string(request.max_wait_ms));
  }
  if (request.queue < 1 || request.body_limit_mb < 1 || request.request_timeout_s < 1) {
    throw ConfigError("--queue, --body-limit-mb and --request-timeout-s must be at least 1");
  }
  if (request.inflight_mb < request.body_limit_mb) {
    throw ConfigError("--inflight-mb " + std::to_string(request.inflight_mb) +
                          " is below --body-limit-mb " + std::to_string(request.body_limit_mb),
                      "hold at least one request body at its largest");
  }
  if (!request.token_file.empty()) token_ = read_token(request.token_file);
  const torch::Device device = resolve_device(request.device, "--device");
  loaded_ = load_model_for_eval(request.checkpoint, device, parse_weight_choice(request.weights));
  eval_ = eval_options_for(loaded_, device, request.precision);
  prepare_for_inference(loaded_, eval_);
  spdlog::info("model: {} on {}, {}", loaded_.config.model.arch, device.str(),
               precision_name(eval_.precision));
  limits_ = image_limits(loaded_.config.data);
  tta_ = tta_settings(loaded_.config.eval, "v1", std::nullopt);
  const int size = loaded_.config.data.image_size;
  info_ = {
      {"arch", loaded_.config.model.arch},
      {"head", head_kind_name(loaded_.config.model.head)},
      {"task", eval_.thresholds.empty() ? "single_label" : "multi_label"},
      {"classes", loaded_.meta.classes},
      {"thresholds", eval_.thresholds},
      {"temperature", eval_.temperature},
      {"image_size", size},
      {"eval_transform",
       {{"resize", size},
        {"crop", size},
        {"interpolation", "area"},
        {"method", resize_method_name(loaded_.config.data.resize_method)},
        {"pad_mode", pad_mode_name(loaded_.config.data.pad_mode)}}},
      {"checkpoint", std::filesystem::path(request.checkpoint).filename().string()},
      {"checkpoint_sha256", sha256_file(request.checkpoint)},
      {"weights", loaded_.ema ? "ema" : "model"},
      {"device", describe_device(device)},
      {"precision", precision_name(eval_.precision)},
      {"max_batch", request.max_batch},
      {"max_wait_ms", request.max_wait_ms},
      {"tta", {{"mode", "v1"}, {"views", 8}, {"scale", tta_.tta_scale}, {"beta", tta_.tta_beta}}}};
  batcher_ = std::make_unique<Batcher>(
      [this](const torch::Tensor& images, const std::vector<char>& tta) {
        return run_batch(images, tta);
      },
      request.max_batch, std::chrono::milliseconds(request.max_wait_ms),
      static_cast<std::size_t>(request.queue));
}

// The model on a batch; the rows flagged `tta` get v1's blend of the plain probabilities and the
// mean of the 8 corner views' (as `ltfit predict --tta --tta-mode v1`).
std::pair<torch::Tensor, torch::Tensor> Service::run_batch(const torch::Tensor& images,
                                                           const std::vector<char>& tta) {
  std::unique_lock<ComputeGate> alone(gate_);
  c10::InferenceMode inference;
  const torch::Tensor pixels = normalize_images(images, eval_.device, eval_.channels_last,
                                                loaded_.model->input_normalization());
  const torch::Tensor logits = forward_logits(loaded_.model, pixels, eval_).to(torch::kCPU);
  torch::Tensor probabilities = output_probabilities(logits, eval_);
  std::vector<std::int64_t> rows;
  for (std::size_t i = 0; i < tta.size(); ++i)
    if (tta[i]) rows.push_back(static_cast<std::int64_t>(i));
  if (!rows.empty()) {
    const torch::Tensor index = torch::tensor(rows, torch::kInt64);
    const torch::Tensor views = v1_view_probabilities(
        loaded_.model, pixels.index_select(0, index.to(pixels.device())), tta_.tta_scale, eval_);
    probabilities.index_copy_(
        0, index, blend_tta(probabilities.index_select(0, index), views, tta_.tta_beta));
  }
  return {probabilities, logits};
}

HttpResponse Service::handle(const HttpRequest& request) {
  return route(request, Clock::now() + std::chrono::seconds(request_.request_timeout_s));
}

HttpResponse Service::route(const HttpRequest& request, Clock::time_point deadline) {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  const bool guarded = path.rfind("/v1/", 0) == 0 || path == "/metrics";
  if (guarded && !token_.empty() &&
      !same_secret(request.header("authorization"), "Bearer " + token_)) {
    HttpResponse r = json_error(401, "this server needs Authorization: Bearer <token>");
    r.headers.push_back({"WWW-Authenticate", "Bearer"});
    return r;
  }
  const auto only = [&](bool allowed, const char* methods, auto answer) -> HttpResponse {
    if (!allowed) {
      HttpResponse r = json_error(405, path + " takes " + methods);
      r.headers.push_back({"Allow", methods});
      return r;
    }
    return answer();
  };
  if (path == "/" || path == "/index.html") {
    return only(get, "GET", [] {
      return HttpResponse{200, "text/html; charset=utf-8", serve_page(), {}};
    });
  }
  if (path == "/healthz")
    return only(get, "GET", [] {
      return HttpResponse{200, "application/json", "{\"status\":\"ok\"}\n", {}};
    });
  if (path == "/readyz") {
    return only(get, "GET", [&] {
      return stopping ? json_error(503, "stopping")
                      : HttpResponse{200, "application/json", "{\"status\":\"ready\"}\n", {}};
    });
  }
  if (path == "/v1/info")
    return only(get, "GET", [&] {
      return HttpResponse{200, "application/json", info_.dump(1) + "\n", {}};
    });
  if (path == "/metrics") {
    return only(get, "GET", [&] {
      const double uptime = std::chrono::duration<double>(Clock::now() - started_).count();
      return HttpResponse{
          200,
          "text/plain; version=0.0.4",
          metrics_.text(batcher_->stats(), installed_cpu_block_cache_stats(), uptime),
          {}};
    });
  }
  if (path == "/v1/predict")
    return only(request.method == "POST", "POST", [&] { return predict(request, deadline); });
  if (path == "/v1/cam")
    return only(request.method == "POST", "POST", [&] { return cam(request); });
  return json_error(
      404, "no such path: " + path + " (see GET /v1/info, POST /v1/predict, POST /v1/cam)");
}

HttpResponse Service::predict(const HttpRequest& request, Clock::time_point deadline) {
  int top = 5;
  if (const auto k = request.query.find("top_k"); k != request.query.end()) {
    try {
      std::size_t used = 0;
      top = std::stoi(k->second, &used);
      if (used != k->second.size() || top < 1) throw std::invalid_argument("");
    } catch (const std::exception&) {
      return json_error(400,
                        "top_k: expected a whole number of at least 1, got '" + k->second + "'");
    }
  }
  const std::optional<bool> tta = query_flag(request, "tta");
  if (!tta) {
    return json_error(400,
                      "tta: expected 1, true or v1 (fastai v1's 8 views), or 0 or false; got '" +
                          request.query.at("tta") + "'");
  }
  std::vector<ImagePart> parts;
  if (PartsResult r =
          request_images(request.header("content-type"), request.body, kMaxImagesPerRequest, parts);
      r.status) {
    return json_error(r.status, r.reason);
  }
  std::vector<std::future<Batcher::Result>> pending(parts.size());
  std::vector<nlohmann::json> answers(parts.size());
  bool refused = false;
  {
    // Announced: a batch short of --max-batch waits for these images while they are decoded.
    const Batcher::Coming coming = batcher_->expect(static_cast<std::int64_t>(parts.size()));
    for (std::size_t i = 0; i < parts.size() && !refused; ++i) {
      if (Clock::now() >= deadline) return too_late();  // queued images expire unrun
      answers[i] = predict_one(parts[i], *tta, deadline, &pending[i], &refused);
    }
  }
  if (refused) {
    HttpResponse r = json_error(503, "the server is busy (its queue is full); retry shortly");
    r.headers.push_back({"Retry-After", "1"});
    return r;
  }
  std::size_t failed = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!pending[i].valid()) {
      ++failed;
      continue;
    }
    if (pending[i].wait_until(deadline) != std::future_status::ready) return too_late();
    const Batcher::Result result = pending[i].get();
    if (result.error == std::optional<std::string>("expired")) return too_late();
    if (result.error) return json_error(500, "the model failed on this batch: " + *result.error);
    answers[i] = answer_of(parts[i], result, *tta, top);
  }
  if (failed == parts.size()) {
    return json_error(400, parts.size() == 1 ? answers[0]["error"].get<std::string>()
                                             : "no image of the request could be read");
  }
  return {200, "application/json", nlohmann::json{{"predictions", answers}}.dump() + "\n", {}};
}

// One image's answer, as `ltfit predict --json` (with --tta --tta-mode v1 when `tta`) prints it.
nlohmann::json Service::answer_of(const ImagePart& part, const Batcher::Result& result, bool tta,
                                  int top) const {
  ImagePrediction p;
  p.image = part.name;
  p.top = ranked(result.probabilities, loaded_.meta.classes, top);
  p.labels = labels_above(result.probabilities, loaded_.meta.classes, eval_.thresholds);
  p.thresholds = eval_.thresholds;
  if (tta) {
    p.tta_mode = "v1";
    const torch::Tensor plain = output_probabilities(result.logits.unsqueeze(0), eval_)[0];
    p.plain_top = ranked(plain, loaded_.meta.classes, top);
  }
  return prediction_json(p);
}

// The image of `part` as the model sees it (uint8 [S,S,3]), after the loader's checks; nullopt
// with `error` set when it cannot be read.
std::optional<torch::Tensor> Service::decode(const ImagePart& part, std::string* error) {
  ImageInput input(part.name);
  input.encoded = part.bytes;
  // A very large image decodes beside the model rather than hold it up for seconds (and every
  // queued image with it); the header is read again, with every check, by the loader.
  std::string header_error;
  const auto header = read_image_header(
      std::span(reinterpret_cast<const std::uint8_t*>(part.bytes->data()), part.bytes->size()),
      &header_error);
  std::shared_lock<ComputeGate> shared(gate_, std::defer_lock);
  if (!header || header->pixels() <= kGatedDecodePixels) shared.lock();
  try {
    const DataConfig& data = loaded_.config.data;
    return load_square_image(input, data.image_size,
                             CropFlip{.framing = {data.resize_method, data.pad_mode}}, error,
                             limits_, &budget_);
  } catch (const std::exception& e) {
    *error = e.what();
    return std::nullopt;
  }
}

// Decodes one image and queues it; an unreadable one gives its {"image", "error"} answer.
nlohmann::json Service::predict_one(const ImagePart& part, bool tta, Clock::time_point deadline,
                                    std::future<Batcher::Result>* pending, bool* refused) {
  std::string error;
  const std::optional<torch::Tensor> pixels = decode(part, &error);
  if (!pixels) {
    ImagePrediction p;
    p.image = part.name;
    p.error = "not a readable image: " + (error.empty() ? std::string("unknown error") : error);
    return prediction_json(p);
  }
  auto future = batcher_->submit(*pixels, tta, deadline);
  if (!future) {
    *refused = true;
    return {};
  }
  *pending = std::move(*future);
  return {};
}

}  // namespace ltfit
