// One image's prediction as `ltfit predict` reports it (prediction_json.h).
#include "ltfit/jobs/prediction_json.h"

#include <algorithm>

#include "ltfit/eval/multi_label_metrics.h"

namespace ltfit {
namespace {

// Multi-label (`thresholds` given): each class also with the threshold its probability is
// compared with, so the label set can be explained.
nlohmann::json ranked_json(const std::vector<RankedClass>& ranked,
                           const std::vector<double>& thresholds) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : ranked) {
    out.push_back({{"class", r.name}, {"label", r.label}, {"probability", r.probability}});
    if (!thresholds.empty())
      out.back()["threshold"] = thresholds.at(static_cast<std::size_t>(r.label));
  }
  return out;
}

}  // namespace

std::optional<std::vector<RankedClass>> labels_above(const torch::Tensor& probs,
                                                     const std::vector<std::string>& classes,
                                                     const std::vector<double>& thresholds) {
  if (thresholds.empty()) return std::nullopt;
  std::vector<RankedClass> out;
  for (std::int64_t k = 0; k < probs.size(0); ++k) {
    const double p = probs[k].item<double>();
    if (predicted(static_cast<float>(p), thresholds[static_cast<std::size_t>(k)])) {
      out.push_back({classes[static_cast<std::size_t>(k)], k, p});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const RankedClass& a, const RankedClass& b) {
    return a.probability > b.probability;
  });
  return out;
}

std::vector<RankedClass> ranked(const torch::Tensor& probs, const std::vector<std::string>& classes,
                                int top) {
  const auto best = probs.topk(std::min<std::int64_t>(top, probs.size(0)));
  std::vector<RankedClass> out;
  for (std::int64_t i = 0; i < std::get<0>(best).size(0); ++i) {
    const auto label = std::get<1>(best)[i].item<std::int64_t>();
    out.push_back(
        {classes[static_cast<std::size_t>(label)], label, std::get<0>(best)[i].item<double>()});
  }
  return out;
}

nlohmann::json prediction_json(const ImagePrediction& p) {
  if (p.error) return {{"image", p.image}, {"error", *p.error}};
  nlohmann::json out = {{"image", p.image}, {"top", ranked_json(p.top, p.thresholds)}};
  if (p.labels) out["labels"] = ranked_json(*p.labels, p.thresholds);
  if (!p.tta_mode.empty()) {
    out["tta"] = p.tta_mode;
    out["plain_top"] = ranked_json(p.plain_top, p.thresholds);
  }
  if (p.logits) out["logits"] = *p.logits;
  if (p.cam) out["cam"] = *p.cam;
  return out;
}

}  // namespace ltfit
