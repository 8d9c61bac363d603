#include "ltfit/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr std::int64_t kFormatVersion = 2;  // 1: weights, optimizer, epochs (no position)
const char* const kHint = "use another checkpoint (checkpoints/last.ckpt or best.ckpt)";

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void write_meta(torch::serialize::OutputArchive& archive, const CheckpointMeta& meta) {
  archive.write("format_version", c10::IValue(kFormatVersion));
  archive.write("config_yaml", c10::IValue(meta.config_yaml));
  archive.write("classes", c10::IValue(c10::List<std::string>(meta.classes)));
  archive.write("epochs_done", c10::IValue(static_cast<std::int64_t>(meta.epochs_done)));
  archive.write("global_step", c10::IValue(meta.global_step));
  archive.write("accuracy", c10::IValue(meta.accuracy));
  archive.write("valid_loss", c10::IValue(meta.valid_loss));
  const TrainPosition& p = meta.position;
  archive.write("position",
                c10::IValue(c10::List<std::int64_t>({p.stage, p.epoch_in_stage, p.batch_in_epoch,
                                                     p.loss_count, meta.scaler.growth_tracker})));
  archive.write("position_real",
                c10::IValue(c10::List<double>(
                    {p.loss_avg, meta.best_accuracy, meta.scaler.scale, meta.train_seconds})));
}

// The global generators: CPU always, each visible CUDA device's when CUDA is initialised.
void write_rng(torch::serialize::OutputArchive& archive) {
  torch::serialize::OutputArchive rng;
  auto cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    rng.write("cpu", cpu.get_state(), /*is_buffer=*/true);
  }
  if (torch::cuda::is_available()) {
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(torch::cuda::device_count()); ++i) {
      auto gen = at::globalContext().defaultGenerator(at::Device(at::kCUDA, i));
      std::lock_guard<std::mutex> lock(gen.mutex());
      rng.write("cuda" + std::to_string(i), gen.get_state(), /*is_buffer=*/true);
    }
  }
  archive.write("rng", rng);
}

void set_rng_states(torch::serialize::InputArchive& archive) {
  torch::serialize::InputArchive rng;
  if (!archive.try_read("rng", rng)) throw std::runtime_error("no random generator state");
  torch::Tensor state;
  if (!rng.try_read("cpu", state, /*is_buffer=*/true)) throw std::runtime_error("no CPU RNG");
  auto cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_state(state);
  }
  if (!torch::cuda::is_available()) return;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(torch::cuda::device_count()); ++i) {
    if (!rng.try_read("cuda" + std::to_string(i), state, /*is_buffer=*/true)) continue;
    auto gen = at::globalContext().defaultGenerator(at::Device(at::kCUDA, i));
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state);
  }
}

CheckpointMeta read_meta(torch::serialize::InputArchive& archive) {
  auto read = [&](const char* key) {
    c10::IValue value;
    if (!archive.try_read(key, value)) throw std::runtime_error(std::string("no '") + key + "'");
    return value;
  };
  const std::int64_t version = read("format_version").toInt();
  if (version < 1 || version > kFormatVersion) {
    throw std::runtime_error("unsupported checkpoint format version " + std::to_string(version) +
                             " (this ltfit reads 1 to " + std::to_string(kFormatVersion) + ")");
  }
  CheckpointMeta meta;
  meta.config_yaml = read("config_yaml").toStringRef();
  for (const c10::IValue& c : read("classes").toListRef()) meta.classes.push_back(c.toStringRef());
  meta.epochs_done = static_cast<int>(read("epochs_done").toInt());
  meta.global_step = read("global_step").toInt();
  meta.accuracy = read("accuracy").toDouble();
  meta.valid_loss = read("valid_loss").toDouble();
  if (version < 2) {  // weights only; positioned at the last completed epoch's end
    meta.best_accuracy = meta.accuracy;
    return meta;
  }
  const auto ints = read("position").toIntVector();
  const auto reals = read("position_real").toDoubleVector();
  if (ints.size() != 5 || reals.size() != 4) throw std::runtime_error("malformed position");
  meta.position = {static_cast<int>(ints[0]), static_cast<int>(ints[1]), ints[2], reals[0],
                   ints[3]};
  meta.scaler = {reals[2], ints[4]};
  meta.best_accuracy = reals[1];
  meta.train_seconds = reals[3];
  return meta;
}

