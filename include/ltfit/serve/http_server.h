// A small HTTP/1.1 server on Boost.Beast (header-only, from the Boost ltfit already builds with):
// one thread per connection up to a cap, keep-alive, and the limits a server facing strangers
// needs: a header and a body limit (431, 413), a bound on the request bodies held at once across
// connections (503 with Retry-After beyond it), a whole-request deadline that a client sending
// one byte a second cannot stretch (408), a malformed request answered 400, never a crash.
// Handlers see a parsed Request and return a Response; an exception from one becomes a 500 with
// a JSON reason. stop() (or the stop predicate turning true) stops accepting; run() then waits
// for the requests in flight to be answered and returns. Thread-safe: the handler is called from
// many threads at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ltfit {

struct HttpRequest {
  std::string method;                        // "GET", "POST", ...
  std::string path;                          // the target before '?', percent-decoding not applied
  std::map<std::string, std::string> query;  // the target's query parameters, decoded
  std::map<std::string, std::string> headers;  // names lower-cased; a repeated one keeps its last
  std::string body;
  std::string peer;                                   // the client's address:port
  std::string header(const std::string& name) const;  // "" when absent (name lower-case)
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones (Retry-After, ...)
};

// A JSON error body {"error": reason, "status": status}.
HttpResponse json_error(int status, const std::string& reason);

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                                     // 0: any free port (port() tells which)
  std::uint64_t body_limit = 20ull << 20;              // bytes of a request body
  std::uint32_t header_limit = 16 * 1024;              // bytes of a request's header
  std::chrono::milliseconds request_deadline{30'000};  // from a request's first byte to its end
  std::chrono::milliseconds idle_timeout{30'000};      // keep-alive wait for the next request
  int max_connections = 256;                           // more wait in the kernel's backlog
  // Bytes of request bodies held at once, all connections together (each request reserves its
  // Content-Length, or body_limit when it has none, once its header is read); 0: no bound.
  std::uint64_t inflight_limit = 256ull << 20;
};

// One line per request answered (method, path, status, bytes, milliseconds, peer), for the
// access log: every answer, those to requests refused before they were read whole (400, 408,
// 413, 431, 503; method and path "-" when unknown) included.
struct HttpAccess {
  std::string method, path, peer;
  int status = 0;
  std::size_t bytes = 0;
  double milliseconds = 0;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  using AccessLog = std::function<void(const HttpAccess&)>;

  // Binds and listens; RuntimeError (exit 5) naming the address when it cannot.
  HttpServer(HttpServerOptions options, Handler handler, AccessLog log = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }  // the port it listens on
  // Serves until stop() or `stop_requested()` turns true (polled every 100 ms); then stops
  // accepting, lets the connections finish the requests they are in (each answered with
  // "Connection: close") and returns once they have, or after `drain` at the most.
  void run(const std::function<bool()>& stop_requested,
           std::chrono::milliseconds drain = std::chrono::milliseconds(30'000));
  void stop() { stopping_ = true; }
  bool stopping() const { return stopping_; }
  int connections() const { return active_; }

 private:
  struct Impl;
  void serve_connection(int fd, std::string peer);

  HttpServerOptions options_;
  Handler handler_;
  AccessLog log_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> active_{0};
  std::atomic<std::uint64_t> inflight_{0};  // body bytes reserved by the connections
};

}  // namespace ltfit
