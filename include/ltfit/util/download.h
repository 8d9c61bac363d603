// Downloading a file over HTTP(S) with libcurl: redirects followed, HTTP errors reported with
// their status, a progress display, and an atomic result (the data goes to `<dest>.partial`
// and is renamed to `<dest>` only when complete and verified).
//
// The progress bar is drawn on stderr with '\r' when stderr is a terminal; otherwise a log
// line is written every ~10 % (or every 10 s when the size is unknown). Thread-safe: each call
// uses its own curl handle.
#pragma once

#include <functional>
#include <string>

namespace ltfit {

struct DownloadOptions {
  long connect_timeout_s = 30;  // give up connecting after this many seconds
  long stall_timeout_s = 60;    // give up when no byte arrives for this many seconds
  bool show_progress = true;    // draw a progress bar / log progress lines
  // Called with the path of the complete `.partial` file before it is renamed to `dest_path`;
  // if it throws, the partial file is deleted and the exception propagates. May be empty.
  std::function<void(const std::string& partial_path)> verify;
};

// Downloads `url` to `dest_path` (parent directories are created). Throws RuntimeError naming
// the URL (and the HTTP status for responses >= 400, or curl's reason) on failure; no partial
// file is left behind.
void download_file(const std::string& url, const std::string& dest_path,
                   const DownloadOptions& options = {});

}  // namespace ltfit
