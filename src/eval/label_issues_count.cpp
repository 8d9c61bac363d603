// Confident learning's counting side (cleanlab's count.py): the per-class thresholds, the
// confident joint and its calibration, with the host copy of the probabilities and labels they
// read; see label_issues.h and label_issues_internal.h. Each step mirrors the floating-point
// operations of cleanlab in their order (NumPy's pairwise summation, round half to even), so the
// thresholds and the joint are cleanlab's.
#include "ltfit/eval/label_issues.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "eval/label_issues_internal.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr double kThresholdLowerBound = 2 * kFloatingPointComparison;
constexpr double kMissingClassThreshold = 2.0;  // above any probability: never confident
constexpr double kTinyValue = 1e-100;

// NumPy's pairwise summation (numpy/_core/src/umath/loops_utils.h.src), which np.sum and
// np.mean use on a contiguous double array: bit for bit the same sum.
double numpy_pairwise_sum(const double* a, std::int64_t n) {
  if (n < 8) {
    double res = 0.0;
    for (std::int64_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    std::copy(a, a + 8, r);
    std::int64_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_pairwise_sum(a, n2) + numpy_pairwise_sum(a + n2, n - n2);
}

std::vector<std::int64_t> label_counts_of(const LabelTable& t) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(t.k), 0);
  for (const std::int64_t y : t.y) ++counts[y];
  return counts;
}

// cleanlab's round_preserving_sum: NumPy's round (half to even), then +-1 on the entries with
// the largest (adding) or smallest (removing) remainders until the rounded total is kept.
std::vector<std::int64_t> round_preserving_sum(const std::vector<double>& floats) {
  const auto k = static_cast<std::int64_t>(floats.size());
  std::vector<double> ints(floats.size());
  for (std::size_t i = 0; i < floats.size(); ++i) ints[i] = std::nearbyint(floats[i]);
  const double orig_sum = std::nearbyint(numpy_pairwise_sum(floats.data(), k));
  double int_sum = std::nearbyint(numpy_pairwise_sum(ints.data(), k));
  while (std::abs(int_sum - orig_sum) > kFloatingPointComparison) {
    const double diff = std::nearbyint(orig_sum - int_sum);
    const int increment = diff < 0.0 ? -1 : 1;
    const auto changes = std::min<std::int64_t>(static_cast<std::int64_t>(std::abs(diff)), k);
    std::vector<std::int64_t> order(floats.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return floats[a] - ints[a] < floats[b] - ints[b];
    });
    if (increment > 0) std::reverse(order.begin(), order.end());  // argsort(...)[::-1]
    for (std::int64_t i = 0; i < changes; ++i) ints[order[i]] += increment;
    int_sum = std::nearbyint(numpy_pairwise_sum(ints.data(), k));
  }
  return {ints.begin(), ints.end()};
}

}  // namespace

LabelTable label_table_of(const torch::Tensor& probs, const torch::Tensor& labels) {
  if (labels.dim() == 2) {
    throw DataError("label issues: the confident joint of multi-label data is one 2x2 joint per " +
                    std::string("class (find_label_issues computes them itself)"));
  }
  if (probs.dim() != 2 || labels.dim() != 1 || probs.size(0) != labels.size(0)) {
    throw DataError("label issues: expected probabilities [N,K] and labels [N], got " +
                    std::to_string(probs.dim()) + "-D and " + std::to_string(labels.dim()) +
                    "-D tensors of " + std::to_string(probs.size(0)) + " and " +
                    std::to_string(labels.dim() > 0 ? labels.size(0) : 0) + " rows");
  }
  LabelTable t;
  t.n = probs.size(0);
  t.k = probs.size(1);
  const torch::Tensor p = probs.detach().to(torch::kCPU, torch::kDouble).contiguous();
  const torch::Tensor y = labels.detach().to(torch::kCPU, torch::kLong).contiguous();
  t.p.assign(p.data_ptr<double>(), p.data_ptr<double>() + p.numel());
  t.y.assign(y.data_ptr<std::int64_t>(), y.data_ptr<std::int64_t>() + y.numel());
  for (std::int64_t i = 0; i < t.n; ++i) {
    if (t.y[i] < 0 || t.y[i] >= t.k) {
      throw DataError("label issues: row " + std::to_string(i) + " has label " +
                      std::to_string(t.y[i]) + ", outside [0, " + std::to_string(t.k) + ")");
    }
  }
  return t;
}

