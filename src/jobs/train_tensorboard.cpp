// TensorBoard for `ltfit train`: see train_tensorboard.h.
#include "ltfit/jobs/train_tensorboard.h"

#include <filesystem>

#include <spdlog/fmt/fmt.h>

#include "ltfit/eval/metrics.h"
#include "ltfit/pictures/confusion_plot.h"

namespace ltfit {

TrainTensorBoard::TrainTensorBoard(const std::string& run_dir, int groups, std::int64_t first_step,
                                   std::vector<std::string> classes)
    : writer_((std::filesystem::path(run_dir) / "tb").string(), groups, first_step),
      hook_(writer_),
      classes_(std::move(classes)) {}

BatchSource& TrainTensorBoard::tap(BatchSource& train) { return tap_.emplace(train, *this); }

std::optional<Batch> TrainTensorBoard::Tap::next() {
  std::optional<Batch> batch = source_.next();
  if (!logged_ && batch && batch->labels.size(0) > 0) {  // a rank's slice may be empty
    const std::int64_t n = std::min<std::int64_t>(batch->labels.size(0), kGridImages);
    std::vector<std::string> captions;
    for (std::int64_t i = 0; i < n; ++i) {
      captions.push_back(batch_caption(*batch, i, owner_.classes_));
    }
    owner_.writer_.add_image("train/batch",
                             encode_image_grid(batch->images.slice(0, 0, n), captions, 0));
    logged_ = true;
  }
  return batch;
}

void TrainTensorBoard::finish(const torch::Tensor& confusion) {
  const ConfusionRows rows = confusion_rows(confusion);
  std::int64_t total = 0, correct = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t j = 0; j < rows.size(); ++j) total += rows[i][j];
    correct += rows[i][i];
  }
  const std::string title =
      fmt::format("validation: {} images, accuracy {:.4f}", total,
                  total > 0 ? static_cast<double>(correct) / static_cast<double>(total) : 0.0);
  writer_.add_image("valid/confusion_matrix", encode_confusion_matrix(rows, classes_, title));
  writer_.flush();
}

}  // namespace ltfit
