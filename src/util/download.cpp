// libcurl download with a progress display; see download.h.
#include "ltfit/util/download.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>

#include "ltfit/util/error.h"
#include "ltfit/util/format.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/temp_files.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
constexpr int kPartialNameAttempts = 16;
constexpr std::size_t kPartialStemBytes = 200;  // room for ".partial-<16 hex>" within NAME_MAX

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
  std::int64_t max_bytes = 0;  // DownloadOptions::max_bytes
  curl_off_t total = 0;
  curl_off_t done = 0;
  std::int64_t received = 0;  // body bytes written so far
  bool stopped = false;       // a stop signal aborted the transfer
  bool too_large = false;     // the body passed max_bytes
};

size_t write_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::int64_t bytes = static_cast<std::int64_t>(size * count);
  if (transfer->max_bytes > 0 && transfer->received + bytes > transfer->max_bytes) {
    transfer->too_large = true;
    return 0;  // aborts the transfer before a byte past the bound reaches the disk
  }
  const size_t written = std::fwrite(data, size, count, transfer->file);
  if (written != count) transfer->write_failed = true;
  transfer->received += static_cast<std::int64_t>(written * size);
  return written * size;
}

int on_progress(void* user, curl_off_t total, curl_off_t done, curl_off_t, curl_off_t) {
  auto* transfer = static_cast<Transfer*>(user);
  transfer->total = total;
  transfer->done = done;
  transfer->progress->update(total, done, /*final=*/false);
  // libcurl calls this at least once a second even when no byte arrives: a stop signal ends
  // even a stalled transfer within about a second (non-zero aborts it).
  transfer->stopped = StopSignals::requested();
  return transfer->stopped ? 1 : 0;
}

// The result of one transfer: empty `failure` on success.
struct Outcome {
  std::string failure;
  bool stopped = false;
};

// Runs the transfer into `file`.
Outcome perform(const std::string& url, std::FILE* file, const DownloadOptions& options,
                DownloadProgress& progress) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return {"curl_easy_init failed"};
  char error_buffer[CURL_ERROR_SIZE] = {};
  Transfer transfer{file, false, &progress, options.max_bytes};
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, options.low_speed_bytes_per_s);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, options.low_speed_time_s);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "ltfit/" LTFIT_VERSION);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  if (options.max_bytes > 0) {  // a Content-Length above it is refused before the body
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options.max_bytes));
  }
  const CURLcode code = curl_easy_perform(h);
  if (code == CURLE_OK) {
    progress.update(transfer.total, transfer.done, /*final=*/true);
    return {};
  }
  if (transfer.stopped) return {"stopped by a signal", true};
  if (transfer.too_large || code == CURLE_FILESIZE_EXCEEDED) {
    return {"the server sent more than " + std::to_string(options.max_bytes) +
            " bytes, the most this file may have (a different file?); the transfer was stopped "
            "there"};
  }
  if (code == CURLE_HTTP_RETURNED_ERROR) {
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return {"HTTP " + std::to_string(status)};
  }
  if (transfer.write_failed) return {"cannot write the downloaded data (disk full?)"};
  return {error_buffer[0] != '\0' ? std::string(error_buffer) : curl_easy_strerror(code)};
}

// `*value` from the environment variable `name` when set to a whole number >= 0 (else unchanged,
// with a warning when set to something else).
void override_from_env(const char* name, long* value) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return;
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || parsed < 0) {
    spdlog::warn("ignoring {}='{}': expected a whole number >= 0", name, text);
    return;
  }
  *value = parsed;
}

DownloadOptions with_env_overrides(DownloadOptions options) {
  override_from_env("LTFIT_DOWNLOAD_CONNECT_TIMEOUT", &options.connect_timeout_s);
  override_from_env("LTFIT_DOWNLOAD_LOW_SPEED_LIMIT", &options.low_speed_bytes_per_s);
  override_from_env("LTFIT_DOWNLOAD_LOW_SPEED_TIME", &options.low_speed_time_s);
  return options;
}