void open_archive(const std::string& path, torch::serialize::InputArchive& archive) {
  if (!std::filesystem::is_regular_file(path)) {
    throw CheckpointError("checkpoint '" + path + "' does not exist or is not a file", kHint);
  }
  try {
    archive.load_from(path);
  } catch (const std::exception& e) {
    throw CheckpointError(
        "checkpoint '" + path + "' is not a readable ltfit checkpoint " + "(corrupt or truncated?)",
        kHint);
  }
}

// Reads every parameter and buffer first, checks names and shapes, then copies.
void load_model_state(torch::serialize::InputArchive& archive, ResNet& model,
                      const std::string& path) {
  torch::serialize::InputArchive weights;
  if (!archive.try_read("model", weights)) throw std::runtime_error("no model weights");
  std::vector<std::pair<torch::Tensor, torch::Tensor>> copies;
  auto stage = [&](const std::string& name, torch::Tensor& target, bool is_buffer) {
    torch::Tensor source;
    if (!weights.try_read(name, source, is_buffer)) {
      throw CheckpointError("checkpoint '" + path + "' has no tensor '" + name + "'",
                            "was it saved for another model.arch?");
    }
    if (source.sizes() != target.sizes()) {
      throw CheckpointError("checkpoint '" + path + "': '" + name + "' has shape " +
                            c10::str(source.sizes()) + ", the model expects " +
                            c10::str(target.sizes()));
    }
    copies.emplace_back(target, source);
  };
  for (auto& item : model->named_parameters()) stage(item.key(), item.value(), false);
  for (auto& item : model->named_buffers()) stage(item.key(), item.value(), true);
  torch::NoGradGuard no_grad;
  for (auto& [target, source] : copies) target.copy_(source);
}

}  // namespace

void save_checkpoint(const std::string& path, ResNet& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta) {
  torch::serialize::OutputArchive archive;
  write_meta(archive, meta);
  torch::serialize::OutputArchive weights;
  for (const auto& item : model->named_parameters()) weights.write(item.key(), item.value());
  for (const auto& item : model->named_buffers()) weights.write(item.key(), item.value(), true);
  archive.write("model", weights);
  if (optimizer) {
    torch::serialize::OutputArchive state;
    optimizer->save(state);
    archive.write("optimizer", state);
  }
  write_rng(archive);
  const std::string tmp = path + ".tmp";
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  try {
    archive.save_to(tmp);
  } catch (const std::exception& e) {
    throw RuntimeError("cannot write checkpoint '" + tmp + "': " + e.what(),
                       "check free disk space and permissions of the run directory");
  }
  fsync_path(tmp);
  std::filesystem::rename(tmp, path);
  fsync_path(std::filesystem::path(path).parent_path().string());
}

CheckpointMeta read_checkpoint_meta(const std::string& path) {
  torch::serialize::InputArchive archive;
  open_archive(path, archive);
  try {
    return read_meta(archive);
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError("checkpoint '" + path + "' is incomplete: " + e.what(), kHint);
  }
}

CheckpointMeta load_checkpoint(const std::string& path, ResNet& model,
                               torch::optim::Optimizer* optimizer, bool restore_rng) {
  torch::serialize::InputArchive archive;
  open_archive(path, archive);
  try {
    CheckpointMeta meta = read_meta(archive);
    load_model_state(archive, model, path);
    if (optimizer) {
      torch::serialize::InputArchive state;
      if (!archive.try_read("optimizer", state)) throw std::runtime_error("no optimizer state");
      optimizer->load(state);
    }
    if (restore_rng) set_rng_states(archive);
    return meta;
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError("checkpoint '" + path + "' is incomplete: " + e.what(), kHint);
  }
}

}  // namespace ltfit
