// A loopback HTTP server for tests: python3's http.server serving one directory on 127.0.0.1 at
// a free port (threaded), plus routes that misbehave on purpose: a file trickled at a few bytes
// a second, and a response that never sends its body. The constructor returns once the server
// accepts connections (or throws after a bounded wait); the destructor kills and reaps it. Not
// thread-safe.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace ltfit::testing {

class HttpServer {
 public:
  explicit HttpServer(const std::filesystem::path& directory);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:PORT" (no trailing slash).
  std::string url() const;
  // `file` (relative to the directory) sent one byte at a time, `bytes_per_second` of them.
  std::string slow_url(const std::string& file, int bytes_per_second) const;
  // `bytes` zero bytes under any `file` name, without a Content-Length (a mirror streaming the
  // wrong thing); base_url for `file`: flood_url(bytes, "").
  std::string flood_url(long long bytes, const std::string& file) const;
  // Headers promising 1 MB for `file`, then silence for an hour (a stalled server).
  std::string hang_url(const std::string& file) const;
  // Kills and reaps the server now (idempotent); later requests fail to connect.
  void stop();

 private:
  int port_ = 0;
  pid_t pid_ = -1;
};

// Whether `python3` can be run (the server needs it).
bool python3_available();

}  // namespace ltfit::testing
