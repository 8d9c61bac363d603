// `ltfit serve` (serve_job.h): the service (service.h) behind the HTTP server, until a stop.
#include "ltfit/serve/serve_job.h"

#include <spdlog/spdlog.h>

#include <malloc.h>

#include "ltfit/serve/http_server.h"
#include "ltfit/util/cpu_block_cache.h"
#include "ltfit/util/error.h"
#include "ltfit/util/intra_op_threads.h"
#include "ltfit/util/signals.h"
#include "serve/service.h"

namespace ltfit {
namespace {

// glibc gives the memory a thread other than the main one frees back to the kernel eagerly (its
// arenas trim their top), so each forward on the batcher's thread would fault its small
// activations' pages in anew (9 ms of a 41 ms ResNet-18 forward at batch 1 on two cores);
// keeping up to 512 MiB freed and 256 MiB of slack per arena: 33 ms, with RSS near its peak,
// which the memory bound counts anyway (docs/serve.md). The large ones (a batch's activations)
// LibTorch allocates from the block cache, which keeps them for the next batch (--cache-mb).
void keep_freed_memory(std::size_t cache_bytes) {
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_TOP_PAD, 256 << 20);
  if (cache_bytes > 0) install_cpu_block_cache(cache_bytes);
}

}  // namespace

void run_serve_job(const ServeRequest& request, const std::function<void(int)>& listening) {
  if (request.cache_mb < 0 || request.cache_mb > (1 << 20)) {
    throw ConfigError("--cache-mb: expected 0 to 1048576, got " + std::to_string(request.cache_mb));
  }
  keep_freed_memory(static_cast<std::size_t>(request.cache_mb) << 20);
  // The batcher's thread runs the model as wide as the cores allow; this one only loads it and
  // waits, and a team of its own would make the model's slower (intra_op_threads.h).
  const IntraOpThreadsHere narrow(1);
  Service service(request);
  HttpServerOptions options;
  options.host = request.host;
  options.port = request.port;
  options.body_limit = static_cast<std::uint64_t>(request.body_limit_mb) << 20;
  options.request_deadline = std::chrono::seconds(request.request_timeout_s);
  options.inflight_limit = static_cast<std::uint64_t>(request.inflight_mb) << 20;
  if (request.host != "127.0.0.1" && request.host != "localhost" && request.host != "::1") {
    spdlog::warn("--host {}: the server answers every machine that can reach this address{}",
                 request.host,
                 request.token_file.empty() ? ", and without a token (--token-file)" : "");
  }
  StopSignals signals;  // SIGINT/SIGTERM: stop accepting, answer what is in flight, exit 0
  HttpServer server(
      options, [&service](const HttpRequest& r) { return service.handle(r); },
      [&service](const HttpAccess& a) {
        service.record(a);
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
