// `ltfit serve`: a checkpoint's model behind HTTP, with a page to try it (serve/serve_job.h).
#include <CLI/CLI.hpp>

#include "commands.h"
#include "ltfit/serve/serve_job.h"

namespace ltfit::cli {

void add_serve_command(CLI::App& app, int* exit_code) {
  auto request = std::make_shared<ServeRequest>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "serve a checkpoint's model over HTTP: POST /v1/predict, GET /v1/info, /healthz, /readyz, "
      "/metrics, and a page at / (docs/serve.md)");
  cmd->add_option("--checkpoint", request->checkpoint, "checkpoint file (.ckpt)")->required();
  cmd->add_option("--host", request->host,
                  "address to listen on (default 127.0.0.1; 0.0.0.0: every interface, warned)");
  cmd->add_option("--port", request->port, "port (default 8080; 0: any free one, logged)");
  cmd->add_option("--device", request->device, "auto (default), cpu, cuda or cuda:N");
  cmd->add_option("--precision", request->precision,
                  "fp32, fp16 or bf16 (default: the checkpoint's train.precision)");
  cmd->add_option("--weights", request->weights, "auto (default), ema or model, as predict");
  cmd->add_option("--max-batch", request->max_batch,
                  "images run through the model together at most (default 16)");
  cmd->add_option("--max-wait-ms", request->max_wait_ms,
                  "how long a batch waits for more images (default 5)");
  cmd->add_option("--queue", request->queue,
                  "images waiting at most; beyond, 503 with Retry-After (default 256)");
  cmd->add_option("--token-file", request->token_file,
                  "a file whose first line is the bearer token /v1/ and /metrics then require");
  cmd->add_option("--body-limit-mb", request->body_limit_mb,
                  "a request body's size at most, in MiB (default 20; beyond: 413)");
  cmd->add_option("--request-timeout-s", request->request_timeout_s,
                  "a request's time at most, reading it included (default 30; beyond: 408)");
  cmd->add_option("--inflight-mb", request->inflight_mb,
                  "request bodies held at once, all clients together, in MiB (default 256; "
                  "beyond: 503 with Retry-After)");
  cmd->add_option("--cache-mb", request->cache_mb,
                  "freed model memory kept for the next batch, in MiB (default 512; 0: none)");
  cmd->callback([request, exit_code] {
    run_serve_job(*request);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
