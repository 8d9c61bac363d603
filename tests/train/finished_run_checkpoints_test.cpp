// A finished run keeps weights only (issue 40 B4; train.checkpoint.keep_resumable false): before,
// every toy run kept last.ckpt with its optimizer state beside best.ckpt (188 MB for a
// resnet18), 38 toy runs 5.5 GB. keep_weights_only on its own (both cases: the last epoch the
// best, or not), then `ltfit train` end to end: the files left, what reads them, --resume on the
// finished run, keep_resumable: true, and lr-find's run folder.
#include <sys/stat.h>

#include <filesystem>
#include <set>

#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ltfit/model/arch_registry.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/checkpoint_writer.h"
#include "ltfit/train/optimizer.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;

namespace {

ltfit::CheckpointMeta finished_meta_at(std::int64_t step, int epochs) {
  ltfit::CheckpointMeta meta;
  meta.config_yaml = "run: {seed: 7}\n";
  meta.classes = {"cat", "dog"};
  meta.global_step = step;
  meta.epochs_done = epochs;
  return meta;
}

// A model with optimizer state after a step on random data.
struct FinishedTrained {
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  std::unique_ptr<torch::optim::Optimizer> optimizer =
      ltfit::make_optimizer(ltfit::OptimizerConfig{}, model->layer_group_parameters());
  explicit FinishedTrained(std::uint64_t seed) {
    torch::manual_seed(seed);
    optimizer->zero_grad();
    torch::nn::functional::cross_entropy(model->forward(torch::randn({2, 3, 32, 32})),
                                         torch::tensor({0, 1}, torch::kLong))
        .backward();
    optimizer->step();
  }
};

bool finished_same_weights(ltfit::Classifier& a, ltfit::Classifier& b) {
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  for (const auto& item : pa) {
    if (!torch::equal(item.value(), pb[item.key()])) return false;
  }
  return true;
}

// A run's checkpoints/ as the writer leaves it: step-<N>.ckpt with last.ckpt a link to it, and
// best.ckpt (weights only) written at `best_step`.
void write_finished_checkpoints(const fs::path& dir, FinishedTrained& last, FinishedTrained& best,
                                bool last_is_best) {
  fs::create_directories(dir);
  const fs::path numbered = dir / "step-000000020.ckpt";
  ltfit::save_checkpoint((dir / "step-000000010.ckpt").string(), last.model, last.optimizer.get(),
                         finished_meta_at(10, 1));
  ltfit::save_checkpoint(numbered.string(), last.model, last.optimizer.get(),
                         finished_meta_at(20, 2));
  fs::create_hard_link(numbered, dir / "last.ckpt");
  if (last_is_best) {
    ltfit::save_checkpoint((dir / "best.ckpt").string(), last.model, nullptr,
                           finished_meta_at(20, 2));
  } else {
    ltfit::save_checkpoint((dir / "best.ckpt").string(), best.model, nullptr,
                           finished_meta_at(10, 1));
  }
}

}  // namespace

TEST_CASE("keep_weights_only: last.ckpt loses its optimizer state, numbered ones go",
          "[train][checkpoint]") {
  for (const bool last_is_best : {true, false}) {
    INFO("last epoch the best: " << last_is_best);
    TempDir tmp;
    const fs::path dir = tmp.path() / "checkpoints";
    FinishedTrained last(1), best(2);
    write_finished_checkpoints(dir, last, best, last_is_best);
    const auto full = fs::file_size(dir / "last.ckpt");
    FinishedTrained scratch(3);
    const ltfit::KeptWeights kept = ltfit::keep_weights_only(dir.string(), scratch.model);
    CHECK(kept.freed >= full);
    CHECK(kept.last_is_best ==
          last_is_best);  // the optimizer state and the older numbered checkpoint
    std::set<std::string> left;
    for (const auto& entry : fs::directory_iterator(dir)) left.insert(entry.path().filename());
    CHECK(left == std::set<std::string>{"best.ckpt", "last.ckpt"});
    const ltfit::CheckpointMeta meta = ltfit::read_checkpoint_meta((dir / "last.ckpt").string());
    CHECK(meta.weights_only);
    CHECK(meta.global_step == 20);
    CHECK(meta.epochs_done == 2);
    // The last weights, whichever epoch was the best.
    FinishedTrained loaded(4);
    ltfit::load_checkpoint((dir / "last.ckpt").string(), loaded.model, nullptr);
    CHECK(finished_same_weights(loaded.model, last.model));
    CHECK(fs::equivalent(dir / "last.ckpt", dir / "best.ckpt") == last_is_best);
    CHECK(fs::file_size(dir / "last.ckpt") < full / 2);
    // Done once: a second call changes nothing.
    CHECK(ltfit::keep_weights_only(dir.string(), scratch.model).freed == 0);
  }
}

