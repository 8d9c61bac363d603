// `ltfit convert-checkpoint`'s work: see convert_checkpoint_job.h. Reading the old format goes
// through torch::jit::load (torch::serialize::InputArchive), which runs code stored in the file:
// this is the only place in ltfit that still does so, and only with trust_code.
#include "ltfit/jobs/convert_checkpoint_job.h"

#include <spdlog/spdlog.h>
#include <torch/serialize/input-archive.h>
#include <torch/torch.h>

#include <filesystem>
#include <memory>

#include "ltfit/config/config_loader.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

c10::IValue read_value(torch::serialize::InputArchive& archive, const char* key) {
  c10::IValue value;
  if (!archive.try_read(key, value)) throw std::runtime_error(std::string("no '") + key + "'");
  return value;
}

// The metadata of formats 1 (no position) and 2.
CheckpointMeta read_old_meta(torch::serialize::InputArchive& archive) {
  const std::int64_t version = read_value(archive, "format_version").toInt();
  if (version < 1 || version > 2) {
    throw std::runtime_error("format version " + std::to_string(version) +
                             " is not one of the old formats (1, 2)");
  }
  CheckpointMeta meta;
  meta.config_yaml = read_value(archive, "config_yaml").toStringRef();
  for (const c10::IValue& c : read_value(archive, "classes").toListRef()) {
    meta.classes.push_back(c.toStringRef());
  }
  meta.epochs_done = static_cast<int>(read_value(archive, "epochs_done").toInt());
  meta.global_step = read_value(archive, "global_step").toInt();
  meta.accuracy = read_value(archive, "accuracy").toDouble();
  meta.valid_loss = read_value(archive, "valid_loss").toDouble();
  if (version < 2) {  // weights only; positioned at the last completed epoch's end
    meta.best_accuracy = meta.accuracy;
    return meta;
  }
  const auto ints = read_value(archive, "position").toIntVector();
  const auto reals = read_value(archive, "position_real").toDoubleVector();
  if (ints.size() != 5 || reals.size() != 4) throw std::runtime_error("malformed position");
  meta.position = {static_cast<int>(ints[0]), static_cast<int>(ints[1]), ints[2], reals[0],
                   ints[3]};
  meta.scaler = {reals[2], ints[4]};
  meta.best_accuracy = reals[1];
  meta.train_seconds = reals[3];
  return meta;
}

void load_old_weights(torch::serialize::InputArchive& archive, Classifier& model) {
  torch::serialize::InputArchive weights;
  if (!archive.try_read("model", weights)) throw std::runtime_error("no model weights");
  torch::NoGradGuard no_grad;
  const auto copy = [&](const std::string& name, torch::Tensor& target, bool is_buffer) {
    torch::Tensor source;
    if (!weights.try_read(name, source, is_buffer) || source.sizes() != target.sizes()) {
      throw std::runtime_error("no tensor '" + name + "' of shape " + c10::str(target.sizes()));
    }
    target.copy_(source);
  };
  for (auto& item : model->named_parameters()) copy(item.key(), item.value(), false);
  for (auto& item : model->named_buffers()) copy(item.key(), item.value(), true);
}

RngStates read_old_rng(torch::serialize::InputArchive& archive) {
  torch::serialize::InputArchive rng;
  RngStates states;
  if (!archive.try_read("rng", rng) || !rng.try_read("cpu", states.cpu, /*is_buffer=*/true)) {
    throw std::runtime_error("no random generator state");
  }
  torch::Tensor state;
  for (int i = 0; rng.try_read("cuda" + std::to_string(i), state, /*is_buffer=*/true); ++i) {
    states.cuda.push_back(state);
  }
  return states;
}

void convert(const std::string& old_path, const std::string& new_path) {
  torch::serialize::InputArchive archive;
  archive.load_from(old_path);  // runs the archive's code: hence --trust-code
  const CheckpointMeta meta = read_old_meta(archive);
  const Config config = load_config_from_string(meta.config_yaml, old_path + " (config)");
  Classifier model =
      make_classifier(config.model.arch, static_cast<std::int64_t>(meta.classes.size()),
                      config.model.head, config.model.dropout, config.model.stem);
  load_old_weights(archive, model);
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  torch::serialize::InputArchive optimizer_archive;
  if (archive.try_read("optimizer", optimizer_archive)) {
    optimizer = make_optimizer(config.train.optimizer, model);
    optimizer->load(optimizer_archive);
  }
  save_checkpoint(new_path, model, optimizer.get(), meta, read_old_rng(archive));
  spdlog::info("converted {} ({}, {} step(s), {}) to {}", old_path, config.model.arch,
               meta.global_step, optimizer ? "with optimizer state" : "weights only", new_path);
}

}  // namespace

void run_convert_checkpoint_job(const std::string& old_path, const std::string& new_path,
                                bool trust_code) {
  if (!trust_code) {
    throw ConfigError(
        "convert-checkpoint reads ltfit's old checkpoint format, a TorchScript archive: loading "
        "one executes code stored inside the file, which can do anything your account can",
        "convert only files you made yourself, and confirm it with --trust-code");
  }
  check_output_not_input(new_path, "NEW", {{"OLD (the checkpoint to convert)", old_path}});
  std::error_code ec;
  if (!std::filesystem::is_regular_file(old_path, ec)) {
    throw CheckpointError("checkpoint '" + old_path + "' does not exist or is not a file");
  }
  try {
    convert(old_path, new_path);
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw CheckpointError("'" + old_path + "' is not a readable checkpoint of the old format (" +
                          what.substr(0, what.find('\n')) + ")");
  } catch (const std::exception& e) {
    throw CheckpointError("'" + old_path + "' is not a readable checkpoint of the old format (" +
                          std::string(e.what()) + ")");
  }
}

}  // namespace ltfit
