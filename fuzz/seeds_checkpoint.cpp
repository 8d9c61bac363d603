// Seeds of the checkpoint target: checkpoints and optimizer snapshots written by ltfit itself
// (for the fixture's model and optimizers), and checkpoints that must be refused.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <torch/torch.h>

#include "archive_input.h"
#include "checkpoint_fixture.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/train/checkpoint.h"
#include "raw_pickle.h"
#include "seeds.h"

namespace ltfit::fuzz {

namespace {

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string saved_checkpoint(CheckpointFixture& fixture, bool sgd) {
  CheckpointMeta meta;
  meta.config_yaml = to_yaml(Config{});
  meta.classes = {"cat", "dog"};
  meta.epochs_done = 1;
  meta.global_step = 10;
  meta.position.batch_in_epoch = 3;
  meta.decode_failures.found = {2, 5};
  // A hook's state (the schedule's plateau counters, a weight average): the fuzzer mutates it.
  meta.hook_states = {{"schedule", 1, {}, {{"stage", 0}, {"best", 0.5}, {"decays", 1}}},
                      {"ema", 1, {{"w", torch::ones({2, 2})}}, {}}};
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("ltfit-fuzz-seed-" + std::to_string(::getpid()) + ".ckpt");
  save_checkpoint(path.string(), fixture.model, sgd ? fixture.sgd.get() : fixture.adamw.get(),
                  meta);
  std::string bytes = read_bytes(path);
  std::filesystem::remove(path);
  return bytes;
}

// A snapshot of an optimizer that has taken two steps (so it has per-parameter state).
std::string stepped_snapshot(SnapshotFixture& fixture, bool sgd) {
  torch::optim::Optimizer& optimizer = sgd ? *fixture.sgd : *fixture.adamw;
  for (int step = 0; step < 2; ++step) {
    optimizer.zero_grad();
    fixture.linear->forward(torch::ones({4, 3})).sum().backward();
    optimizer.step();
  }
  return save_optimizer_state(optimizer);
}

std::string with_mode(char mode, const std::string& archive_input) {
  return std::string(1, mode) + archive_input;
}

std::string pickle_only(char mode, const std::string& pickle) {
  std::string out(1, mode);
  for (int i = 0; i < 4; ++i) out.push_back(char((pickle.size() >> (8 * i)) & 0xff));
  return out + pickle;
}

}  // namespace

std::vector<Seed> checkpoint_seeds() {
  CheckpointFixture fixture;
  SnapshotFixture snapshot;
  std::vector<Seed> seeds = {
      {"checkpoint-adamw", with_mode(0, encode_archive_input(saved_checkpoint(fixture, false)))},
      {"checkpoint-sgd", with_mode(1, encode_archive_input(saved_checkpoint(fixture, true)))},
      {"snapshot-adamw", with_mode(2, encode_archive_input(stepped_snapshot(snapshot, false)))},
      {"snapshot-sgd", with_mode(3, encode_archive_input(stepped_snapshot(snapshot, true)))},
  };
  RawPickle old_format;
  old_format.op('}').mark().str("format").str("ltfit.checkpoint").str("format_version");
  old_format.integer(2).op('u');
  seeds.push_back({"hostile-format-2", pickle_only(0, old_format.stop()), Expect::kRefused});
  RawPickle wrong_types;
  wrong_types.op('}').mark().str("format").str("ltfit.checkpoint").str("format_version");
  wrong_types.integer(3).str("config_yaml").integer(5).str("classes").str("cat").op('u');
  seeds.push_back({"hostile-wrong-types", pickle_only(0, wrong_types.stop()), Expect::kRefused});
  seeds.push_back(
      {"hostile-not-a-dict", pickle_only(0, RawPickle().op(']').stop()), Expect::kRefused});
  return seeds;
}

}  // namespace ltfit::fuzz
