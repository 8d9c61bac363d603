// A loopback HTTP server for tests: `python3 -m http.server` serving one directory on
// 127.0.0.1 at a free port. The constructor returns once the server accepts connections (or
// throws after a bounded wait); the destructor kills and reaps it. Not thread-safe.
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
  // Kills and reaps the server now (idempotent); later requests fail to connect.
  void stop();

 private:
  int port_ = 0;
  pid_t pid_ = -1;
};

// Whether `python3` can be run (the server needs it).
bool python3_available();

}  // namespace ltfit::testing