std::vector<double> thresholds_of(const LabelTable& t) {
  std::vector<std::vector<double>> column(static_cast<std::size_t>(t.k));
  for (std::int64_t i = 0; i < t.n; ++i) column[t.y[i]].push_back(t.at(i, t.y[i]));
  std::vector<double> thresholds(static_cast<std::size_t>(t.k), kMissingClassThreshold);
  for (std::int64_t c = 0; c < t.k; ++c) {
    const auto& v = column[c];
    if (v.empty()) continue;
    const double mean = numpy_pairwise_sum(v.data(), static_cast<std::int64_t>(v.size())) /
                        static_cast<double>(v.size());
    thresholds[c] = std::max(mean, kThresholdLowerBound);
  }
  return thresholds;
}

std::int64_t confident_class(const double* row, const std::vector<double>& thresholds) {
  const auto k = static_cast<std::int64_t>(thresholds.size());
  std::int64_t first = -1;
  int confident = 0;
  for (std::int64_t c = 0; c < k; ++c) {
    if (row[c] >= thresholds[c] - kFloatingPointComparison) {
      if (first < 0) first = c;
      ++confident;
    }
  }
  return confident > 1 ? argmax_of(row, k) : first;
}

std::vector<std::int64_t> calibrated_joint(const LabelTable& t) {
  const std::vector<double> thresholds = thresholds_of(t);
  const std::size_t k = static_cast<std::size_t>(t.k);
  std::vector<std::int64_t> joint(k * k, 0);
  for (std::int64_t i = 0; i < t.n; ++i) {
    const std::int64_t guess = confident_class(&t.p[i * t.k], thresholds);
    if (guess >= 0) ++joint[t.y[i] * t.k + guess];
  }
  for (std::size_t c = 0; c < k; ++c)
    joint[c * k + c] = std::max<std::int64_t>(joint[c * k + c], 1);
  const std::vector<std::int64_t> counts = label_counts_of(t);
  std::vector<double> scaled(k * k);
  for (std::size_t r = 0; r < k; ++r) {
    const std::int64_t row_sum =
        std::accumulate(joint.begin() + r * k, joint.begin() + (r + 1) * k, std::int64_t{0});
    const double divisor = std::max(static_cast<double>(row_sum), kTinyValue);
    for (std::size_t c = 0; c < k; ++c) {
      scaled[r * k + c] =
          static_cast<double>(joint[r * k + c]) / divisor * static_cast<double>(counts[r]);
    }
  }
  // cleanlab's (joint.T / row sums * counts).T is a Fortran-ordered array, which np.sum adds up
  // in memory order: column by column.
  std::vector<double> by_column(k * k);
  for (std::size_t r = 0; r < k; ++r) {
    for (std::size_t c = 0; c < k; ++c) by_column[c * k + r] = scaled[r * k + c];
  }
  const double total =
      std::max(numpy_pairwise_sum(by_column.data(), static_cast<std::int64_t>(k * k)), kTinyValue);
  for (double& v : scaled) v = v / total * static_cast<double>(t.n);
  for (std::size_t r = 0; r < k; ++r) {
    const std::vector<std::int64_t> row =
        round_preserving_sum({scaled.begin() + r * k, scaled.begin() + (r + 1) * k});
    std::copy(row.begin(), row.end(), joint.begin() + r * k);
  }
  return joint;
}

std::vector<double> per_class_thresholds(const torch::Tensor& probs, const torch::Tensor& labels,
                                         std::int64_t classes) {
  const LabelTable t = label_table_of(probs, labels);
  if (t.k != classes) {
    throw DataError("label issues: " + std::to_string(classes) + " classes asked for, the " +
                    "probabilities have " + std::to_string(t.k));
  }
  return thresholds_of(t);
}

torch::Tensor confident_joint(const torch::Tensor& probs, const torch::Tensor& labels) {
  const LabelTable t = label_table_of(probs, labels);
  const std::vector<std::int64_t> joint = calibrated_joint(t);
  return torch::tensor(joint, torch::kLong).reshape({t.k, t.k});
}

}  // namespace ltfit
