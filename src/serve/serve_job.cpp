// `ltfit serve` (serve_job.h): the model, the batcher, the routes and the metrics.
#include "ltfit/serve/serve_job.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "ltfit/data/decode_budget.h"
#include "ltfit/data/image_header.h"
#include "ltfit/data/image_io.h"
#include "ltfit/data/loader.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/jobs/prediction_json.h"
#include "ltfit/serve/batcher.h"
#include "ltfit/serve/http_server.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/sha256.h"
#include "ltfit/util/signals.h"
#include "serve/request_parts.h"
#include "serve/serve_page.h"

namespace ltfit {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxImagesPerRequest = 64;
constexpr std::array<double, 12> kLatencyBuckets = {0.005, 0.01, 0.025, 0.05, 0.1,  0.25,
                                                    0.5,   1.0,  2.5,   5.0,  10.0, 30.0};

// Requests by status and their latency, for /metrics.
class Metrics {
 public:
  void record(int status, double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++by_status_[status];
    std::size_t b = 0;
    while (b < kLatencyBuckets.size() && seconds > kLatencyBuckets[b]) ++b;
    ++latency_[b];
    latency_sum_ += seconds;
    ++latency_count_;
  }
  std::string text(const Batcher::Stats& batches, double uptime) const;

 private:
  mutable std::mutex mutex_;
  std::map<int, std::int64_t> by_status_;
  std::array<std::int64_t, kLatencyBuckets.size() + 1> latency_{};
  double latency_sum_ = 0;
  std::int64_t latency_count_ = 0;
};

std::string Metrics::text(const Batcher::Stats& batches, double uptime) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out =
      "# HELP ltfit_requests_total HTTP requests answered, by status.\n"
      "# TYPE ltfit_requests_total counter\n";
  for (const auto& [status, n] : by_status_) {
    out += fmt::format("ltfit_requests_total{{status=\"{}\"}} {}\n", status, n);
  }
  out +=
      "# HELP ltfit_request_seconds Time from a request's parse to its answer.\n"
      "# TYPE ltfit_request_seconds histogram\n";
  std::int64_t cumulative = 0;
  for (std::size_t b = 0; b < kLatencyBuckets.size(); ++b) {
    cumulative += latency_[b];
    out += fmt::format("ltfit_request_seconds_bucket{{le=\"{}\"}} {}\n", kLatencyBuckets[b],
                       cumulative);
  }
  cumulative += latency_.back();
  out += fmt::format("ltfit_request_seconds_bucket{{le=\"+Inf\"}} {}\n", cumulative);
  out += fmt::format("ltfit_request_seconds_sum {}\nltfit_request_seconds_count {}\n", latency_sum_,
                     latency_count_);
  out +=
      "# HELP ltfit_batch_size Images run through the model together.\n"
      "# TYPE ltfit_batch_size histogram\n";
  std::int64_t batches_cumulative = 0, images = 0;
  for (std::size_t size = 1; size < batches.batch_sizes.size(); ++size) {
    batches_cumulative += batches.batch_sizes[size];
    images += batches.batch_sizes[size] * static_cast<std::int64_t>(size);
    out += fmt::format("ltfit_batch_size_bucket{{le=\"{}\"}} {}\n", size, batches_cumulative);
  }
  out += fmt::format("ltfit_batch_size_bucket{{le=\"+Inf\"}} {}\n", batches_cumulative);
  out += fmt::format("ltfit_batch_size_sum {}\nltfit_batch_size_count {}\n", images,
                     batches_cumulative);
  out += fmt::format(
      "# HELP ltfit_queue_depth Images waiting for the model.\n# TYPE ltfit_queue_depth gauge\n"
      "ltfit_queue_depth {}\n"
      "# HELP ltfit_images_total Images run through the model.\n"
      "# TYPE ltfit_images_total counter\nltfit_images_total {}\n"
      "# HELP ltfit_images_per_second Images run through the model per second since the start.\n"
      "# TYPE ltfit_images_per_second gauge\nltfit_images_per_second {:.3f}\n"
      "# HELP ltfit_queue_refused_total Images refused because the queue was full (503).\n"
      "# TYPE ltfit_queue_refused_total counter\nltfit_queue_refused_total {}\n",
      batches.queued, batches.images, uptime > 0 ? batches.images / uptime : 0.0, batches.refused);
  return out;
}

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

class Service {
 public:
  explicit Service(const ServeRequest& request);
  HttpResponse handle(const HttpRequest& request);
  std::atomic<bool> stopping{false};  // set by the accept loop, read by request threads

 private:
  HttpResponse route(const HttpRequest& request);
  HttpResponse predict(const HttpRequest& request);
  nlohmann::json predict_one(const ImagePart& part, std::future<Batcher::Result>* pending,
                             bool* refused);
  std::pair<torch::Tensor, torch::Tensor> run_batch(const torch::Tensor& images);

