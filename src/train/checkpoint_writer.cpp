#include "ltfit/train/checkpoint_writer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <vector>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

constexpr const char* kNumberedPrefix = "step-";
constexpr double kSafetySeconds = 1.0;  // added to the time-limit margin

double seconds_between(std::chrono::steady_clock::time_point a,
                       std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Makes `link` name the same file as `target`: a hard link (or a copy where links are not
// possible) made under a temporary name and renamed over `link`.
// A failure (a full disk during the copy) removes the temporary and throws RuntimeError (exit 5),
// leaving `link` as it was.
void point_at(const fs::path& target, const fs::path& link) {
  const fs::path tmp = link.string() + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  ec.clear();
  fs::create_hard_link(target, tmp, ec);
  if (ec) {
    ec.clear();
    fs::copy_file(target, tmp, fs::copy_options::overwrite_existing, ec);
  }
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw RuntimeError(
        "cannot make '" + link.string() + "' point at '" + target.string() + "': " + ec.message(),
        "free disk space and run again; '" + target.string() + "' is complete");
  }
}

// The step number of `step-<N>.ckpt`, else nullopt.
std::optional<std::int64_t> step_of(const fs::path& path) {
  const std::string name = path.filename().string();
  const std::string prefix = kNumberedPrefix;
  if (name.rfind(prefix, 0) != 0 || path.extension() != ".ckpt") return std::nullopt;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 5);
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoll(digits);
}

// The numbered checkpoints in `dir`, oldest first (by step; none if `dir` is not a folder).
std::vector<fs::path> numbered_checkpoints(const std::string& dir) {
  std::vector<fs::path> numbered;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (step_of(entry.path())) numbered.push_back(entry.path());
  }
  std::sort(numbered.begin(), numbered.end(),
            [](const fs::path& a, const fs::path& b) { return *step_of(a) < *step_of(b); });
  return numbered;
}

}  // namespace

CheckpointWriter::CheckpointWriter(std::string dir, Classifier model,
                                   torch::optim::Optimizer& optimizer, CheckpointMeta base,
                                   CheckpointWriterOptions options)
    : dir_(std::move(dir)),
      model_(std::move(model)),
      optimizer_(optimizer),
      base_(std::move(base)),
      options_(std::move(options)),
      best_accuracy_(options_.best_accuracy),
      best_value_(options_.best_monitor == Monitor::kAccuracy ? options_.best_accuracy
                  : lower_is_better(options_.best_monitor)
                      ? std::numeric_limits<double>::infinity()
                      : -std::numeric_limits<double>::infinity()) {}

HookState CheckpointWriter::save_state() const {
  const bool has_best = std::isfinite(best_value_);
  HookState state;
  state.name = state_name();
  state.version = 1;
  state.scalars = {{"monitor", static_cast<double>(options_.best_monitor)},
                   {"has_best", has_best ? 1.0 : 0.0},
                   {"value", has_best ? best_value_ : 0.0},
                   {"accuracy", best_accuracy_}};
  if (has_best && best_epoch_ >= 0) state.scalars["epoch"] = best_epoch_;
  return state;
}

void CheckpointWriter::load_state(const HookState& state) {
  if (state.version != 1) {
    throw CheckpointError("the checkpoint's best_checkpoint state has version " +
                              std::to_string(state.version) + "; this ltfit reads version 1",
                          "use the ltfit that wrote it, or a newer one");
  }
  for (const char* key : {"monitor", "has_best", "value", "accuracy"}) {
    const auto found = state.scalars.find(key);
    // The best's accuracy is NaN in a run without validation (data.valid_pct 0): not measured.
    const bool unmeasured =
        found != state.scalars.end() && std::isnan(found->second) && key == std::string("accuracy");
    if (found == state.scalars.end() || (!std::isfinite(found->second) && !unmeasured)) {
      throw CheckpointError(
          std::string("the checkpoint's best_checkpoint state has no valid '") + key + "'",
          "resume from another checkpoint, or start a new run");
    }
  }
  const auto monitor = static_cast<int>(state.scalars.at("monitor"));
  if (monitor != static_cast<int>(options_.best_monitor)) {
    spdlog::info("train.best_monitor is now {}: best.ckpt tracks it from the next epoch on",
                 monitor_name(options_.best_monitor));
    return;
  }
  if (state.scalars.at("has_best") != 0.0) best_value_ = state.scalars.at("value");
  best_accuracy_ = state.scalars.at("accuracy");
  const auto epoch = state.scalars.find("epoch");  // absent in files of older ltfit
  best_epoch_ = epoch != state.scalars.end() && std::isfinite(epoch->second)
                    ? static_cast<int>(epoch->second)
                    : -1;
}

