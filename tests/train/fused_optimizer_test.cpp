// The fused AdamW and SGD steps (train/fused_optimizer.h) against LibTorch's loops over 100 steps
// with discriminative LRs, a one-cycle momentum and decoupled weight decay; the scaler's
// grad_scale / found_inf; their state as LibTorch's. torch.optim's own fused optimizers are the
// oracle of tests/train/fused_optimizer_oracle.sh ("[.][fused_optimizer_oracle]" below).
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "ltfit/train/fused_optimizer.h"
#include "ltfit/train/optimizer.h"
#include "train/optimizer_fixtures.h"

namespace {

constexpr int kSteps = 100;

using ltfit::testing::clone_param_groups;
using ltfit::testing::max_param_gap;

ltfit::testing::ParamGroups make_groups() { return ltfit::testing::make_param_groups(3); }
std::vector<double> step_lrs(int t) { return ltfit::testing::one_cycle_lrs(t, kSteps, 1e-2); }
double step_momentum(int t) { return ltfit::testing::one_cycle_momentum(t, kSteps); }
ltfit::OptimizerConfig config_of(ltfit::OptimizerKind kind, bool fused) {
  return ltfit::testing::weight_decay_config(kind, fused);
}

// The gradient of step t for parameter k: a function of the parameter itself (so that the
// trajectories must agree step by step) that both languages compute with the same kernels.
torch::Tensor gradient(const torch::Tensor& p, int t, int k) {
  return torch::sin(p.detach() * static_cast<double>(t + 1) + static_cast<double>(k));
}

void run_steps(torch::optim::Optimizer& optimizer, std::vector<std::vector<torch::Tensor>>& groups,
               int from, int to) {
  for (int t = from; t < to; ++t) {
    int k = 0;
    for (auto& g : groups)
      for (auto& p : g) p.mutable_grad() = gradient(p, t, k++);
    ltfit::set_hyper_parameters(optimizer, step_lrs(t), step_momentum(t));
    optimizer.step();
  }
}

}  // namespace

TEST_CASE("fused AdamW and SGD equal LibTorch's over 100 one-cycle steps", "[train][fused]") {
  for (const auto kind : {ltfit::OptimizerKind::kAdamW, ltfit::OptimizerKind::kSgd}) {
    const bool adamw = kind == ltfit::OptimizerKind::kAdamW;
    INFO((adamw ? "adamw" : "sgd"));
    auto groups = make_groups();
    auto reference = clone_param_groups(groups);
    auto fused = ltfit::make_optimizer(config_of(kind, true), groups);
    auto plain = ltfit::make_optimizer(config_of(kind, false), reference);
    CHECK((dynamic_cast<ltfit::FusedAdamW*>(fused.get()) != nullptr) == adamw);
    CHECK((dynamic_cast<ltfit::FusedSGD*>(fused.get()) != nullptr) == !adamw);
    CHECK(dynamic_cast<ltfit::FusedAdamW*>(plain.get()) == nullptr);
    run_steps(*fused, groups, 0, kSteps);
    run_steps(*plain, reference, 0, kSteps);
    const double gap = max_param_gap(groups, reference);
    WARN((adamw ? "AdamW" : "SGD") << ": fused against LibTorch's loop after " << kSteps
                                   << " steps, largest difference " << gap);
    CHECK(gap < 1e-6);
    CHECK_FALSE(torch::equal(groups[0][0], make_groups()[0][0]));  // it did move
    // The state is LibTorch's: the same keys, step counts and moments.
    for (std::size_t g = 0; g < groups.size(); ++g) {
      for (std::size_t i = 0; i < groups[g].size(); ++i) {
        const auto& a = *fused->state().at(groups[g][i].unsafeGetTensorImpl());
        const auto& b = *plain->state().at(reference[g][i].unsafeGetTensorImpl());
        if (adamw) {
          const auto& x = static_cast<const torch::optim::AdamWParamState&>(a);
          const auto& y = static_cast<const torch::optim::AdamWParamState&>(b);
          CHECK(x.step() == kSteps);
          CHECK(x.step() == y.step());
          CHECK(torch::allclose(x.exp_avg_sq(), y.exp_avg_sq(), 1e-5, 1e-9));
        } else {
          const auto& x = static_cast<const torch::optim::SGDParamState&>(a);
          const auto& y = static_cast<const torch::optim::SGDParamState&>(b);
          CHECK(torch::allclose(x.momentum_buffer(), y.momentum_buffer(), 1e-5, 1e-7));
        }
      }
    }
  }
}