TEST_CASE("a finished run keeps weights only, resumes as complete, and keep_resumable keeps all",
          "[cli][checkpoint]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 8").exit_code == 0);
  const auto config = [&](const std::string& extra) {
    ltfit::testing::write_file(dir.path() / "c.yaml",
                               "run: {name: toy, seed: 5, out_dir: " + dir.str() +
                                   "/runs}\n"
                                   "data: {root: " +
                                   (dir.path() / "data").string() +
                                   ", image_size: 32, batch_size: 8, workers: 1}\n"
                                   "model: {arch: resnet18, pretrained: none, head: linear}\n"
                                   "train: {recipe: one_cycle, epochs: 2, device: cpu" +
                                   extra +
                                   "}\n"
                                   "eval: {tta: false}\n");
    return dir.str() + "/c.yaml";
  };
  const auto r = run_ltfit("train --config " + config(""));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const fs::path ckpts = dir.path() / "runs/toy/checkpoints";
  std::set<std::string> left;
  std::uintmax_t bytes = 0;
  std::set<std::uintmax_t> inodes;
  for (const auto& entry : fs::directory_iterator(ckpts)) {
    left.insert(entry.path().filename());
    struct stat st {};
    REQUIRE(::stat(entry.path().c_str(), &st) == 0);
    if (inodes.insert(st.st_ino).second) bytes += static_cast<std::uintmax_t>(st.st_size);
  }
  CHECK(left == std::set<std::string>{"best.ckpt", "last.ckpt"});
  CHECK(ltfit::read_checkpoint_meta((ckpts / "last.ckpt").string()).weights_only);
  // At most two weights files (one when the last epoch was the best): no optimizer state.
  const auto weights = fs::file_size(ckpts / "best.ckpt");
  CHECK(bytes <=
        (fs::equivalent(ckpts / "last.ckpt", ckpts / "best.ckpt") ? weights : 2 * weights + 4096));
  CHECK_THAT(r.output, Catch::Contains("keeps weights only"));
  // What reads a finished run's last.ckpt still does.
  const std::string last = (ckpts / "last.ckpt").string();
  CHECK(run_ltfit("evaluate --checkpoint " + last + " --device cpu").exit_code == 0);
  CHECK(run_ltfit("train --init-from " + last + " --run-dir " + dir.str() +
                  "/again --set train.epochs=1")
            .exit_code == 0);
  // --resume on the finished run: complete, nothing changed (it was: a weights-only error, or
  // a fresh run over it).
  for (const std::string& resume :
       {"--resume auto --run-dir " + dir.str() + "/runs/toy", "--resume " + last}) {
    const auto again = run_ltfit("train " + resume);
    INFO(again.output);
    CHECK(again.exit_code == 0);
    CHECK_THAT(again.output, Catch::Contains("is complete"));
  }
  // Asked for, the resumable state stays.
  fs::remove_all(dir.path() / "runs");
  REQUIRE(run_ltfit("train --config " + config(", checkpoint: {keep_resumable: true}")).exit_code ==
          0);
  CHECK_FALSE(ltfit::read_checkpoint_meta((ckpts / "last.ckpt").string()).weights_only);
  CHECK_FALSE(ltfit::find_resume_checkpoint((dir.path() / "runs/toy").string()) == std::nullopt);
  // lr-find writes no checkpoint: its run folder has no empty checkpoints/.
  const auto lr = run_ltfit("lr-find --config " + config("") + " --steps 5");
  INFO(lr.output);
  CHECK(lr.exit_code == 0);
  CHECK_FALSE(fs::exists(dir.path() / "runs/toy-lr_find/checkpoints"));
}