  ServeRequest request_;
  LoadedModel loaded_;
  EvalOptions eval_;
  ImageLimits limits_;
  DecodeBudget budget_;
  std::string token_;
  nlohmann::json info_;
  Metrics metrics_;
  Clock::time_point started_ = Clock::now();
  std::unique_ptr<Batcher> batcher_;
};

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
  if (!request.token_file.empty()) token_ = read_token(request.token_file);
  const torch::Device device = resolve_device(request.device, "--device");
  loaded_ = load_model_for_eval(request.checkpoint, device, parse_weight_choice(request.weights));
  eval_ = eval_options_for(loaded_, device, request.precision);
  limits_ = image_limits(loaded_.config.data);
  const int size = loaded_.config.data.image_size;
  info_ = {{"arch", loaded_.config.model.arch},
           {"head", head_kind_name(loaded_.config.model.head)},
           {"task", eval_.thresholds.empty() ? "single_label" : "multi_label"},
           {"classes", loaded_.meta.classes},
           {"thresholds", eval_.thresholds},
           {"temperature", eval_.temperature},
           {"image_size", size},
           {"eval_transform", {{"resize", size}, {"crop", size}, {"interpolation", "area"}}},
           {"checkpoint", std::filesystem::path(request.checkpoint).filename().string()},
           {"checkpoint_sha256", sha256_file(request.checkpoint)},
           {"weights", loaded_.ema ? "ema" : "model"},
           {"device", describe_device(device)},
           {"max_batch", request.max_batch},
           {"max_wait_ms", request.max_wait_ms}};
  batcher_ = std::make_unique<Batcher>(
      [this](const torch::Tensor& images) { return run_batch(images); }, request.max_batch,
      std::chrono::milliseconds(request.max_wait_ms), static_cast<std::size_t>(request.queue));
}

std::pair<torch::Tensor, torch::Tensor> Service::run_batch(const torch::Tensor& images) {
  const torch::Tensor pixels =
      normalize_images(images, eval_.device, false, loaded_.model->input_normalization());
  const torch::Tensor logits = forward_logits(loaded_.model, pixels, eval_).to(torch::kCPU);
  return {output_probabilities(logits, eval_), logits};
}

HttpResponse Service::handle(const HttpRequest& request) {
  const auto start = Clock::now();
  HttpResponse response = route(request);
  metrics_.record(response.status, std::chrono::duration<double>(Clock::now() - start).count());
  return response;
}

HttpResponse Service::route(const HttpRequest& request) {
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
          200, "text/plain; version=0.0.4", metrics_.text(batcher_->stats(), uptime), {}};
    });
  }
  if (path == "/v1/predict")
    return only(request.method == "POST", "POST", [&] { return predict(request); });
  return json_error(404, "no such path: " + path + " (see GET /v1/info, POST /v1/predict)");
}

HttpResponse Service::predict(const HttpRequest& request) {
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
  if (request.query.count("tta") != 0) {
    return json_error(400, "tta: test-time augmentation is not served yet; leave it out");
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
  for (std::size_t i = 0; i < parts.size(); ++i)
    answers[i] = predict_one(parts[i], &pending[i], &refused);
  if (refused) {
    HttpResponse r = json_error(503, "the server is busy (its queue is full); retry shortly");
    r.headers.push_back({"Retry-After", "1"});
    return r;
  }
  const auto deadline = Clock::now() + std::chrono::seconds(request_.request_timeout_s);
  std::size_t failed = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!pending[i].valid()) {
      ++failed;
      continue;
    }
    if (pending[i].wait_until(deadline) != std::future_status::ready) {
      return json_error(503, "the model did not answer within --request-timeout-s");
    }
    const Batcher::Result result = pending[i].get();
    if (result.error) return json_error(500, "the model failed on this batch: " + *result.error);
    ImagePrediction p;
    p.image = parts[i].name;
    p.top = ranked(result.probabilities, loaded_.meta.classes, top);
    p.labels = labels_above(result.probabilities, loaded_.meta.classes, eval_.thresholds);
    p.thresholds = eval_.thresholds;
    answers[i] = prediction_json(p);
  }
  if (failed == parts.size()) {
    return json_error(400, parts.size() == 1 ? answers[0]["error"].get<std::string>()
                                             : "no image of the request could be read");
  }
  return {200, "application/json", nlohmann::json{{"predictions", answers}}.dump() + "\n", {}};
}

// Decodes one image and queues it; an unreadable one gives its {"image", "error"} answer.
nlohmann::json Service::predict_one(const ImagePart& part, std::future<Batcher::Result>* pending,
                                    bool* refused) {
  ImageInput input(part.name);
  input.encoded = part.bytes;
  std::string error;
  std::optional<torch::Tensor> pixels;
  try {
    pixels =
        load_square_image(input, loaded_.config.data.image_size, {}, &error, limits_, &budget_);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!pixels) {
    ImagePrediction p;
    p.image = part.name;
    p.error = "not a readable image: " + (error.empty() ? std::string("unknown error") : error);
    return prediction_json(p);
  }
  auto future = batcher_->submit(*pixels);
  if (!future) {
    *refused = true;
    return {};
  }
  *pending = std::move(*future);
  return {};
}

}  // namespace

void run_serve_job(const ServeRequest& request, const std::function<void(int)>& listening) {
  Service service(request);
  HttpServerOptions options;
  options.host = request.host;
  options.port = request.port;
  options.body_limit = static_cast<std::uint64_t>(request.body_limit_mb) << 20;
  options.request_deadline = std::chrono::seconds(request.request_timeout_s);
  if (request.host != "127.0.0.1" && request.host != "localhost" && request.host != "::1") {
    spdlog::warn("--host {}: the server answers every machine that can reach this address{}",
                 request.host,
                 request.token_file.empty() ? ", and without a token (--token-file)" : "");
  }
  StopSignals signals;  // SIGINT/SIGTERM: stop accepting, answer what is in flight, exit 0
  HttpServer server(
      options, [&service](const HttpRequest& r) { return service.handle(r); },
      [](const HttpAccess& a) {
        spdlog::info("{} {} {} {} bytes {:.1f} ms {}", a.method, a.path, a.status, a.bytes,
                     a.milliseconds, a.peer);
      });
  spdlog::info("serving {} on http://{}:{}/ (POST /v1/predict, GET /v1/info, /metrics)",
               request.checkpoint, request.host, server.port());
  if (listening) listening(server.port());
  server.run([&service] {
    service.stopping = StopSignals::requested();
    return service.stopping.load();
  });
  spdlog::info("stopped: every request in flight was answered");
}

}  // namespace ltfit
