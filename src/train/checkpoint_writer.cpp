#include "ltfit/train/checkpoint_writer.h"

#include <chrono>
#include <filesystem>

#include <spdlog/spdlog.h>

namespace ltfit {

CheckpointWriter::CheckpointWriter(std::string dir, ResNet model,
                                   torch::optim::Optimizer& optimizer, CheckpointMeta base)
    : dir_(std::move(dir)),
      model_(std::move(model)),
      optimizer_(optimizer),
      base_(std::move(base)) {}

void CheckpointWriter::on_epoch_end(const EpochStats& epoch) {
  const auto start = std::chrono::steady_clock::now();
  CheckpointMeta meta = base_;
  meta.epochs_done = epoch.epoch + 1;
  meta.global_step = steps_done_;
  meta.accuracy = epoch.accuracy;
  meta.valid_loss = epoch.valid_loss;
  const std::string last = dir_ + "/last.ckpt";
  save_checkpoint(last, model_, &optimizer_, meta);
  if (epoch.accuracy > best_accuracy_) {
    best_accuracy_ = epoch.accuracy;
    const std::string best = dir_ + "/best.ckpt";
    std::filesystem::copy_file(last, best + ".tmp",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(best + ".tmp", best);
    spdlog::debug("epoch {}: new best accuracy {:.4f}, saved {}", epoch.epoch, epoch.accuracy,
                  best);
  }
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace ltfit
