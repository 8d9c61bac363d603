// The files and pictures of `ltfit interpret`: see interpret_report.h and interpret_job.h.
#include "interpret_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "ltfit/eval/grad_cam.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/util/json.h"

namespace ltfit {

namespace {

constexpr int kInterpretMinSide = 160;  // each half of a tile at least this high: captions fit
constexpr int kInterpretGap = 4;        // white columns between an image and its overlay

// [H,W,3] uint8 scaled up by a whole factor (nearest) until it is kInterpretMinSide high.
torch::Tensor enlarge_tile_half(const torch::Tensor& rgb) {
  const std::int64_t factor = (kInterpretMinSide + rgb.size(0) - 1) / rgb.size(0);
  if (factor <= 1) return rgb;
  return rgb.repeat_interleave(factor, 0).repeat_interleave(factor, 1);
}

// Image | gap | overlay, one tile per top loss: uint8 [N,H,2W+gap,3].
torch::Tensor interpret_tiles(const TopLossImages& images) {
  std::vector<torch::Tensor> tiles;
  for (std::int64_t i = 0; i < images.images.size(0); ++i) {
    const torch::Tensor rgb = images.images[i];
    const torch::Tensor overlay = cam_overlay(rgb, images.cams[i]);
    const torch::Tensor gap = torch::full({rgb.size(0), kInterpretGap, 3}, 255, torch::kUInt8);
    tiles.push_back(torch::cat(
        {enlarge_tile_half(rgb), enlarge_tile_half(gap), enlarge_tile_half(overlay)}, 1));
  }
  return torch::stack(tiles);
}

std::string interpret_caption(const InterpretResult& result, const TopLoss& t) {
  const auto& classes = result.evaluation.classes;
  if (t.class_index >= 0) {
    return fmt::format("{}: {} / p {:.2f} / loss {:.2f}",
                       classes[static_cast<size_t>(t.class_index)], t.actual == 1 ? "has" : "not",
                       t.probability, t.loss);
  }
  return fmt::format("{}/{} / {:.2f} / {:.2f}", classes[static_cast<size_t>(t.predicted)],
                     classes[static_cast<size_t>(t.actual)], t.loss, t.probability);
}

const std::string& sample_path(const InterpretResult& result, const TopLoss& t) {
  return result.evaluation.samples[static_cast<std::size_t>(t.sample)].path;
}

// Images per class of a multi-label result (its rows), else 0 (about square).
int interpret_columns(const InterpretResult& result) {
  if (result.top_losses.empty() || result.top_losses.front().class_index < 0) return 0;
  int n = 0;
  for (const TopLoss& t : result.top_losses) n += t.class_index == 0 ? 1 : 0;
  return n;
}

}  // namespace

EncodedPng top_losses_png(const InterpretResult& result, const TopLossImages& images) {
  std::vector<std::string> captions;
  for (const TopLoss& t : result.top_losses) captions.push_back(interpret_caption(result, t));
  return encode_image_grid(interpret_tiles(images), captions, interpret_columns(result));
}

std::string top_losses_csv(const InterpretResult& result) {
  const auto& classes = result.evaluation.classes;
  const bool multi = result.evaluation.plain.multi_label;
  std::string out = multi ? "class,rank,path,actual,predicted,loss,probability\n"
                          : "rank,path,actual,predicted,loss,probability\n";
  std::int64_t rank = 0, last_class = -1;
  for (const TopLoss& t : result.top_losses) {
    if (t.class_index != last_class) rank = 0;
    last_class = t.class_index;
    ++rank;
    if (multi) {
      out += fmt::format(
          "{},{},{},{},{},{:.6f},{:.6f}\n", csv_field(classes[static_cast<size_t>(t.class_index)]),
          rank, csv_field(sample_path(result, t)), t.actual, t.predicted, t.loss, t.probability);
    } else {
      out +=
          fmt::format("{},{},{},{},{:.6f},{:.6f}\n", rank, csv_field(sample_path(result, t)),
                      csv_field(classes[static_cast<size_t>(t.actual)]),
                      csv_field(classes[static_cast<size_t>(t.predicted)]), t.loss, t.probability);
    }
  }
  return out;
}

std::string most_confused_csv(const InterpretResult& result) {
  const auto& classes = result.evaluation.classes;
  std::string out = "actual,predicted,count\n";
  for (const ConfusedPair& p : result.most_confused) {
    out += fmt::format("{},{},{}\n", csv_field(classes[static_cast<size_t>(p.actual)]),
                       csv_field(classes[static_cast<size_t>(p.predicted)]), p.count);
  }
  return out;
}

std::string interpret_table(const InterpretResult& result) {
  const auto& classes = result.evaluation.classes;
  std::string out = evaluation_table(result.evaluation);
  out += "\ntop losses (";
  out += result.evaluation.plain.multi_label ? "per class; actual/predicted: has the class 1|0"
                                             : "Grad-CAM of the predicted class";
  out += ")\n";
  for (const TopLoss& t : result.top_losses) {
    out += fmt::format("  {:<28} loss {:>8.4f}  p {:.4f}  {}\n", interpret_caption(result, t),
                       t.loss, t.probability, sample_path(result, t));
  }
  if (!result.evaluation.plain.multi_label) {
    out += "\nmost confused (actual -> predicted: count)\n";
    if (result.most_confused.empty()) out += "  (none at --min-count)\n";
    for (const ConfusedPair& p : result.most_confused) {
      out += fmt::format("  {} -> {}: {}\n", classes[static_cast<size_t>(p.actual)],
                         classes[static_cast<size_t>(p.predicted)], p.count);
    }
  }
  out += "\nwrote into " + result.out_dir + "\n";
  return out;
}

std::string interpret_json(const InterpretResult& result) {
  const auto& classes = result.evaluation.classes;
  nlohmann::json doc;
  nlohmann::json top = nlohmann::json::array();
  for (const TopLoss& t : result.top_losses) {
    nlohmann::json item = {
        {"path", sample_path(result, t)}, {"loss", t.loss}, {"probability", t.probability}};
    if (t.class_index >= 0) {
      item["class"] = classes[static_cast<size_t>(t.class_index)];
      item["actual"] = t.actual;
      item["predicted"] = t.predicted;
    } else {
      item["actual"] = classes[static_cast<size_t>(t.actual)];
      item["predicted"] = classes[static_cast<size_t>(t.predicted)];
    }
    top.push_back(item);
  }
  nlohmann::json confused = nlohmann::json::array();
  for (const ConfusedPair& p : result.most_confused) {
    confused.push_back({{"actual", classes[static_cast<size_t>(p.actual)]},
                        {"predicted", classes[static_cast<size_t>(p.predicted)]},
                        {"count", p.count}});
  }
  doc["top_losses"] = top;
  doc["most_confused"] = confused;
  doc["out_dir"] = result.out_dir;
  doc["files"] = result.files;
  doc["tensorboard_events"] = result.events_file;
  const std::string predictions =
      result.files.empty() ? std::string()
                           : (std::filesystem::path(result.out_dir) / "predictions.csv").string();
  doc["evaluation"] = evaluation_document(result.evaluation, predictions);
  return dump_json(doc);
}

}  // namespace ltfit
