// libcurl download with a progress display; see download.h.
#include "ltfit/util/download.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>

#include "ltfit/util/error.h"
#include "ltfit/util/format.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

// curl_global_init is not thread-safe; do it once.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Draws the bar (tty) or logs a line every ~10 % / 10 s (not a tty).
class DownloadProgress {
 public:
  DownloadProgress(std::string name, bool enabled)
      : name_(std::move(name)),
        enabled_(enabled),
        tty_(isatty(fileno(stderr)) != 0),
        start_(Clock::now()),
        last_(start_) {}

  void update(curl_off_t total, curl_off_t done, bool final) {
    if (!enabled_) return;
    const auto now = Clock::now();
    const double since_last = std::chrono::duration<double>(now - last_).count();
    if (tty_) {
      if (!final && since_last < 0.1) return;
    } else {
      const int decile = total > 0 ? static_cast<int>(10 * done / total) : 0;
      const bool step = total > 0 ? decile > last_decile_ : since_last >= 10.0;
      if (final ? done == logged_done_ : !step) return;
      last_decile_ = decile;
      logged_done_ = done;
    }
    last_ = now;
    const std::string line = describe(total, done, now);
    if (tty_) {
      std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), final ? "\n" : "");
      std::fflush(stderr);
    } else {
      spdlog::info("{}", line);
    }
  }

 private:
  std::string describe(curl_off_t total, curl_off_t done, Clock::time_point now) const {
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double mb = static_cast<double>(done) / 1e6;
    const double rate = elapsed > 0 ? mb / elapsed : 0.0;
    if (total <= 0) return fmt::format("{} {:.1f} MB {:.1f} MB/s", name_, mb, rate);
    const double fraction = static_cast<double>(done) / static_cast<double>(total);
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
    const double eta = rate > 0 ? (static_cast<double>(total) / 1e6 - mb) / rate : 0.0;
    return fmt::format("{} [{}] {:3.0f}% {:.1f}/{:.1f} MB {:.1f} MB/s ETA {}", name_, bar,
                       100.0 * fraction, mb, static_cast<double>(total) / 1e6, rate,
                       format_mm_ss(eta));
  }

  std::string name_;
  bool enabled_;
  bool tty_;
  int last_decile_ = 0;
  curl_off_t logged_done_ = -1;  // bytes in the last logged line (not a tty)
  Clock::time_point start_;
  Clock::time_point last_;
};

struct Transfer {
  std::FILE* file = nullptr;
  bool write_failed = false;
  DownloadProgress* progress = nullptr;
  curl_off_t total = 0;
  curl_off_t done = 0;
};

size_t write_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t written = std::fwrite(data, size, count, transfer->file);
  if (written != count) transfer->write_failed = true;
  return written * size;
}

int on_progress(void* user, curl_off_t total, curl_off_t done, curl_off_t, curl_off_t) {
  auto* transfer = static_cast<Transfer*>(user);
  transfer->total = total;
  transfer->done = done;
  transfer->progress->update(total, done, /*final=*/false);
  return 0;
}

// Runs the transfer into `file`; returns an empty string on success, else the reason.
std::string perform(const std::string& url, std::FILE* file, const DownloadOptions& options,
                    DownloadProgress& progress) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return "curl_easy_init failed";
  char error_buffer[CURL_ERROR_SIZE] = {};
  Transfer transfer{file, false, &progress};
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, options.stall_timeout_s);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "ltfit/" LTFIT_VERSION);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  const CURLcode code = curl_easy_perform(h);
  if (code == CURLE_OK) {
    progress.update(transfer.total, transfer.done, /*final=*/true);
    return "";
  }
  if (code == CURLE_HTTP_RETURNED_ERROR) {
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return "HTTP " + std::to_string(status);
  }
  if (transfer.write_failed) return "cannot write the downloaded data (disk full?)";
  return error_buffer[0] != '\0' ? std::string(error_buffer) : curl_easy_strerror(code);
}

}  // namespace

void download_file(const std::string& url, const std::string& dest_path,
                   const DownloadOptions& options) {
  init_curl_once();
  const fs::path dest(dest_path);
  const fs::path partial = dest_path + ".partial";
  std::error_code ec;
  if (dest.has_parent_path()) fs::create_directories(dest.parent_path(), ec);
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(partial.c_str(), "wb"));
  if (!file) {
    throw RuntimeError("cannot download " + url + ": cannot create '" + partial.string() + "'");
  }
  DownloadProgress progress(dest.filename().string(), options.show_progress);
  std::string failure = perform(url, file.get(), options, progress);
  if (std::fclose(file.release()) != 0 && failure.empty()) {
    failure = "cannot write '" + partial.string() + "'";
  }
  if (!failure.empty()) {
    fs::remove(partial, ec);
    throw RuntimeError("download of " + url + " failed: " + failure);
  }
  try {
    if (options.verify) options.verify(partial.string());
  } catch (...) {
    fs::remove(partial, ec);
    throw;
  }
  fs::rename(partial, dest, ec);
  if (ec) {
    const std::string reason = ec.message();
    fs::remove(partial, ec);
    throw RuntimeError("cannot move the download of " + url + " to '" + dest_path + "': " + reason);
  }
}

}  // namespace ltfit
