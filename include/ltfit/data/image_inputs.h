// Expanding `ltfit predict`'s arguments (files, folders, glob patterns) into image files.
//
// Each argument is, checked in this order:
//   - an existing folder: its image files (by extension, as dataset_index.h decides), found
//     recursively, hidden entries ('.' names) skipped, sorted by path;
//   - an existing file of any kind: kept as given (the loader then skips and names it if it
//     cannot be decoded);
//   - a glob(3) pattern (*, ?, [...]), expanded here so that a quoted '*.jpg' works: matching
//     folders are expanded as above, matching files kept when they have an image extension;
//     matches sorted by path.
// The result keeps the arguments' order, each path once (its first occurrence). Never opens an
// image. Thread-safe.
#pragma once

#include <string>
#include <vector>

namespace ltfit {

// The image files `inputs` name, as described above. DataError (exit 3) naming the argument
// when a folder holds no image file, a pattern matches none, or a path does not exist.
std::vector<std::string> expand_image_inputs(const std::vector<std::string>& inputs);

}  // namespace ltfit