bool CheckpointWriter::stop_requested() {
  const auto now = Clock::now();
  slowest_step_ = std::max(slowest_step_, seconds_between(last_poll_, now));
  last_poll_ = now;
  if (options_.stop_signal && options_.stop_signal()) {
    if (!stop_logged_) spdlog::warn("stop requested: finishing this step, writing a checkpoint");
    stop_logged_ = true;
    return true;
  }
  if (!options_.time_limit_seconds) return false;
  const double margin = slowest_step_ + 2.0 * slowest_save_ +
                        options_.tta_passes * slowest_validation_ + kSafetySeconds;
  if (seconds_between(options_.session_start, now) + margin < *options_.time_limit_seconds) {
    return false;
  }
  if (!time_limit_hit_) {
    spdlog::warn(
        "train.time_limit ({:.0f} s) would be passed before the next step ends: "
        "writing a checkpoint and stopping",
        *options_.time_limit_seconds);
  }
  time_limit_hit_ = true;
  return true;
}

bool CheckpointWriter::checkpoint_due() const {
  const double every = options_.cadence.every_minutes * 60.0;
  return every > 0 && seconds_between(last_save_, Clock::now()) >= every;
}

void CheckpointWriter::save(const TrainState& state, const EpochStats* epoch, const char* reason,
                            const Profiler* profiler, std::vector<HookState> hook_states) {
  const auto start = Clock::now();
  if (epoch != nullptr) {
    last_accuracy_ = epoch->accuracy;
    last_valid_loss_ = epoch->valid_loss;
  }
  const bool lower = lower_is_better(options_.best_monitor);
  const double value = epoch == nullptr ? 0.0 : monitor_value(*epoch, options_.best_monitor);
  // An epoch without validation (NaN: data.valid_pct 0) is the best so far: the last weights
  // are the result.
  const bool new_best = epoch != nullptr &&
                        (std::isnan(value) || (lower ? value < best_value_ : value > best_value_));
  if (new_best) {
    best_value_ = value;
    best_accuracy_ = epoch->accuracy;
    best_epoch_ = state.global_epoch;
  }
  for (HookState& own : hook_states) {  // collected before this save's comparison
    if (own.name == state_name()) own = save_state();
  }
  CheckpointMeta meta = base_;
  meta.epochs_done = state.global_epoch;
  meta.global_step = state.global_step;
  meta.accuracy = last_accuracy_;
  meta.valid_loss = last_valid_loss_;
  meta.position = state.position;
  meta.best_accuracy = best_accuracy_;
  meta.scaler = state.scaler;
  meta.decode_failures = state.decode_failures;
  meta.hook_states = std::move(hook_states);
  meta.train_seconds = options_.prior_train_seconds + seconds_between(options_.train_start, start);
  if (profiler != nullptr) meta.phase_seconds = profiler->totals();
  if (!options_.write) {  // a data-parallel rank other than 0: rank 0 writes
    last_save_ = Clock::now();
    return;
  }
  // best.ckpt first, and durably (fsync'ed, renamed, folder fsync'ed: AtomicFile): the numbered
  // checkpoint records this epoch as the best, so it must not exist before the weights do. A
  // failure here leaves the previous checkpoints as they were; a crash between the two leaves a
  // best.ckpt ahead of last.ckpt, which a resume repairs (check_best_checkpoint).
  // Its own file, weights only (a third of a ResNet's full checkpoint): evaluation, predict,
  // export and --init-from read it; resuming needs last.ckpt's optimizer state.
  if (new_best) save_checkpoint((fs::path(dir_) / "best.ckpt").string(), model_, nullptr, meta);
  const fs::path numbered =
      fs::path(dir_) / fmt::format("{}{:09d}.ckpt", kNumberedPrefix, state.global_step);
  save_checkpoint(numbered.string(), model_, &optimizer_, meta);
  point_at(numbered, fs::path(dir_) / "last.ckpt");
  prune(state.global_step);
  const double took = seconds_between(start, Clock::now());
  slowest_save_ = std::max(slowest_save_, took);
  last_save_ = Clock::now();
  spdlog::debug("checkpoint ({}) at step {}: {}{}", reason, state.global_step, numbered.string(),
                new_best ? ", new best" : "");
}

