// The data-parallel hook with two ranks in one process (two threads, Gloo on 127.0.0.1): a rank
// whose slice had no readable image still steps with the others; a non-finite loss on one rank
// and a stop request on one rank end every rank at the same step; no rank is left waiting (the
// group's timeout would turn a wait into a different error).
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "ltfit/dist/group.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/checkpoint_writer.h"
#include "ltfit/train/data_parallel.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/train/trainer.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

// Three batches of 4 per epoch; batch `empty_at` (if >= 0) has no image.
class RankBatches : public ltfit::BatchSource {
 public:
  RankBatches(std::uint64_t seed, int empty_at) : empty_at_(empty_at) {
    torch::Generator g = at::detail::createCPUGenerator(seed);
    for (int b = 0; b < 3; ++b) {
      const std::int64_t n = b == empty_at ? 0 : 4;
      batches_.push_back({torch::randint(256, {n, 32, 32, 3}, g, torch::kUInt8),
                          torch::randint(2, {n}, g, torch::kLong),
                          {}});
    }
  }
  void start_epoch(int /*epoch*/, std::int64_t skip) override { next_ = skip; }
  std::optional<ltfit::Batch> next() override { return deliver(); }
  std::int64_t batches_per_epoch() const override { return 3; }
  // Decoding failures: `fails` are reported once the first batch was delivered.
  std::vector<std::int64_t> fails;
  std::vector<std::vector<std::int64_t>> left_out;  // what each epoch's start was told
  std::int64_t sample_count() const override { return 12; }
  std::vector<std::int64_t> found_unreadable() const override {
    return delivered_ ? fails : std::vector<std::int64_t>{};
  }
  void leave_out(const std::vector<std::int64_t>& positions) override {
    left_out.push_back(positions);
  }

 private:
  std::vector<ltfit::Batch> batches_;
  std::int64_t next_ = 0;
  int empty_at_;
  mutable bool delivered_ = false;

 public:
  std::optional<ltfit::Batch> deliver() {
    delivered_ = delivered_ || next_ < 3;
    return next_ < 3 ? std::optional<ltfit::Batch>(batches_[static_cast<std::size_t>(next_++)])
                     : std::nullopt;
  }
};

// Replaces the images of batch `at` with NaN on one rank.
class PoisonHook : public ltfit::Hook {
 public:
  explicit PoisonHook(std::int64_t at) : at_(at) {}
  void before_batch(ltfit::TrainContext& ctx) override {
    if (ctx.state.global_step == at_) ctx.images = torch::full_like(ctx.images, NAN);
  }

 private:
  std::int64_t at_;
};

struct RankResult {
  std::string error;  // "": finished
  std::int64_t steps = 0;
  std::vector<torch::Tensor> weights;
  std::vector<std::int64_t> found;                  // the trainer's decode_failures.found
  std::vector<std::vector<std::int64_t>> left_out;  // what each epoch's start left out
};

// Trains 2 epochs on each of 2 ranks; `extra(rank)` adds hooks to a rank.
std::array<RankResult, 2> train_two_ranks(
    const std::function<RankBatches(int)>& data,
    const std::function<std::vector<ltfit::Hook*>(int, ltfit::Classifier&,
                                                  torch::optim::Optimizer&)>& extra) {
  const int port = ltfit::testing::free_loopback_port();
  std::array<RankResult, 2> results;
  std::array<ltfit::Classifier, 2> models{ltfit::Classifier(nullptr), ltfit::Classifier(nullptr)};
  for (int r = 0; r < 2; ++r) {
    torch::manual_seed(static_cast<std::uint64_t>(10 + r));  // different: fit_begin broadcasts
    models[static_cast<std::size_t>(r)] = ltfit::make_classifier("resnet18", 2);
  }
  auto body = [&](int rank) {
    RankResult& out = results[static_cast<std::size_t>(rank)];
    try {
      ltfit::LaunchInfo launch;
      launch.launcher = "env";
      launch.rank = rank;
      launch.world_size = 2;
      launch.master_addr = "127.0.0.1";
      launch.master_port = port;
      ltfit::DistConfig config;
      config.timeout_seconds = 20;
      config.bucket_mb = 4;  // several buckets
      ltfit::DistGroup group(launch, config, ltfit::DistBackend::kGloo, torch::kCPU);
      ltfit::Classifier& model = models[static_cast<std::size_t>(rank)];
      auto optimizer =
          ltfit::make_optimizer(ltfit::OptimizerConfig{}, model->layer_group_parameters());
      ltfit::set_hyper_parameters(*optimizer, {1e-3, 1e-3, 1e-3}, 0.9);
      RankBatches batches = data(rank);
      ltfit::DataParallelHook sync(group, config);
      std::vector<ltfit::Hook*> hooks = extra(rank, model, *optimizer);
      hooks.push_back(&sync);
      ltfit::TrainerOptions options;
      options.group = &group;
      ltfit::Trainer trainer(model, *optimizer, batches, nullptr, options, hooks);
      ltfit::StagePlan stage;
      stage.name = "test";
      stage.epochs = 2;
      try {
        trainer.fit({stage});
      } catch (const std::exception& e) {
        out.error = e.what();
      }
      out.steps = trainer.state().global_step;
      out.found = trainer.state().decode_failures.found;
      out.left_out = batches.left_out;
      for (const auto& p : model->parameters()) out.weights.push_back(p.detach().clone());
    } catch (const std::exception& e) {
      out.error = std::string("setup: ") + e.what();
    }
  };
  std::thread other(body, 1);
  body(0);
  other.join();
  return results;
}

