// Per-class precision, recall and F1 from a confusion matrix: see metrics.h.
#include "ltfit/eval/metrics.h"

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

double ratio(std::int64_t num, std::int64_t den) {
  return den == 0 ? 0.0 : static_cast<double>(num) / static_cast<double>(den);
}

}  // namespace

std::vector<ClassMetrics> per_class_metrics(const ConfusionRows& confusion) {
  const std::size_t classes = confusion.size();
  for (const auto& row : confusion) {
    LTFIT_CHECK(row.size() == classes, "the confusion matrix must be square");
  }
  std::vector<ClassMetrics> metrics(classes);
  for (std::size_t k = 0; k < classes; ++k) {
    std::int64_t predicted = 0, actual = 0;
    for (std::size_t j = 0; j < classes; ++j) {
      predicted += confusion[j][k];
      actual += confusion[k][j];
    }
    ClassMetrics& m = metrics[k];
    m.support = actual;
    m.precision = ratio(confusion[k][k], predicted);
    m.recall = ratio(confusion[k][k], actual);
    const double sum = m.precision + m.recall;
    m.f1 = sum == 0.0 ? 0.0 : 2.0 * m.precision * m.recall / sum;
  }
  return metrics;
}

double error_rate(const ConfusionRows& confusion) {
  std::int64_t correct = 0, total = 0;
  for (std::size_t i = 0; i < confusion.size(); ++i) {
    for (std::size_t j = 0; j < confusion[i].size(); ++j) {
      total += confusion[i][j];
      if (i == j) correct += confusion[i][j];
    }
  }
  return total == 0 ? 0.0 : 1.0 - ratio(correct, total);
}

ConfusionRows confusion_rows(const torch::Tensor& confusion) {
  LTFIT_CHECK(confusion.dim() == 2, "a confusion matrix is 2-D");
  const torch::Tensor c = confusion.to(torch::kCPU, torch::kInt64).contiguous();
  ConfusionRows rows(static_cast<std::size_t>(c.size(0)));
  const std::int64_t* data = c.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < c.size(0); ++i) {
    rows[static_cast<std::size_t>(i)].assign(data + i * c.size(1), data + (i + 1) * c.size(1));
  }
  return rows;
}

}  // namespace ltfit
