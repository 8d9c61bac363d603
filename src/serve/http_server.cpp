// A small HTTP/1.1 server: Beast's request parser over plain sockets (http_server.h).
#include "ltfit/serve/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "ltfit/util/error.h"
#include "ltfit/util/intra_op_threads.h"
#include "serve/request_parts.h"

namespace ltfit {
namespace {

namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

constexpr int kPollMs = 100;  // how often a waiting connection looks at the stop flag

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding and '+' as space, as a query string is written.
std::string url_decode(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
               hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

void split_target(const std::string& target, HttpRequest& request) {
  const std::size_t q = target.find('?');
  request.path = target.substr(0, q);
  if (q == std::string::npos) return;
  std::size_t start = q + 1;
  while (start <= target.size()) {
    std::size_t end = target.find('&', start);
    if (end == std::string::npos) end = target.size();
    const std::string pair = target.substr(start, end - start);
    const std::size_t eq = pair.find('=');
    if (!pair.empty()) {
      request.query[url_decode(pair.substr(0, eq))] =
          eq == std::string::npos ? "" : url_decode(pair.substr(eq + 1));
    }
    start = end + 1;
  }
}

// Writes all of `bytes`, waiting for the socket at most `timeout` in all; false when it could not.
bool send_all(int fd, const std::string& bytes, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

std::string serialize(const HttpResponse& response, bool keep_alive) {
  const auto reason = http::obsolete_reason(static_cast<http::status>(response.status));
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    std::string(reason.data(), reason.size()) + "\r\n";
  out += "Content-Type: " + response.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  out += "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\r\n";
  return out + response.body;
}

// The response to a request the parser refused.
HttpResponse parse_error_response(const boost::system::error_code& ec) {
  if (ec == http::error::body_limit) return json_error(413, "the request body is over the limit");
  if (ec == http::error::header_limit) return json_error(431, "the request's header is too large");
  return json_error(400, "malformed HTTP request: " + ec.message());
}

// How reading one request ended.
enum class ReadEnd {
  kRequest,   // a whole request is in the parser
  kBad,       // the parser refused it (`ec` says why)
  kTimedOut,  // started, not finished within the request deadline
  kBusy,      // its body would take the bodies held at once over HttpServerOptions::inflight_limit
  kClosed,    // the client went away, or stayed idle past the idle timeout or into a stop
};

// Reads one request from `fd` into `parser`: first the bytes left in `pending`, then from the
// socket, polling the stop flag while no request has begun. Once its header is read, `reserve`
// is asked for the body's bytes (its Content-Length, else the body limit); no means kBusy.
ReadEnd read_request(int fd, std::string& pending, http::request_parser<http::string_body>& parser,
                     const HttpServerOptions& options, const std::atomic<bool>& stopping,
                     const std::function<bool(std::uint64_t)>& reserve,
                     boost::system::error_code& ec) {
  bool started = !pending.empty(), reserved = false;
  auto deadline = Clock::now() + (started ? options.request_deadline : options.idle_timeout);
  char chunk[64 * 1024];
  while (true) {
    if (!pending.empty()) {
      const std::size_t used = parser.put(boost::asio::buffer(pending), ec);
      pending.erase(0, used);
      if (ec == http::error::need_more) ec = {};
      if (ec) return ReadEnd::kBad;
      if (!reserved && parser.is_header_done()) {
        reserved = true;
        const auto length = parser.content_length();
        if (!reserve(length ? *length : options.body_limit)) return ReadEnd::kBusy;
      }
      if (parser.is_done()) return ReadEnd::kRequest;
      if (used > 0 && !pending.empty()) continue;
    }
    if (stopping && !started) return ReadEnd::kClosed;  // idle at a stop: nothing in flight here
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return started ? ReadEnd::kTimedOut : ReadEnd::kClosed;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<long>(left.count(), kPollMs))) <= 0) continue;
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return ReadEnd::kClosed;
    if (!started) {
      started = true;
      deadline = Clock::now() + options.request_deadline;
    }
    pending.append(chunk, static_cast<std::size_t>(n));
  }
}

// What a request that ended before it was read whole is answered (none: the client left).
std::optional<HttpResponse> unread_response(ReadEnd end) {
  if (end == ReadEnd::kTimedOut) return json_error(408, "the request took too long");
  if (end != ReadEnd::kBusy) return std::nullopt;
  HttpResponse busy =
      json_error(503, "the server holds as many request bodies as it may; retry shortly");
  busy.headers.push_back({"Retry-After", "1"});
  return busy;
}

// A connection's share of the body bytes all connections may hold at once
// (HttpServerOptions::inflight_limit; 0: no bound), given back when its request is answered.
class BodyShare {
 public:
  BodyShare(std::atomic<std::uint64_t>& pool, std::uint64_t limit) : pool_(pool), limit_(limit) {}
  ~BodyShare() { give_back(); }
  BodyShare(const BodyShare&) = delete;
  BodyShare& operator=(const BodyShare&) = delete;

  // Takes `bytes` more from the pool; false, taking nothing, when that would pass the limit.
  bool take(std::uint64_t bytes) {
    if (limit_ == 0) return true;
    std::uint64_t held = pool_.load();
    do {
      if (held + bytes > limit_) return false;
    } while (!pool_.compare_exchange_weak(held, held + bytes));
    taken_ += bytes;
    return true;
  }
  void give_back() {
    pool_ -= taken_;
    taken_ = 0;
  }