// The download's temporary file beside `dest`: a fresh name, created exclusively, never through
// a symlink; removed on destruction unless renamed into place by commit().
class PartialFile {
 public:
  explicit PartialFile(const fs::path& dest) {
    std::random_device random;  // getrandom(2): the name cannot be guessed in advance
    const std::string stem = dest.filename().string().substr(0, kPartialStemBytes);
    int error = 0;
    for (int attempt = 0; attempt < kPartialNameAttempts && file_ == nullptr; ++attempt) {
      const std::uint64_t token = (std::uint64_t{random()} << 32) | random();
      path_ = dest.parent_path() / fmt::format("{}.partial-{:016x}", stem, token);
      const int fd =
          ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      error = errno;
      if (fd < 0 && error == EEXIST) continue;
      if (fd < 0) break;
      ::flock(fd, LOCK_EX | LOCK_NB);  // held while we write it: not stale (temp_files.h)
      live_slot_ = register_live_temp_file(path_.string());
      file_ = ::fdopen(fd, "wb");
      if (file_ == nullptr) {
        error = errno;
        ::close(fd);
        remove();
        unregister_live_temp_file(live_slot_);
        break;
      }
    }
    if (file_ == nullptr) {
      throw RuntimeError("cannot create a temporary file in '" + dest.parent_path().string() +
                             "' for the download: " + std::strerror(error),
                         "check that folder's permissions and free space");
    }
  }
  ~PartialFile() {
    if (file_ != nullptr) std::fclose(file_);
    if (!committed_) remove();
    unregister_live_temp_file(live_slot_);
  }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  std::FILE* stream() const { return file_; }
  const fs::path& path() const { return path_; }

  // Flushes and closes the file; false if the data could not be written.
  bool close() {
    const bool ok = std::fclose(file_) == 0;
    file_ = nullptr;
    return ok;
  }
  // Renames the closed file to `dest` (replacing it; a symlink there is replaced, not
  // followed); throws RuntimeError on failure (the file is then removed).
  void commit(const fs::path& dest, const std::string& url) {
    std::error_code ec;
    fs::rename(path_, dest, ec);
    if (ec) {
      throw RuntimeError("cannot move the download of " + url + " to '" + dest.string() +
                         "': " + ec.message());
    }
    committed_ = true;
  }

 private:
  void remove() {
    std::error_code ec;
    fs::remove(path_, ec);
  }

  fs::path path_;
  std::FILE* file_ = nullptr;
  int live_slot_ = -1;  // register_live_temp_file's slot for path_
  bool committed_ = false;
};

}  // namespace

void download_file(const std::string& url, const std::string& dest_path,
                   const DownloadOptions& requested) {
  init_curl_once();
  const DownloadOptions options = with_env_overrides(requested);
  StopSignals stop_signals;  // SIGINT/SIGTERM/SIGHUP stop the transfer (nests in the command's own)
  const fs::path dest(dest_path);
  std::error_code ec;
  if (dest.has_parent_path()) fs::create_directories(dest.parent_path(), ec);
  PartialFile partial(dest);
  DownloadProgress progress(dest.filename().string(), options.show_progress);
  Outcome outcome = perform(url, partial.stream(), options, progress);
  if (!partial.close() && outcome.failure.empty()) {
    outcome.failure = "cannot write '" + partial.path().string() + "'";
  }
  if (outcome.stopped) {
    throw InterruptedError("download of " + url +
                               " stopped by a signal; the partial file was "
                               "removed",
                           "run the command again to download it");
  }
  if (!outcome.failure.empty()) {
    std::string hint;
    if (outcome.failure.find("too slow") != std::string::npos) {
      hint = "the server sent less than " + std::to_string(options.low_speed_bytes_per_s) +
             " bytes/s for " + std::to_string(options.low_speed_time_s) +
             " s; retry, or raise LTFIT_DOWNLOAD_LOW_SPEED_TIME";
    }
    throw RuntimeError("download of " + url + " failed: " + outcome.failure, hint);
  }
  if (options.verify) options.verify(partial.path().string());  // throws: the file is removed
  partial.commit(dest, url);
  if (StopSignals::requested()) {  // it arrived as the last bytes did: the file is kept
    throw InterruptedError("stopped by a signal (the download of " + url + " had completed)");
  }
}

}  // namespace ltfit