bool same_weights(const RankResult& a, const RankResult& b) {
  if (a.weights.size() != b.weights.size()) return false;
  for (std::size_t i = 0; i < a.weights.size(); ++i) {
    if (!torch::equal(a.weights[i], b.weights[i])) return false;
  }
  return true;
}

auto no_hooks = [](int, ltfit::Classifier&, torch::optim::Optimizer&) {
  return std::vector<ltfit::Hook*>{};
};

}  // namespace

TEST_CASE("a rank whose slice had no readable image still steps with the others", "[dist][train]") {
  const auto results = train_two_ranks(
      [](int rank) {
        return RankBatches(static_cast<std::uint64_t>(rank + 1), rank == 1 ? 1 : -1);
      },
      no_hooks);
  INFO("rank 0: " << results[0].error << " | rank 1: " << results[1].error);
  CHECK(results[0].error.empty());
  CHECK(results[1].error.empty());
  CHECK(results[0].steps == 6);
  CHECK(results[1].steps == 6);
  CHECK(same_weights(results[0], results[1]));  // from different inits: broadcast, then in step
}

TEST_CASE("a non-finite loss on one rank stops every rank at that step", "[dist][train]") {
  PoisonHook poison(2);
  const auto results = train_two_ranks(
      [](int rank) { return RankBatches(static_cast<std::uint64_t>(rank + 1), -1); },
      [&](int rank, ltfit::Classifier&, torch::optim::Optimizer&) {
        return rank == 1 ? std::vector<ltfit::Hook*>{&poison} : std::vector<ltfit::Hook*>{};
      });
  for (const auto& r : results) {
    INFO(r.error);
    CHECK_THAT(r.error, Catch::Contains("training loss became") && Catch::Contains("at step 2"));
    CHECK(r.steps == 2);
  }
}

TEST_CASE("a stop request on one rank stops every rank after the same step", "[dist][train]") {
  std::atomic<int> polls{0};
  std::array<std::unique_ptr<ltfit::CheckpointWriter>, 2> writers;
  const auto results = train_two_ranks(
      [](int rank) { return RankBatches(static_cast<std::uint64_t>(rank + 1), -1); },
      [&](int rank, ltfit::Classifier& model, torch::optim::Optimizer& optimizer) {
        ltfit::CheckpointWriterOptions options;
        options.write = false;  // as on ranks other than 0: decides, writes nothing
        options.cadence.every_minutes = 0;
        if (rank == 1) options.stop_signal = [&polls] { return ++polls > 1; };  // at step 1
        writers[static_cast<std::size_t>(rank)] = std::make_unique<ltfit::CheckpointWriter>(
            "", model, optimizer, ltfit::CheckpointMeta{}, options);
        return std::vector<ltfit::Hook*>{writers[static_cast<std::size_t>(rank)].get()};
      });
  for (const auto& r : results) {
    INFO(r.error);
    CHECK_THAT(r.error, Catch::Contains("training stopped at step 2"));
    CHECK(r.steps == 2);
  }
  CHECK(same_weights(results[0], results[1]));
}

TEST_CASE("images that failed to decode on either rank leave the next epoch on both",
          "[dist][train]") {
  const auto results = train_two_ranks(
      [](int rank) {
        RankBatches batches(static_cast<std::uint64_t>(rank + 1), -1);
        batches.fails = rank == 0 ? std::vector<std::int64_t>{5} : std::vector<std::int64_t>{2, 7};
        return batches;
      },
      no_hooks);
  for (const auto& r : results) {
    INFO(r.error);
    CHECK(r.error.empty());
    CHECK(r.found == std::vector<std::int64_t>{2, 5, 7});
    // Epoch 0 planned with none left out, epoch 1 without every rank's failures.
    CHECK(r.left_out == std::vector<std::vector<std::int64_t>>{{}, {2, 5, 7}});
  }
}

TEST_CASE("a checkpoint mid-epoch holds the failures of every rank", "[dist][train]") {
  std::array<std::unique_ptr<ltfit::CheckpointWriter>, 2> writers;
  std::atomic<int> polls{0};
  const auto results = train_two_ranks(
      [](int rank) {
        RankBatches batches(static_cast<std::uint64_t>(rank + 1), -1);
        batches.fails = {rank == 0 ? 4 : 9};
        return batches;
      },
      [&](int rank, ltfit::Classifier& model, torch::optim::Optimizer& optimizer) {
        ltfit::CheckpointWriterOptions options;
        options.write = false;
        options.cadence.every_minutes = 0;
        if (rank == 0) options.stop_signal = [&polls] { return ++polls > 1; };  // at step 2
        writers[static_cast<std::size_t>(rank)] = std::make_unique<ltfit::CheckpointWriter>(
            "", model, optimizer, ltfit::CheckpointMeta{}, options);
        return std::vector<ltfit::Hook*>{writers[static_cast<std::size_t>(rank)].get()};
      });
  for (const auto& r : results) {
    INFO(r.error);
    CHECK_THAT(r.error, Catch::Contains("training stopped at step 2"));
    CHECK(r.found == std::vector<std::int64_t>{4, 9});  // shared before the save
  }
}
