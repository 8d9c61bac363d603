// Per-class precision, recall, F1 and error rate from a confusion matrix.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "ltfit/eval/metrics.h"

TEST_CASE("per-class metrics follow the textbook definitions", "[eval]") {
  // rows actual, columns predicted: cat 8 right 2 wrong; dog 6 right 4 wrong; bird never seen.
  const ltfit::ConfusionRows confusion = {{8, 2, 0}, {3, 6, 1}, {0, 0, 0}};
  const auto m = ltfit::per_class_metrics(confusion);
  REQUIRE(m.size() == 3);
  CHECK(m[0].support == 10);
  CHECK(m[0].precision == Approx(8.0 / 11.0));
  CHECK(m[0].recall == Approx(0.8));
  CHECK(m[0].f1 == Approx(2 * (8.0 / 11.0) * 0.8 / (8.0 / 11.0 + 0.8)));
  CHECK(m[1].precision == Approx(6.0 / 8.0));
  CHECK(m[1].recall == Approx(0.6));
  // Predicted once, never right, never present: everything 0 (no division by zero).
  CHECK(m[2].precision == 0.0);
  CHECK(m[2].recall == 0.0);
  CHECK(m[2].f1 == 0.0);
  CHECK(ltfit::error_rate(confusion) == Approx(6.0 / 20.0));
  CHECK(ltfit::error_rate({}) == 0.0);
}

TEST_CASE("confusion rows read an int64 tensor row by row", "[eval]") {
  const torch::Tensor t = torch::tensor({1, 2, 3, 4}, torch::kInt64).view({2, 2});
  CHECK(ltfit::confusion_rows(t) == ltfit::ConfusionRows{{1, 2}, {3, 4}});
  CHECK_THROWS(ltfit::per_class_metrics({{1, 2}, {3}}));
}
