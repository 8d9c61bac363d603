// TensorBoard for `ltfit train` (run.tensorboard): the writer of `<run dir>/tb/` (run/
// tensorboard.h) with what only the composition root can give it: the first augmented training
// batch as an image grid at the start (`train/batch`) and the validation set's confusion matrix
// at the end (`valid/confusion_matrix`). Rank 0 of a data-parallel run alone makes one. Not
// thread-safe; lives on the training thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "ltfit/data/loader.h"
#include "ltfit/run/tensorboard.h"
#include "ltfit/train/standard_hooks.h"

namespace ltfit {

class TrainTensorBoard {
 public:
  static constexpr int kGridImages = 16;  // of the first batch, as show-batch draws them

  // A new events file in `<run_dir>/tb/`; `first_step`: the global step the session starts at.
  TrainTensorBoard(const std::string& run_dir, int groups, std::int64_t first_step,
                   std::vector<std::string> classes);
  TrainTensorBoard(const TrainTensorBoard&) = delete;  // the hook and tap point into it
  TrainTensorBoard& operator=(const TrainTensorBoard&) = delete;

  // The hook that forwards the trainer's steps and epochs to the writer.
  Hook& hook() { return hook_; }
  // `train` as the trainer should draw from it: the first batch with images is also logged.
  BatchSource& tap(BatchSource& train);
  // Logs the confusion matrix (int64 [C,C], rows actual, of the final model over the whole
  // validation set) at the last step and flushes. Throws WriteError.
  void finish(const torch::Tensor& confusion);

  TensorBoardWriter& writer() { return writer_; }

 private:
  class Tap : public BatchSource {
   public:
    Tap(BatchSource& source, TrainTensorBoard& owner) : source_(source), owner_(owner) {}
    void start_epoch(int epoch, std::int64_t skip_batches) override {
      source_.start_epoch(epoch, skip_batches);
    }
    std::optional<Batch> next() override;
    std::int64_t batches_per_epoch() const override { return source_.batches_per_epoch(); }
    std::int64_t epoch_batch_count() const override { return source_.epoch_batch_count(); }
    std::int64_t sample_count() const override { return source_.sample_count(); }
    int image_size_at(int epoch) const override { return source_.image_size_at(epoch); }
    std::vector<std::int64_t> found_unreadable() const override {
      return source_.found_unreadable();
    }
    void leave_out(const std::vector<std::int64_t>& positions) override {
      source_.leave_out(positions);
    }

   private:
    BatchSource& source_;
    TrainTensorBoard& owner_;
    bool logged_ = false;
  };

  TensorBoardWriter writer_;
  ObserverHook hook_;
  std::vector<std::string> classes_;
  std::optional<Tap> tap_;
};

}  // namespace ltfit
