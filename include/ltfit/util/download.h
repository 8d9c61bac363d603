// Downloading a file over HTTP(S) with libcurl: redirects followed, HTTP errors reported with
// their status, a progress display, and an atomic result.
//
// The data goes to a new file in the destination's folder with an unpredictable name
// (`<dest name>.partial-<16 hex digits>`, created with O_CREAT|O_EXCL|O_NOFOLLOW, so a file or
// symlink planted there is never opened, let alone written through) and is renamed to `dest`
// only when complete and verified; on any failure it is removed.
//
// Size: with `max_bytes`, the transfer stops as soon as the server sends more than that (or a
// Content-Length above it), so a wrong file is never written to disk in full.
//
// Deadlines: connecting gives up after `connect_timeout_s`; a transfer slower than
// `low_speed_bytes_per_s` for `low_speed_time_s` seconds is abandoned (a server that sends 2
// bytes a second never keeps ltfit waiting for ever). The environment overrides these
// (LTFIT_DOWNLOAD_CONNECT_TIMEOUT, LTFIT_DOWNLOAD_LOW_SPEED_LIMIT,
// LTFIT_DOWNLOAD_LOW_SPEED_TIME; whole numbers of seconds and bytes per second).
//
// SIGINT/SIGTERM/SIGHUP stop a download (util/signals.h; the handlers are installed for the
// download if the command has not): the partial file is removed and InterruptedError (exit 130)
// thrown.
//
// The progress bar is drawn on stderr with '\r' when stderr is a terminal; otherwise a log
// line is written every ~10 % (or every 10 s when the size is unknown). Thread-safe: each call
// uses its own curl handle.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ltfit {

struct DownloadOptions {
  long connect_timeout_s = 30;        // give up connecting after this many seconds
  long low_speed_bytes_per_s = 1024;  // abandon a transfer slower than this ...
  long low_speed_time_s = 60;         // ... for this many seconds in a row
  bool show_progress = true;          // draw a progress bar / log progress lines
  // The most bytes the file may have (0: no bound). A response announcing more is refused at
  // once; one streaming more is cut off at this many bytes (RuntimeError, nothing left behind).
  std::int64_t max_bytes = 0;
  // Called with the path of the complete partial file before it is renamed to `dest_path`;
  // if it throws, the partial file is deleted and the exception propagates. May be empty.
  std::function<void(const std::string& partial_path)> verify;
};

// Downloads `url` to `dest_path` (parent directories are created). Throws RuntimeError naming
// the URL (and the HTTP status for responses >= 400, or curl's reason) on failure, and
// InterruptedError when a stop signal arrives; no partial file is left behind.
void download_file(const std::string& url, const std::string& dest_path,
                   const DownloadOptions& options = {});

}  // namespace ltfit
