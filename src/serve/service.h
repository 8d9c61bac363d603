// The service behind `ltfit serve` (serve_job.h): the model, its batcher, the routes and the
// metrics. Internal to src/serve: service.cpp (routes, /v1/predict), service_cam.cpp (/v1/cam).
#pragma once

#include <torch/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ltfit/data/decode_budget.h"
#include "ltfit/data/image_header.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/serve/batcher.h"
#include "ltfit/serve/http_server.h"
#include "ltfit/serve/serve_job.h"
#include "serve/compute_gate.h"
#include "serve/request_parts.h"
#include "serve/serve_metrics.h"

namespace ltfit {

// Built from the command's options (checked first: ConfigError names the flag); handle() answers
// one request, from any thread. Thread-safe.
class Service {
 public:
  using Clock = std::chrono::steady_clock;
  // Images up to this many pixels decode in turn with the model (ComputeGate); larger ones, whose
  // decode takes seconds (a 9000x9000 PNG), beside it.
  static constexpr std::uint64_t kGatedDecodePixels = 16'000'000;

  explicit Service(const ServeRequest& request);
  HttpResponse handle(const HttpRequest& request);
  // Every answer the server sent, counted for /metrics (refusals before a request was read too).
  void record(const HttpAccess& access) {
    metrics_.record(access.status, access.milliseconds / 1e3);
  }
  std::atomic<bool> stopping{false};  // set by the accept loop, read by request threads

 private:
  HttpResponse route(const HttpRequest& request, Clock::time_point deadline);
  HttpResponse predict(const HttpRequest& request, Clock::time_point deadline);
  HttpResponse cam(const HttpRequest& request);
  HttpResponse cam_of(const HttpRequest& request, const torch::Tensor& rgb);  // gate held
  std::optional<torch::Tensor> decode(const ImagePart& part, std::string* error);
  nlohmann::json predict_one(const ImagePart& part, bool tta, Clock::time_point deadline,
                             std::future<Batcher::Result>* pending, bool* refused);
  nlohmann::json answer_of(const ImagePart& part, const Batcher::Result& result, bool tta,
                           int top) const;
  std::pair<torch::Tensor, torch::Tensor> run_batch(const torch::Tensor& images,
                                                    const std::vector<char>& tta);

  ServeRequest request_;
  LoadedModel loaded_;
  EvalOptions eval_;
  EvalConfig tta_;  // v1's settings: the checkpoint's scale, its beta when its mode is v1
  // Decodes share the cores; the model (the batcher's thread, /v1/cam) takes them alone.
  ComputeGate gate_;
  ImageLimits limits_;
  DecodeBudget budget_;
  std::string token_;
  nlohmann::json info_;
  ServeMetrics metrics_;
  Clock::time_point started_ = Clock::now();
  std::unique_ptr<Batcher> batcher_;
};

}  // namespace ltfit
