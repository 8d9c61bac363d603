// A confusion matrix drawn as a heat map (sklearn's ConfusionMatrixDisplay): one cell per
// (actual, predicted) pair holding its count, shaded by the share of the actual class's images
// it holds, with the class names along both axes. Drawing uses OpenCV, which is why it lives in
// the data area. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ltfit/pictures/image_grid.h"

namespace ltfit {

// `counts`: square, [actual][predicted] (EvalResult::confusion as rows); `classes`: one name
// per row (non-ASCII characters are drawn as '-'). `title` goes on top. Large matrices get
// smaller cells; counts are left out when they no longer fit, names when unreadable.
// Returns the PNG; throws RuntimeError if it cannot be encoded.
EncodedPng encode_confusion_matrix(const std::vector<std::vector<std::int64_t>>& counts,
                                   const std::vector<std::string>& classes,
                                   const std::string& title);

}  // namespace ltfit
