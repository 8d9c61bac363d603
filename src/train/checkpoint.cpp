#include "ltfit/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr std::int64_t kFormatVersion = 1;
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
}

CheckpointMeta read_meta(torch::serialize::InputArchive& archive) {
  auto read = [&](const char* key) {
    c10::IValue value;
    if (!archive.try_read(key, value)) throw std::runtime_error(std::string("no '") + key + "'");
    return value;
  };
  if (read("format_version").toInt() != kFormatVersion) {
    throw std::runtime_error("unsupported checkpoint format version");
  }
  CheckpointMeta meta;
  meta.config_yaml = read("config_yaml").toStringRef();
  for (const c10::IValue& c : read("classes").toListRef()) meta.classes.push_back(c.toStringRef());
  meta.epochs_done = static_cast<int>(read("epochs_done").toInt());
  meta.global_step = read("global_step").toInt();
  meta.accuracy = read("accuracy").toDouble();
  meta.valid_loss = read("valid_loss").toDouble();
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
                               torch::optim::Optimizer* optimizer) {
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
    return meta;
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError("checkpoint '" + path + "' is incomplete: " + e.what(), kHint);
  }
}

}  // namespace ltfit
