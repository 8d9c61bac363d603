// The reports of a training run's end: see train_results.h.
#include "jobs/train_results.h"

#include <set>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "ltfit/eval/evaluator.h"
#include "ltfit/eval/tta.h"
#include "ltfit/jobs/training_setup.h"
#include "ltfit/util/format.h"
#include "ltfit/util/precision.h"

namespace ltfit {

namespace {

// The unreadable files one rank shares at the end of a data-parallel run; when a rank has more,
// the ranks' counts are summed instead (a file unreadable on two ranks then counts twice).
constexpr std::int64_t kMaxSharedPathBytes = std::int64_t{256} << 20;
constexpr std::size_t kSkippedExamplesShown = 40;  // two loaders' worth of examples

}  // namespace

Loader& WholeValidation::get() {
  if (!sharded_) return *setup_.valid_loader;
  if (!whole_) whole_.emplace(setup_.index.valid, setup_.valid_options);
  return *whole_;
}

void record_skipped(RunSummary& summary, const Loader& train, const Loader* valid,
                    DistSession& dist) {
  const SkippedImages skipped_train = train.skipped();
  const SkippedImages skipped_valid = valid != nullptr ? valid->skipped() : SkippedImages{};
  summary.skipped_images = skipped_train.count + skipped_valid.count;
  summary.valid_skipped_images = skipped_valid.count;
  summary.skipped_examples = skipped_train.examples;
  for (const auto& e : skipped_valid.examples) summary.skipped_examples.push_back(e);
  if (dist.active()) {
    // Each rank validates its own part of the validation set: their counts add up.
    std::vector<torch::Tensor> valid_count{
        torch::tensor({skipped_valid.count}, torch::kInt64).to(dist.group->device())};
    dist.group->all_reduce_sum(valid_count);
    summary.valid_skipped_images = valid_count[0].cpu().item<std::int64_t>();
    std::set<std::string> all(skipped_train.paths.begin(), skipped_train.paths.end());
    all.insert(skipped_valid.paths.begin(), skipped_valid.paths.end());
    std::string mine;  // NUL-separated: no path holds a NUL
    for (const auto& p : all) mine += p + '\0';
    if (dist.group->any(static_cast<std::int64_t>(mine.size()) > kMaxSharedPathBytes)) {
      std::vector<torch::Tensor> count{
          torch::tensor({summary.skipped_images}, torch::kInt64).to(dist.group->device())};
      dist.group->all_reduce_sum(count);
      summary.skipped_images = count[0].cpu().item<std::int64_t>();
      spdlog::warn("{} unreadable image(s) over all ranks (summed per rank)",
                   summary.skipped_images);
      return;
    }
    for (int r = 0; r < dist.world_size(); ++r) {
      const std::string theirs = dist.group->broadcast_string(
          r == dist.rank() ? mine : std::string(), r, kMaxSharedPathBytes);
      for (std::size_t at = 0, end; (end = theirs.find('\0', at)) != std::string::npos;
           at = end + 1) {
        std::string path = theirs.substr(at, end - at);
        if (all.insert(path).second && summary.skipped_examples.size() < kSkippedExamplesShown) {
          summary.skipped_examples.push_back(path + ": unreadable on rank " + std::to_string(r) +
                                             " (its log says why)");
        }
      }
    }
    summary.skipped_images = static_cast<std::int64_t>(all.size());
  }
  if (summary.skipped_images > 0) {
    spdlog::warn("{} unreadable image(s) were skipped (listed above and in summary.json)",
                 summary.skipped_images);
  }
}

torch::Tensor run_final_tta(const Config& config, Classifier& model, Loader& valid_loader,
                            const LoaderOptions& valid_options, const torch::Device& device,
                            RunSummary& summary) {
  EvalOptions eval_options{device, config.train.channels_last,
                           resolve_eval_precision(config.train.precision, device)};
  eval_options.thresholds = class_thresholds(config, summary.classes.size());
  eval_options.temperature = config.eval.temperature;
  eval_options.top_k = config.eval.top_k;
  const TtaResult tta = run_tta(model, valid_loader, valid_options, config.eval, eval_options);
  summary.tta_accuracy = tta.tta.accuracy;
  if (tta.tta.multi_label) {
    summary.tta_f1_samples = tta.tta.f1_samples;
    summary.tta_f1_macro = tta.tta.f1_macro;
    summary.tta_map = tta.tta.map;
  }
  summary.tta_seconds = tta.seconds;  // TTA's own plain pass included, as the study counts it
  summary.total_seconds = summary.train_seconds + tta.seconds;
  spdlog::info("TTA {} ({} views, beta {}): accuracy {:.4f} (plain {:.4f}) in {}",
               tta_mode_name(config.eval.tta_mode), tta.views, tta.beta, tta.tta.accuracy,
               tta.plain.accuracy, format_mm_ss(tta.seconds));
  return tta.plain.confusion;
}

torch::Tensor validation_confusion(const Config& config, Classifier& model, Loader& whole,
                                   const torch::Device& device) {
  if (is_multi_label(config)) return {};  // no confusion matrix for label sets
  const EvalResult result = evaluate(
      model, whole,
      {device, config.train.channels_last, resolve_eval_precision(config.train.precision, device)});
  spdlog::info("validation confusion matrix for TensorBoard: {} images in {:.1f} s", result.count,
               result.seconds);
  return result.confusion;
}

}  // namespace ltfit
