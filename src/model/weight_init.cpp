// PyTorch's initialisers LibTorch lacks: see weight_init.h.
#include "ltfit/model/weight_init.h"

#include <cmath>

namespace ltfit {

void trunc_normal_init(torch::Tensor& t, double std, double a, double b) {
  const auto cdf = [](double v) { return (1.0 + std::erf(v / std::sqrt(2.0))) / 2.0; };
  const double low = cdf(a / std);
  const double high = cdf(b / std);
  t.uniform_(2 * low - 1, 2 * high - 1);
  t.erfinv_();
  t.mul_(std * std::sqrt(2.0));
  t.clamp_(a, b);
}

}  // namespace ltfit