 private:
  std::atomic<std::uint64_t>& pool_;
  std::uint64_t limit_;
  std::uint64_t taken_ = 0;
};

// The parsed message as the handler's request (the peer set by the caller).
void fill_request(http::request<http::string_body> message, HttpRequest& request) {
  request.method = std::string(message.method_string());
  split_target(std::string(message.target()), request);
  for (const auto& field : message) {
    request.headers[ascii_lower(std::string(field.name_string()))] = std::string(field.value());
  }
  request.body = std::move(message.body());
}

}  // namespace

std::string HttpRequest::header(const std::string& name) const {
  const auto found = headers.find(name);
  return found == headers.end() ? "" : found->second;
}

HttpResponse json_error(int status, const std::string& reason) {
  HttpResponse response;
  response.status = status;
  response.body = nlohmann::json{{"error", reason}, {"status", status}}.dump() + "\n";
  return response;
}

struct HttpServer::Impl {
  int listen_fd = -1;
};

HttpServer::HttpServer(HttpServerOptions options, Handler handler, AccessLog log)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      log_(std::move(log)),
      impl_(std::make_unique<Impl>()) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  if (const int rc = ::getaddrinfo(options_.host.c_str(), std::to_string(options_.port).c_str(),
                                   &hints, &found);
      rc != 0) {
    throw ConfigError("--host " + options_.host + ": " + ::gai_strerror(rc),
                      "give an address of this machine, such as 127.0.0.1 or 0.0.0.0");
  }
  std::string error;
  for (addrinfo* a = found; a != nullptr && impl_->listen_fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 512) == 0) {
      impl_->listen_fd = fd;
      sockaddr_storage bound{};
      socklen_t length = sizeof bound;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
      port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    } else {
      error = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (impl_->listen_fd < 0) {
    throw RuntimeError("cannot listen on " + where + ": " + error,
                       "choose another --port (or free this one), or another --host");
  }
}

HttpServer::~HttpServer() {
  if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
}

void HttpServer::run(const std::function<bool()>& stop_requested, std::chrono::milliseconds drain) {
  while (!stopping_) {
    if (stop_requested && stop_requested()) break;
    pollfd p{impl_->listen_fd, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    sockaddr_storage from{};
    socklen_t length = sizeof from;
    const int fd =
        ::accept4(impl_->listen_fd, reinterpret_cast<sockaddr*>(&from), &length, SOCK_CLOEXEC);
    if (fd < 0) continue;  // EMFILE and the like: the client retries; the server goes on
    char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
    ::getnameinfo(reinterpret_cast<sockaddr*>(&from), length, host, sizeof host, port, sizeof port,
                  NI_NUMERICHOST | NI_NUMERICSERV);
    std::string peer = std::string(host) + ":" + port;
    if (active_ >= options_.max_connections) {
      HttpResponse busy = json_error(503, "too many connections; retry shortly");
      busy.headers.push_back({"Retry-After", "1"});
      send_all(fd, serialize(busy, false), std::chrono::milliseconds(1000));
      ::close(fd);
      continue;
    }
    ++active_;
    std::thread([this, fd, peer = std::move(peer)]() mutable {
      set_intra_op_threads_here(1);  // the model's thread alone runs wide (intra_op_threads.h)
      serve_connection(fd, std::move(peer));
      ::close(fd);
      --active_;
    }).detach();
  }
  stopping_ = true;
  ::close(impl_->listen_fd);
  impl_->listen_fd = -1;
  const auto deadline = Clock::now() + drain;
  while (active_ > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void HttpServer::serve_connection(int fd, std::string peer) {
  std::string pending;  // bytes received and not parsed yet (a pipelined request's)
  BodyShare share(inflight_, options_.inflight_limit);
  const auto reserve = [&share](std::uint64_t bytes) { return share.take(bytes); };
  while (true) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(options_.header_limit);
    parser.body_limit(options_.body_limit);
    parser.eager(true);
    boost::system::error_code ec;
    const ReadEnd end = read_request(fd, pending, parser, options_, stopping_, reserve, ec);
    if (end != ReadEnd::kRequest && end != ReadEnd::kBad) {
      if (const auto answer = unread_response(end)) {
        send_all(fd, serialize(*answer, false), std::chrono::milliseconds(1000));
        if (log_) log_({"-", "-", peer, answer->status, answer->body.size(), 0.0});
      }
      return;
    }
    const auto start = Clock::now();
    HttpRequest request;
    request.peer = peer;
    HttpResponse response;
    bool keep_alive = false;
    if (end == ReadEnd::kBad) {
      response = parse_error_response(ec);
    } else {
      keep_alive = parser.get().keep_alive();
      fill_request(parser.release(), request);
      try {
        response = handler_(request);
      } catch (const std::exception& e) {
        response = json_error(500, std::string("internal error: ") + e.what());
      }
    }
    keep_alive = keep_alive && !stopping_;
    request.body.clear();
    request.body.shrink_to_fit();
    share.give_back();
    const bool sent = send_all(fd, serialize(response, keep_alive), options_.request_deadline);
    if (log_) {
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      log_({request.method.empty() ? "-" : request.method,
            request.path.empty() ? "-" : request.path, peer, response.status, response.body.size(),
            ms});
    }
    if (!sent || !keep_alive) return;
  }
}

}  // namespace ltfit
