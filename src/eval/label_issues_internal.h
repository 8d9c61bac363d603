// The pieces of confident learning (label_issues.h) that its two files share: the host copy of
// the probabilities and labels, and cleanlab's count.py side (per-class thresholds, the class a
// row is confidently counted as, the calibrated confident joint) that label_issues_count.cpp
// holds and label_issues.cpp's filters (filter.py) start from. Private to src/eval.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace ltfit {

inline constexpr double kFloatingPointComparison = 1e-6;  // cleanlab's FLOATING_POINT_COMPARISON

// Host copies: p row-major [n, k] in double, y [n].
struct LabelTable {
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::vector<double> p;
  std::vector<std::int64_t> y;
  double at(std::int64_t row, std::int64_t cls) const { return p[row * k + cls]; }
};

// probs [N,K] and labels [N] as a LabelTable: DataError for other shapes (multi-label labels
// [N,K] included) and for a label outside [0, K).
LabelTable label_table_of(const torch::Tensor& probs, const torch::Tensor& labels);

// The per-class thresholds: the mean p(c) of the rows labelled c (NumPy's summation), at least
// 2e-6; 2 (never confident) for a class no row has.
std::vector<double> thresholds_of(const LabelTable& t);

// The first index of the largest value of a row (NumPy's argmax).
inline std::int64_t argmax_of(const double* row, std::int64_t k) {
  return std::max_element(row, row + k) - row;
}

// The true class the confident joint counts `row` as, or -1 when no class is confident.
std::int64_t confident_class(const double* row, const std::vector<double>& thresholds);

// The calibrated confident joint, row-major [k, k].
std::vector<std::int64_t> calibrated_joint(const LabelTable& t);

}  // namespace ltfit
