// The images of a /v1/predict request (serve_job.h): the raw body as one image, or each part of
// a multipart/form-data body (named by its filename, else its field name). Bounded: at most
// `max_parts` images; the body itself was bounded by the server. Pure functions, thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace ltfit {

struct ImagePart {
  std::string name;                          // for the answer and messages
  std::shared_ptr<const std::string> bytes;  // the encoded image
};

// status 0: fine; else the HTTP status (400, 413, 415) and why.
struct PartsResult {
  int status = 0;
  std::string reason;
};

// `text` with ASCII letters lower-cased (header names and media types compare so).
std::string ascii_lower(std::string text);

// Appends the request's images to `images`.
PartsResult request_images(const std::string& content_type, const std::string& body,
                           std::size_t max_parts, std::vector<ImagePart>& images);

}  // namespace ltfit