void CheckpointWriter::after_loss(TrainContext& ctx) {
  if (!ctx.step_now || ctx.cancel_batch) return;
  ctx.vote_stop = stop_requested();
  ctx.vote_save = checkpoint_due();
}

void CheckpointWriter::after_step(TrainContext& ctx) {
  // Cast at this step's after_loss; agreed by the ranks of a data-parallel run since.
  const bool stop = ctx.vote_stop;
  if (!stop && !ctx.vote_save) return;
  {
    ScopedPhase phase(ctx.profiler, Phase::kCheckpoint);
    save(ctx.state, nullptr, stop ? "stop" : "periodic", &ctx.profiler, ctx.hook_states());
  }
  if (stop) {
    ctx.interrupt = "training stopped at step " + std::to_string(ctx.state.global_step) +
                    " (epoch " + std::to_string(ctx.state.global_epoch) +
                    "); a checkpoint was written";
  }
}

void CheckpointWriter::validation_begin(TrainContext& /*ctx*/) { validation_start_ = Clock::now(); }

void CheckpointWriter::validation_end(TrainContext& /*ctx*/) {
  slowest_validation_ =
      std::max(slowest_validation_, seconds_between(validation_start_, Clock::now()));
}

void CheckpointWriter::epoch_end(TrainContext& ctx) {
  {
    ScopedPhase phase(ctx.profiler, Phase::kCheckpoint);
    save(ctx.state, ctx.epoch, "epoch", &ctx.profiler, ctx.hook_states());
  }
  if (ctx.agree(stop_requested())) {
    ctx.interrupt = "training stopped after epoch " + std::to_string(ctx.epoch->epoch) +
                    "; a checkpoint was written";
  }
}

void CheckpointWriter::prune(std::int64_t current_step) {
  // Only the files this save superseded: a numbered checkpoint past the current step (left by
  // another session of the run) is not this run's to delete.
  std::vector<fs::path> numbered;
  for (const fs::path& path : numbered_checkpoints(dir_)) {
    const auto step = step_of(path);
    if (step && *step <= current_step) numbered.push_back(path);
  }
  const auto keep = static_cast<std::size_t>(std::max(1, options_.cadence.keep));
  for (std::size_t i = 0; i + keep < numbered.size(); ++i) {
    std::error_code ec;
    fs::remove(numbered[i], ec);  // last.ckpt is a separate link and best.ckpt a file: they stay
  }
}

KeptWeights keep_weights_only(const std::string& dir, Classifier& scratch) {
  const fs::path last = fs::path(dir) / "last.ckpt";
  const fs::path best = fs::path(dir) / "best.ckpt";
  const auto used = [&] {  // bytes of the folder's files, each inode once
    std::uintmax_t bytes = 0;
    std::set<std::pair<std::uintmax_t, std::uintmax_t>> seen;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      struct stat st {};
      if (::stat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (seen.insert({st.st_dev, st.st_ino}).second)
        bytes += static_cast<std::uintmax_t>(st.st_size);
    }
    return bytes;
  };
  const std::uintmax_t before = used();
  const CheckpointMeta meta = read_checkpoint_meta(last.string());
  if (meta.weights_only) return {};  // done before
  std::error_code ec;
  const bool same_as_best = fs::is_regular_file(best, ec) && [&] {
    const CheckpointMeta b = read_checkpoint_meta(best.string());
    return b.global_step == meta.global_step && b.epochs_done == meta.epochs_done;
  }();
  if (same_as_best) {
    point_at(best, last);
  } else {
    const CheckpointMeta loaded = load_checkpoint(last.string(), scratch, nullptr);
    save_checkpoint(last.string(), scratch, nullptr, loaded);
  }
  for (const fs::path& numbered : numbered_checkpoints(dir)) fs::remove(numbered, ec);
  const std::uintmax_t after = used();
  return {before > after ? before - after : 0, same_as_best};
}

std::optional<std::string> find_resume_checkpoint(const std::string& run_dir) {
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  std::vector<fs::path> candidates{dir / "last.ckpt"};
  std::vector<fs::path> numbered = numbered_checkpoints(dir.string());
  candidates.insert(candidates.end(), numbered.rbegin(), numbered.rend());  // newest first
  for (const fs::path& path : candidates) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    try {
      const bool weights_only = read_checkpoint_meta(path.string()).weights_only;
      if (weights_only && path.filename() != "last.ckpt") continue;
      return path.string();
    } catch (const Error& e) {
      spdlog::warn("--resume auto: skipping {}: {}", path.string(), e.what());
    }
  }
  return std::nullopt;
}

}  // namespace ltfit
