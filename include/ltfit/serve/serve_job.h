// `ltfit serve`: a checkpoint's model behind HTTP (docs/serve.md). The API (JSON):
//   POST /v1/predict   one image as the raw body (an image content type or
//                      application/octet-stream), or several as multipart/form-data parts;
//                      ?top_k=N; ?tta=1 (fastai v1's 8 views, as predict --tta --tta-mode v1);
//                      answers {"predictions": [...]}, each as `ltfit predict --json` prints it
//                      (classes and probabilities; multi-label: labels and thresholds)
//   POST /v1/cam       one image's Grad-CAM overlay as a PNG at the eval size, for the predicted
//                      class or ?class=NAME (or its index); X-Ltfit-Class, -Label, -Probability
//   GET  /v1/info      the model's facts: arch, task, classes, thresholds, temperature, image
//                      size, eval transform, the checkpoint and its SHA-256, batching settings
//   GET  /healthz      200 while the process serves; /readyz 200 when it takes requests, 503
//                      once it is stopping
//   GET  /metrics      Prometheus text: requests by status, latency histogram, batch sizes,
//                      queue depth, images
//   GET  /             a page to try it: choose or drop images, see each one's top 5, toggle
//                      its Grad-CAM
// Requests from many clients are batched (batcher.h) up to --max-batch within --max-wait-ms; a
// full queue answers 503 with Retry-After, and so does an image still queued at its request's
// deadline (--request-timeout-s; it is then dropped unrun). Request bodies held at once are
// bounded (--inflight-mb), so memory is too (docs/serve.md). Images pass the loader's header
// checks, format list, pixel and decode budgets before any decoder, as in training; every bad
// request gets a 4xx with a JSON reason. Loopback by default; an optional bearer token guards /v1/
// and /metrics. SIGINT or SIGTERM stops accepting, answers what is in flight, and returns (exit 0).
#pragma once

#include <functional>
#include <string>

namespace ltfit {

struct ServeRequest {
  std::string checkpoint;
  std::string host = "127.0.0.1";
  int port = 8080;               // 0: any free port
  std::string device = "auto";   // auto | cpu | cuda[:N]
  std::string precision;         // "" the checkpoint's; fp32 | fp16 | bf16
  int max_batch = 16;            // images run together at most
  int max_wait_ms = 5;           // how long a batch waits to fill
  int queue = 256;               // images waiting at most; more: 503
  std::string token_file;        // a file holding the bearer token; "" none
  int body_limit_mb = 20;        // a request body's size at most
  int request_timeout_s = 30;    // a request's whole time at most (reading, waiting, answering)
  int inflight_mb = 256;         // request bodies held at once, all connections together
  int cache_mb = 512;            // freed large CPU blocks kept for reuse (util/cpu_block_cache.h)
  std::string weights = "auto";  // auto | ema | model, as predict
};

// Serves until a stop signal; calls `listening(port)` once it accepts connections. ConfigError
// (exit 2) for bad options, CheckpointError (exit 4) for the checkpoint, RuntimeError (exit 5)
// when the address cannot be bound.
void run_serve_job(const ServeRequest& request, const std::function<void(int)>& listening = {});

}  // namespace ltfit
