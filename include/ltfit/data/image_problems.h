// Image files that cannot serve as training or evaluation samples, and why: unreadable (not a
// regular file, empty, an unknown or unselected format, a bad header, truncated, or the decoder
// fails), over the pixel budget (data.max_pixels; refused from the header, never decoded), too
// small (shorter side under min_side) or of an extreme aspect ratio (longer / shorter side over
// max_aspect). The header is read first (image_header.h); only a file that passes it is decoded,
// at reduced scale where the format allows, through the bounded decoder every loader uses
// (header checked before allocation, memory held from the shared decode budget). Pure functions;
// thread-safe.
#pragma once

#include <string>

#include "ltfit/data/image_header.h"
#include "ltfit/data/sample.h"

namespace ltfit {

enum class ImageProblem { kNone, kUnreadable, kOverPixelBudget, kTooSmall, kExtremeAspect };

struct ImageProblemLimits {
  int min_side = 32;        // pixels; a shorter side below this is too small
  double max_aspect = 5.0;  // longer side / shorter side above this is extreme
  ImageLimits image;        // data.max_pixels (the pixel budget) and data.formats
};

struct ImageCheck {
  ImageProblem problem = ImageProblem::kNone;
  int width = 0;       // pixels, from the header as stored (0 when unreadable before it)
  int height = 0;      // pixels
  std::string detail;  // why, in words ("" when kNone)
};

// Checks one file: the first problem of unreadable, over_pixel_budget, too_small,
// extreme_aspect, in that order. Never throws for a bad file; throws a RuntimeError (exit 5) when
// the system keeps failing to open or read it (EMFILE, EIO, ...: image_io.h).
ImageCheck check_image_file(const ImageInput& input, const ImageProblemLimits& limits = {});

// "none" | "unreadable" | "over_pixel_budget" | "too_small" | "extreme_aspect"
std::string image_problem_name(ImageProblem problem);

}  // namespace ltfit
