// Predict's arguments to image files: see image_inputs.h.
#include "ltfit/data/image_inputs.h"

#include <fnmatch.h>
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <unordered_set>

#include "ltfit/data/dataset_index.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

constexpr const char* kImageKinds = "*.jpg, *.jpeg, *.png, *.bmp, *.webp, *.tif, *.tiff";

bool is_hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

// Image files under `dir`, recursively, sorted. By name only, whatever their type (a FIFO or a
// dangling link named *.jpg is kept, so the loader names it); folders are never files here.
std::vector<std::string> folder_images(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code ignored;
    if (is_hidden(it->path())) {
      if (it->is_directory(ignored)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_directory(ignored) && has_image_extension(it->path().string()))
      files.push_back(it->path().string());
  }
  if (ec) throw DataError("cannot list folder '" + dir.string() + "': " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

bool is_pattern(const std::string& text) { return text.find_first_of("*?[") != std::string::npos; }

struct GlobFree {
  void operator()(glob_t* g) const {
    globfree(g);
    delete g;
  }
};

// The paths matching `pattern`, sorted by path (byte order, whatever the locale).
std::vector<std::string> glob_matches(const std::string& pattern) {
  std::unique_ptr<glob_t, GlobFree> matches(new glob_t{});
  const int status = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, matches.get());
  if (status == GLOB_NOMATCH) return {};
  if (status != 0) {
    throw DataError("cannot expand the pattern '" + pattern + "' (" +
                    (status == GLOB_NOSPACE ? "out of memory" : "a folder could not be read") +
                    ")");
  }
  std::vector<std::string> paths(matches->gl_pathv, matches->gl_pathv + matches->gl_pathc);
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> parts;
  for (const auto& part : fs::path(path)) {
    if (!part.empty() && part != "/") parts.push_back(part.string());
  }
  return parts;
}

// Whether `path`'s components from `x` on match `pattern`'s from `p` on: each as fnmatch does (a
// leading dot matched only by a dot), `**` standing for any number of folders, none included,
// that are not hidden (Python's glob with recursive=True, bash's globstar).
bool components_match(const std::vector<std::string>& pattern, std::size_t p,
                      const std::vector<std::string>& path, std::size_t x) {
  if (p == pattern.size()) return x == path.size();
  if (pattern[p] == "**") {
    for (std::size_t skip = x; skip <= path.size(); ++skip) {
      if (components_match(pattern, p + 1, path, skip)) return true;
      if (skip < path.size() && path[skip][0] == '.') return false;
    }
    return false;
  }
  return x < path.size() && ::fnmatch(pattern[p].c_str(), path[x].c_str(), FNM_PERIOD) == 0 &&
         components_match(pattern, p + 1, path, x + 1);
}

// The paths a pattern holding a `**` component matches, sorted: the folders before its first
// wildcard are walked recursively (hidden folders left out), each entry matched component-wise.
std::vector<std::string> recursive_matches(const std::string& pattern) {
  const std::vector<std::string> parts = components(pattern);
  std::size_t literal = 0;
  while (literal < parts.size() && !is_pattern(parts[literal])) ++literal;
  fs::path base = pattern[0] == '/' ? fs::path("/") : fs::path();
  for (std::size_t i = 0; i < literal; ++i) base /= parts[i];
  const std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(literal),
                                      parts.end());
  std::vector<std::string> paths;
  if (components_match(rest, 0, {}, 0) && !base.empty()) paths.push_back(base.string());
  std::error_code ec;
  fs::recursive_directory_iterator it(base.empty() ? fs::path(".") : base,
                                      fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path relative = it->path().lexically_relative(base.empty() ? "." : base);
    if (components_match(rest, 0, components(relative.string()), 0))
      paths.push_back((base / relative).string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

bool has_double_star(const std::string& pattern) {
  const auto parts = components(pattern);
  return std::find(parts.begin(), parts.end(), "**") != parts.end();
}

std::vector<std::string> pattern_images(const std::string& pattern) {
  std::vector<std::string> files;
  const auto matches =
      has_double_star(pattern) ? recursive_matches(pattern) : glob_matches(pattern);
  for (const auto& path : matches) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      const auto inner = folder_images(path);
      files.insert(files.end(), inner.begin(), inner.end());
    } else if (has_image_extension(path)) {
      files.push_back(path);
    }
  }
  if (files.empty()) {
    throw DataError(
        "the pattern '" + pattern + "' matches no image file (looked for " + kImageKinds + ")",
        "check the pattern, or give files or folders");
  }
  return files;
}

// The image files one argument names.
std::vector<std::string> input_images(const std::string& input) {
  std::error_code ec;
  const fs::file_status status = fs::status(input, ec);
  if (fs::is_directory(status)) {
    auto files = folder_images(input);
    if (files.empty()) {
      throw DataError("folder '" + input + "' holds no image file (looked for " + kImageKinds +
                          ", recursively)",
                      "give a folder of images, or the image files themselves");
    }
    return files;
  }
  if (fs::exists(status) || fs::is_symlink(fs::symlink_status(input, ec))) return {input};
  if (is_pattern(input)) return pattern_images(input);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw DataError("cannot reach '" + input + "': " + ec.message());
  throw DataError("'" + input + "' does not exist (neither a file, a folder nor a pattern)",
                  "give image files, folders of images, or a pattern such as 'photos/*.jpg'");
}

}  // namespace

std::vector<std::string> expand_image_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> images;
  std::unordered_set<std::string> seen;
  for (const auto& input : inputs) {
    for (auto& file : input_images(input)) {
      if (seen.insert(file).second) images.push_back(std::move(file));
    }
  }
  return images;
}

}  // namespace ltfit
