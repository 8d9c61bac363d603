// Classification metrics from a confusion matrix: per-class precision, recall, F1; error rate.
//
// Pure functions over a square matrix whose rows are the actual class and columns the
// predicted one (EvalResult::confusion). Zero divisions give 0, as scikit-learn's
// zero_division=0 does. Thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace ltfit {

using ConfusionRows = std::vector<std::vector<std::int64_t>>;  // [actual][predicted] counts

struct ClassMetrics {
  double precision = 0.0;    // TP / (TP + FP): of the images predicted as the class, right
  double recall = 0.0;       // TP / (TP + FN): of the images of the class, found
  double f1 = 0.0;           // harmonic mean of precision and recall
  std::int64_t support = 0;  // images actually of the class (the row sum)
};

// One entry per class, in label order. The matrix must be square.
std::vector<ClassMetrics> per_class_metrics(const ConfusionRows& confusion);

// 1 - trace / total (0 for an empty matrix).
double error_rate(const ConfusionRows& confusion);

// int64 [C,C] tensor -> rows.
ConfusionRows confusion_rows(const torch::Tensor& confusion);

}  // namespace ltfit
