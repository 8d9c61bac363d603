// Shared by the optimizer tests (fused_optimizer_test, sync_free_step_test): three seeded layer
// groups of mixed shapes, their copies, the largest difference between two sets, and one-cycle
// shapes of the LR per group and of the momentum over `steps` steps.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ltfit/config/config.h"

namespace ltfit::testing {

using ParamGroups = std::vector<std::vector<torch::Tensor>>;

// Three layer groups of mixed shapes (a conv weight, a matrix, biases), from torch's seed `seed`.
inline ParamGroups make_param_groups(std::uint64_t seed = 3) {
  torch::manual_seed(seed);
  const std::vector<std::vector<std::vector<std::int64_t>>> shapes{
      {{8, 3, 3, 3}, {8}}, {{16, 8}, {16}}, {{4, 16}, {4}}};
  ParamGroups groups;
  for (const auto& group : shapes) {
    groups.emplace_back();
    for (const auto& shape : group) groups.back().push_back(torch::randn(shape).requires_grad_());
  }
  return groups;
}

inline ParamGroups clone_param_groups(const ParamGroups& groups) {
  ParamGroups out;
  for (const auto& g : groups) {
    out.emplace_back();
    for (const auto& p : g) out.back().push_back(p.detach().clone().requires_grad_());
  }
  return out;
}

inline double max_param_gap(const ParamGroups& a, const ParamGroups& b) {
  double gap = 0.0;
  for (std::size_t g = 0; g < a.size(); ++g)
    for (std::size_t i = 0; i < a[g].size(); ++i)
      gap = std::max(gap, (a[g][i] - b[g][i]).abs().max().item<double>());
  return gap;
}

// One-cycle shapes at step t of `steps`: the LR up then down (group g at peak / 10^(2 - g)), the
// momentum down then up.
inline std::vector<double> one_cycle_lrs(int t, int steps, double peak_lr) {
  const double phase = static_cast<double>(t) / steps;
  const double peak = peak_lr * (phase < 0.3 ? 0.04 + 0.96 * phase / 0.3
                                             : 0.5 * (1 + std::cos(M_PI * (phase - 0.3) / 0.7)));
  return {peak / 100, peak / 10, peak};
}

inline double one_cycle_momentum(int t, int steps) {
  const double phase = static_cast<double>(t) / steps;
  return phase < 0.3 ? 0.95 - 0.1 * phase / 0.3
                     : 0.85 + 0.1 * (1 - 0.5 * (1 + std::cos(M_PI * (phase - 0.3) / 0.7)));
}

// A fused or plain AdamW / SGD config with decoupled weight decay 0.1.
inline OptimizerConfig weight_decay_config(OptimizerKind kind, bool fused) {
  OptimizerConfig config;
  config.name = kind;
  config.fused = fused;
  config.weight_decay = 0.1;
  return config;
}

}  // namespace ltfit::testing
