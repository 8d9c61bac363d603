// The images of a /v1/predict request: its raw body, or the parts of a multipart/form-data body
// (request_parts.h).
#include "serve/request_parts.h"

#include <algorithm>
#include <cctype>

namespace ltfit {
std::string ascii_lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

namespace {

// The value of `key` in a header's parameters (`; key=value` or `; key="value"`), or "".
std::string parameter(const std::string& header, const std::string& key) {
  const std::string lowered = ascii_lower(header);
  std::size_t at = 0;
  while ((at = lowered.find(key + "=", at)) != std::string::npos) {
    const bool boundary_ok = at == 0 || lowered[at - 1] == ';' || lowered[at - 1] == ' ';
    at += key.size() + 1;
    if (!boundary_ok) continue;
    if (at < header.size() && header[at] == '"') {
      const std::size_t end = header.find('"', at + 1);
      return end == std::string::npos ? "" : header.substr(at + 1, end - at - 1);
    }
    const std::size_t end = header.find(';', at);
    std::string value = header.substr(at, end == std::string::npos ? std::string::npos : end - at);
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back())))
      value.pop_back();
    return value;
  }
  return "";
}

// One part: its headers (before the blank line) and content.
PartsResult read_part(const std::string& part, std::size_t index, ImagePart& out) {
  const std::size_t blank = part.find("\r\n\r\n");
  if (blank == std::string::npos)
    return {400, "multipart part " + std::to_string(index) + " has no header end (a blank line)"};
  const std::string headers = part.substr(0, blank);
  std::string disposition;
  std::size_t start = 0;
  while (start < headers.size()) {
    std::size_t end = headers.find("\r\n", start);
    if (end == std::string::npos) end = headers.size();
    const std::string line = headers.substr(start, end - start);
    if (ascii_lower(line).rfind("content-disposition:", 0) == 0) disposition = line.substr(20);
    start = end + 2;
  }
  if (disposition.empty()) {
    return {400, "multipart part " + std::to_string(index) + " has no Content-Disposition"};
  }
  out.name = parameter(disposition, "filename");
  if (out.name.empty()) out.name = parameter(disposition, "name");
  if (out.name.empty()) out.name = "part" + std::to_string(index);
  out.bytes = std::make_shared<const std::string>(part.substr(blank + 4));
  return {};
}

}  // namespace

PartsResult request_images(const std::string& content_type, const std::string& body,
                           std::size_t max_parts, std::vector<ImagePart>& images) {
  const std::string type = ascii_lower(content_type.substr(0, content_type.find(';')));
  if (type.rfind("multipart/form-data", 0) != 0) {
    // curl --data-binary's default type is x-www-form-urlencoded: its bytes are the image
    const bool image = type.rfind("image/", 0) == 0 || type == "application/octet-stream" ||
                       type == "application/x-www-form-urlencoded" || type.empty();
    if (!image) {
      return {415,
              "send an image (Content-Type image/... or application/octet-stream) or "
              "multipart/form-data, not '" +
                  type + "'"};
    }
    if (body.empty()) return {400, "the request body is empty: send an image"};
    images.push_back({"body", std::make_shared<const std::string>(body)});
    return {};
  }
  const std::string boundary = parameter(content_type, "boundary");
  if (boundary.empty() || boundary.size() > 200) {
    return {400, "multipart/form-data without a usable boundary parameter"};
  }
  const std::string delimiter = "--" + boundary;
  std::size_t at = body.find(delimiter);
  if (at == std::string::npos) return {400, "multipart body without its boundary"};
  while (true) {
    at += delimiter.size();
    if (body.compare(at, 2, "--") == 0) break;  // the closing delimiter
    if (body.compare(at, 2, "\r\n") != 0) return {400, "malformed multipart delimiter line"};
    at += 2;
    const std::size_t next = body.find("\r\n" + delimiter, at);
    if (next == std::string::npos) return {400, "multipart body ends inside a part"};
    if (images.size() >= max_parts) {
      return {413, "more than " + std::to_string(max_parts) + " images in one request"};
    }
    ImagePart part;
    if (PartsResult r = read_part(body.substr(at, next - at), images.size(), part); r.status) {
      return r;
    }
    images.push_back(std::move(part));
    at = next + 2;
  }
  if (images.empty()) return {400, "multipart/form-data without a part: send an image"};
  return {};
}

}  // namespace ltfit