// The kernels pair a parameter's elements with its gradient's and moments' by memory order:
// torch.optim.AdamW(fused=True) on the CPU gets a channels-last weight with a contiguous gradient
// wrong by 2 lr. Ours lays them out as the parameter first.
TEST_CASE("fused steps of channels-last weights with contiguous gradients and moments",
          "[train][fused]") {
  for (const auto kind : {ltfit::OptimizerKind::kAdamW, ltfit::OptimizerKind::kSgd}) {
    INFO((kind == ltfit::OptimizerKind::kAdamW ? "adamw" : "sgd"));
    torch::manual_seed(5);
    const torch::Tensor start = torch::randn({4, 3, 5, 5});
    std::vector<std::vector<torch::Tensor>> fused_groups{
        {start.contiguous(torch::MemoryFormat::ChannelsLast).requires_grad_()}};
    std::vector<std::vector<torch::Tensor>> plain_groups{{start.clone().requires_grad_()}};
    auto fused = ltfit::make_optimizer(config_of(kind, true), fused_groups);
    auto plain = ltfit::make_optimizer(config_of(kind, false), plain_groups);
    for (int t = 0; t < 5; ++t) {
      const torch::Tensor grad = torch::sin(start * (t + 1.0));  // contiguous
      fused_groups[0][0].mutable_grad() = grad.clone();
      plain_groups[0][0].mutable_grad() = grad.clone();
      for (auto* o : {fused.get(), plain.get()}) {
        ltfit::set_hyper_parameters(*o, {0.1}, 0.9);
        o->step();
      }
      if (t == 1 && kind == ltfit::OptimizerKind::kAdamW) {  // moments as a checkpoint loads them
        auto& state = static_cast<torch::optim::AdamWParamState&>(
            *fused->state().at(fused_groups[0][0].unsafeGetTensorImpl()));
        state.exp_avg(state.exp_avg().contiguous());
        state.exp_avg_sq(state.exp_avg_sq().contiguous());
      }
    }
    CHECK(fused_groups[0][0].is_contiguous(torch::MemoryFormat::ChannelsLast));
    const double gap = (fused_groups[0][0] - plain_groups[0][0]).abs().max().item<double>();
    CHECK(gap < 1e-6);
  }
}

TEST_CASE("fused AdamW resumes from LibTorch's state: steps counted on, not restarted",
          "[train][fused]") {
  auto groups = make_groups();
  auto whole = clone_param_groups(groups);
  auto first = ltfit::make_optimizer(config_of(ltfit::OptimizerKind::kAdamW, false), groups);
  run_steps(*first, groups, 0, 40);  // LibTorch's loop for 40 steps (an older checkpoint)...
  std::stringstream saved;
  torch::save(*first, saved);
  auto resumed = ltfit::make_optimizer(config_of(ltfit::OptimizerKind::kAdamW, true), groups);
  torch::load(*resumed, saved);
  run_steps(*resumed, groups, 40, kSteps);  // ...then the fused kernel from its state
  auto reference = ltfit::make_optimizer(config_of(ltfit::OptimizerKind::kAdamW, false), whole);
  run_steps(*reference, whole, 0, kSteps);
  const double gap = max_param_gap(groups, whole);
  WARN("LibTorch 40 steps then fused 60 against LibTorch 100: largest difference " << gap);
  CHECK(gap < 1e-6);
}

