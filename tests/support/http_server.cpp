#include "support/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace ltfit::testing {
namespace {

constexpr auto kStartTimeout = std::chrono::seconds(20);

// http.server's file handler plus misbehaving routes (HttpServer::slow_url, hang_url, flood_url):
//   /slow/<bytes per second>/<file>  the file, one byte at a time at that rate
//   /hang/<file>                     headers promising 1 MB, then nothing
//   /flood/<bytes>/<file>            that many zero bytes, no Content-Length (ends at close)
constexpr const char* kServerScript = R"PY(
import functools, http.server, os, sys, time

class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        parts = self.path.split('/')
        if len(parts) >= 4 and parts[1] == 'slow':
            with open(os.path.join(self.directory, *parts[3:]), 'rb') as f:
                data = f.read()
            self.send_response(200)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(1.0 / float(parts[2]))
            return
        if len(parts) >= 3 and parts[1] == 'flood':
            total, sent, chunk = int(parts[2]), 0, bytes(65536)
            self.send_response(200)
            self.end_headers()
            try:
                while sent < total:
                    n = min(len(chunk), total - sent)
                    self.wfile.write(chunk[:n])
                    sent += n
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        if len(parts) >= 3 and parts[1] == 'hang':
            self.send_response(200)
            self.send_header('Content-Length', '1000000')
            self.end_headers()
            self.wfile.flush()
            time.sleep(3600)
            return
        super().do_GET()

server = http.server.ThreadingHTTPServer(
    ('127.0.0.1', int(sys.argv[1])), functools.partial(Handler, directory=sys.argv[2]))
server.daemon_threads = True
server.serve_forever()
)PY";
constexpr auto kStopTimeout = std::chrono::seconds(5);

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// Binds port 0 to let the kernel pick a free port, then releases it for the server. (Another
// process could take it in between; the start-up wait then fails loudly rather than hangs.)
int pick_free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr = loopback(0);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("cannot bind a loopback port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

bool accepts_connections(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr = loopback(port);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

HttpServer::HttpServer(const std::filesystem::path& directory) : port_(pick_free_port()) {
  const std::string port_text = std::to_string(port_);
  const std::string dir_text = directory.string();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int null_fd = open("/dev/null", O_RDWR);  // keep request logs out of test output
    if (null_fd >= 0) {
      dup2(null_fd, STDOUT_FILENO);
      dup2(null_fd, STDERR_FILENO);
    }
    execlp("python3", "python3", "-c", kServerScript, port_text.c_str(), dir_text.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (!accepts_connections(port_)) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("the python3 HTTP server exited before accepting connections");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      stop();
      throw std::runtime_error("the python3 HTTP server did not start within 20 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

HttpServer::~HttpServer() { stop(); }

std::string HttpServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::string HttpServer::slow_url(const std::string& file, int bytes_per_second) const {
  return url() + "/slow/" + std::to_string(bytes_per_second) + "/" + file;
}

std::string HttpServer::hang_url(const std::string& file) const { return url() + "/hang/" + file; }

std::string HttpServer::flood_url(long long bytes, const std::string& file) const {
  return url() + "/flood/" + std::to_string(bytes) + "/" + file;
}

void HttpServer::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + kStopTimeout;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
}

bool python3_available() {
  return std::system("python3 -c 'import http.server' >/dev/null 2>&1") == 0;
}

}  // namespace ltfit::testing
