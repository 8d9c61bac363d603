// A resume's check of best.ckpt: see best_checkpoint.h.
#include "ltfit/train/best_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

// CheckpointWriter's hook state (checkpoint_writer.h) and its scalars.
constexpr const char* kStateName = "best_checkpoint";

// What a checkpoint records as the run's best epoch.
struct BestRecord {
  bool has_best = false;
  double value = 0.0;  // the monitored figure
  double accuracy = -1.0;
  int epoch = -1;  // global epochs done at the best (-1: not recorded, older ltfit)
};

BestRecord record_of(const CheckpointMeta& meta) {
  const auto state = std::find_if(meta.hook_states.begin(), meta.hook_states.end(),
                                  [](const HookState& s) { return s.name == kStateName; });
  BestRecord record;
  if (state == meta.hook_states.end()) {  // older ltfit: the best accuracy only
    record.has_best = meta.best_accuracy >= 0.0;
    record.value = record.accuracy = meta.best_accuracy;
    return record;
  }
  const auto scalar = [&](const char* key, double fallback) {
    const auto found = state->scalars.find(key);
    return found == state->scalars.end() ? fallback : found->second;
  };
  record.has_best = scalar("has_best", 0.0) != 0.0;
  record.value = scalar("value", 0.0);
  record.accuracy = scalar("accuracy", meta.best_accuracy);
  record.epoch = static_cast<int>(scalar("epoch", -1.0));
  return record;
}

// `meta` recording `record` as the best, for `monitor`.
void set_record(CheckpointMeta& meta, const BestRecord& record, Monitor monitor) {
  HookState state;
  state.name = kStateName;
  state.version = 1;
  state.scalars = {{"monitor", static_cast<double>(monitor)},
                   {"has_best", record.has_best ? 1.0 : 0.0},
                   {"value", record.has_best ? record.value : 0.0},
                   {"accuracy", record.accuracy}};
  if (record.has_best && record.epoch >= 0) state.scalars["epoch"] = record.epoch;
  auto& states = meta.hook_states;
  states.erase(std::remove_if(states.begin(), states.end(),
                              [](const HookState& s) { return s.name == kStateName; }),
               states.end());
  states.push_back(std::move(state));
  meta.best_accuracy = record.accuracy;
}

// Why best.ckpt does not hold `record`'s epoch; nullopt when it does.
std::optional<std::string> mismatch(const fs::path& best, const BestRecord& record,
                                    const CheckpointMeta& resumed) {
  std::error_code ec;
  if (!fs::is_regular_file(best, ec)) return "is missing";
  CheckpointMeta held;
  try {
    held = read_checkpoint_meta(best.string());
  } catch (const Error& e) {
    return std::string("cannot be read (") + e.what() + ")";
  }
  const bool same_epoch = record.epoch >= 0 ? held.epochs_done == record.epoch
                                            : held.epochs_done <= resumed.epochs_done;
  if (same_epoch && held.accuracy == record.accuracy && held.position.batch_in_epoch == 0) {
    return std::nullopt;
  }
  return fmt::format("holds epoch {} (accuracy {:.4f})", held.epochs_done, held.accuracy);
}

// Whether `resumed` ends the recorded best epoch (its weights are the best's).
bool ends_best_epoch(const CheckpointMeta& resumed, const BestRecord& recorded) {
  if (resumed.position.batch_in_epoch != 0 || resumed.epochs_done == 0) return false;
  return recorded.epoch >= 0 ? recorded.epoch == resumed.epochs_done
                             : recorded.accuracy == resumed.accuracy;
}

// The record of `resumed`'s own epoch, when it ends one and its monitored figure is known.
std::optional<BestRecord> own_epoch(const CheckpointMeta& resumed, const BestRecord& recorded,
                                    Monitor monitor) {
  if (resumed.position.batch_in_epoch != 0 || resumed.epochs_done == 0) return std::nullopt;
  BestRecord own{true, 0.0, resumed.accuracy, resumed.epochs_done};
  if (ends_best_epoch(resumed, recorded)) {
    own.value = recorded.value;
  } else if (monitor == Monitor::kAccuracy) {
    own.value = resumed.accuracy;
  } else if (monitor == Monitor::kValidLoss) {
    own.value = resumed.valid_loss;
  } else {
    return std::nullopt;  // a multi-label figure: the checkpoint keeps only the best one's
  }
  return own;
}

}  // namespace

CheckpointMeta check_best_checkpoint(const std::string& checkpoint_dir,
                                     const std::string& resumed_path, CheckpointMeta resumed,
                                     Classifier& model, Monitor monitor) {
  const BestRecord recorded = record_of(resumed);
  if (!recorded.has_best) return resumed;  // the next epoch's end writes best.ckpt
  const fs::path best = fs::path(checkpoint_dir) / "best.ckpt";
  const std::optional<std::string> why = mismatch(best, recorded, resumed);
  if (!why) return resumed;
  const std::string expected =
      fmt::format("{} records the best as {}accuracy {:.4f}, but {} {}", resumed_path,
                  recorded.epoch >= 0 ? fmt::format("epoch {}, ", recorded.epoch) : "",
                  recorded.accuracy, best.string(), *why);
  const std::optional<BestRecord> own = own_epoch(resumed, recorded, monitor);
  const bool was_best = ends_best_epoch(resumed, recorded);
  if (!own) {
    spdlog::warn(
        "{}. The best epoch's weights are lost: the record of the best is cleared, and the next "
        "epoch's end writes best.ckpt anew",
        expected);
    set_record(resumed, BestRecord{}, monitor);
    return resumed;
  }
  set_record(resumed, *own, monitor);
  save_checkpoint(best.string(), model, nullptr, resumed);  // weights only, as the writer's
  if (was_best) {
    spdlog::warn("{}: rewrote it from {} (epoch {}, the best)", expected, resumed_path, own->epoch);
  } else {
    spdlog::warn(
        "{}. The best epoch's weights are lost: best.ckpt now holds epoch {} (accuracy {:.4f}) "
        "from {}, and later epochs are compared with it",
        expected, own->epoch, own->accuracy, resumed_path);
  }
  return resumed;
}

}  // namespace ltfit