TEST_CASE("fused steps take the scaler's grad_scale and skip on found_inf", "[train][fused]") {
  for (const auto kind : {ltfit::OptimizerKind::kAdamW, ltfit::OptimizerKind::kSgd}) {
    const bool adamw = kind == ltfit::OptimizerKind::kAdamW;
    INFO((adamw ? "adamw" : "sgd"));
    auto groups = make_groups();
    auto reference = clone_param_groups(groups);
    auto fused = ltfit::make_optimizer(config_of(kind, true), groups);
    auto plain = ltfit::make_optimizer(config_of(kind, false), reference);
    const torch::Tensor scale = torch::full({}, 1024.0f);
    const torch::Tensor clean = torch::zeros({}), inf = torch::ones({});
    for (int t = 0; t < 30; ++t) {
      const bool overflow = t % 7 == 0;  // the first step among them
      int k = 0;
      for (auto& g : groups) {
        for (auto& p : g) {
          p.mutable_grad() = gradient(p, t, k++) * 1024.0;
          if (overflow) p.mutable_grad().view(-1)[0] = INFINITY;
        }
      }
      const auto before = clone_param_groups(groups);
      ltfit::set_hyper_parameters(*fused, step_lrs(t), step_momentum(t));
      const ltfit::ScaledStep scaled{scale, overflow ? inf : clean};
      if (adamw) {
        static_cast<ltfit::FusedAdamW&>(*fused).step(scaled);
      } else {
        static_cast<ltfit::FusedSGD&>(*fused).step(scaled);
      }
      if (overflow) {
        CHECK(max_param_gap(groups, before) == 0.0);
        continue;
      }
      k = 0;
      for (auto& g : reference)
        for (auto& p : g) p.mutable_grad() = gradient(p, t, k++);
      ltfit::set_hyper_parameters(*plain, step_lrs(t), step_momentum(t));
      plain->step();
    }
    const double gap = max_param_gap(groups, reference);
    WARN((adamw ? "AdamW" : "SGD") << " with grad_scale 1024 and 5 of 30 steps found_inf: "
                                   << "largest difference from the unscaled loop " << gap);
    CHECK(gap < 1e-6);
    if (adamw) {
      const auto& state = static_cast<const torch::optim::AdamWParamState&>(
          *fused->state().at(groups[0][0].unsafeGetTensorImpl()));
      CHECK(state.step() == 25);
    }
  }
}

// The C++ half of tests/train/fused_optimizer_oracle.sh: reads the problem torch.optim solved
// (LTFIT_FUSED_ORACLE_DIR/problem.json), runs it and writes ltfit.json.
TEST_CASE("fused optimizers on torch.optim's problem", "[.][fused_optimizer_oracle]") {
  const char* dir = std::getenv("LTFIT_FUSED_ORACLE_DIR");
  REQUIRE(dir != nullptr);
  std::ifstream in(std::string(dir) + "/problem.json");
  const nlohmann::json problem = nlohmann::json::parse(in);
  nlohmann::json out;
  for (const auto& run : problem["runs"]) {
    const bool adamw = run["optimizer"] == "adamw";
    std::vector<std::vector<torch::Tensor>> groups;
    for (const auto& group : run["params"]) {
      groups.emplace_back();
      for (const auto& p : group) {
        const auto values = p["values"].get<std::vector<float>>();
        groups.back().push_back(torch::tensor(values)
                                    .view(p["shape"].get<std::vector<std::int64_t>>())
                                    .clone()
                                    .requires_grad_());
      }
    }
    ltfit::OptimizerConfig config =
        config_of(adamw ? ltfit::OptimizerKind::kAdamW : ltfit::OptimizerKind::kSgd, true);
    config.weight_decay = run["weight_decay"].get<double>();
    config.betas = {0.9, run["beta2"].get<double>()};
    config.eps = run["eps"].get<double>();
    config.wd_bn_bias = true;  // the groups as given: one parameter group each
    auto optimizer = ltfit::make_optimizer(config, groups);
    const auto steps = run["steps"].get<int>();
    for (int t = 0; t < steps; ++t) {
      const double scale = run["grad_scale"][t].get<double>();
      const bool overflow = run["found_inf"][t].get<double>() != 0.0;
      int k = 0;
      for (auto& g : groups) {
        for (auto& p : g) {
          p.mutable_grad() = gradient(p, t, k++) * scale;
          if (overflow) p.mutable_grad().view(-1)[0] = INFINITY;
        }
      }
      ltfit::set_hyper_parameters(*optimizer, run["lrs"][t].get<std::vector<double>>(),
                                  run["momentum"][t].get<double>());
      const ltfit::ScaledStep scaled{torch::full({}, static_cast<float>(scale)),
                                     torch::full({}, overflow ? 1.0f : 0.0f)};
      if (adamw) {
        static_cast<ltfit::FusedAdamW&>(*optimizer).step(scaled);
      } else {
        static_cast<ltfit::FusedSGD&>(*optimizer).step(scaled);
      }
    }
    nlohmann::json params = nlohmann::json::array();
    for (const auto& g : groups) {
      for (const auto& p : g) {
        const torch::Tensor flat = p.detach().flatten().contiguous();
        params.push_back(
            std::vector<float>(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel()));
      }
    }
    out.push_back({{"name", run["name"]}, {"params", params}});
  }
  std::ofstream(std::string(dir) + "/ltfit.json") << out.dump();
}
