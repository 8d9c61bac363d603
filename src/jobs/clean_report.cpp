// `ltfit clean`'s files: suggestions.csv, a picture per problem kind, the table and the JSON
// (clean_parts.h, clean_job.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>

#include "clean_parts.h"
#include "ltfit/data/image_io.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/util/json.h"

namespace ltfit {

namespace {

constexpr int kCleanThumb = 176;         // side of a picture's thumbnails
constexpr std::size_t kCleanShown = 36;  // rows of one kind drawn at most

// A square thumbnail of the file at `path` or of `held` (the pixels a source holds), or a grey
// square when it should not be (unusable) or cannot be decoded.
torch::Tensor clean_thumbnail(const std::string& path, const SampleImage& held, bool decode,
                              const ImageLimits& limits) {
  if (decode) {
    std::string error;
    ImageInput input(path);
    input.image = held;
    if (std::optional<torch::Tensor> rgb =
            load_square_image(input, kCleanThumb, CropFlip{}, &error, limits)) {
      return *rgb;
    }
  }
  return torch::full({kCleanThumb, kCleanThumb, 3}, 160, torch::kUInt8);
}

// The kept copy named in a duplicate row's detail ("same bytes as P", "near copy of P").
std::string kept_path(const Suggestion& s) {
  for (const std::string prefix : {"same bytes as ", "near copy of "}) {
    if (s.detail.rfind(prefix, 0) == 0) return s.detail.substr(prefix.size());
  }
  return "";
}

std::string clean_caption(const Suggestion& s) {
  if (s.problem == "mislabeled") {
    return fmt::format("{}->{} {:.3f}", s.given, s.suggested, s.score);
  }
  if (s.problem == "unusable") {
    return s.detail.substr(0, s.detail.find(':')) + " " +
           std::filesystem::path(s.path).filename().string();
  }
  return fmt::format("{} ({}) d {}", s.problem, s.split, static_cast<int>(s.score));
}

}  // namespace

std::string suggestions_csv(const std::vector<Suggestion>& suggestions) {
  std::string out = "path,problem,split,given,suggested,score,detail\n";
  for (const Suggestion& s : suggestions) {
    out += fmt::format("{},{},{},{},{},{:.6g},{}\n", csv_field(s.path), s.problem, s.split,
                       csv_field(s.given), csv_field(s.suggested), s.score, csv_field(s.detail));
  }
  return out;
}

std::optional<EncodedPng> suggestions_png(const std::vector<Suggestion>& suggestions,
                                          const std::string& problem, const ImageLimits& limits) {
  if (suggestions.empty()) return std::nullopt;
  std::vector<torch::Tensor> tiles;
  std::vector<std::string> captions;
  for (std::size_t i = 0; i < suggestions.size() && i < kCleanShown; ++i) {
    const Suggestion& s = suggestions[i];
    // An unusable file is drawn only when it decodes within the budget (too small, too long).
    const bool drawable = problem != "unusable" || s.detail.rfind("too_small", 0) == 0 ||
                          s.detail.rfind("extreme_aspect", 0) == 0;
    torch::Tensor tile = clean_thumbnail(s.path, s.image, drawable, limits);
    if (problem == "duplicate") {  // the kept copy | this one
      const torch::Tensor gap = torch::full({kCleanThumb, 4, 3}, 255, torch::kUInt8);
      tile = torch::cat({clean_thumbnail(kept_path(s), s.kept_image, true, limits), gap, tile}, 1);
    }
    tiles.push_back(tile);
    captions.push_back(clean_caption(s));
  }
  return encode_image_grid(torch::stack(tiles), captions, problem == "duplicate" ? 4 : 6);
}

std::string clean_table(const CleanResult& result) {
  std::map<std::string, int> counts;
  for (const Suggestion& s : result.suggestions) ++counts[s.problem];
  std::string out = fmt::format("clean: {} images in {}\n", result.images, result.root);
  out += fmt::format("training probabilities: {}; validation: out-of-sample; judged {}\n",
                     result.train_probabilities, result.judged);
  for (const std::string kind : {"mislabeled", "duplicate", "leak", "unusable"}) {
    out += fmt::format("  {:<11} {}\n", kind, counts[kind]);
  }
  out += fmt::format("\n{:<11} {:<6} {:<12} {:<12} {:>9}  {}\n", "problem", "split", "given",
                     "suggested", "score", "path");
  for (const Suggestion& s : result.suggestions) {
    out += fmt::format("{:<11} {:<6} {:<12} {:<12} {:>9.4f}  {}\n", s.problem, s.split, s.given,
                       s.suggested, s.score, s.path);
  }
  for (const std::string& f : result.files) out += "wrote " + f + "\n";
  if (!result.manifest.empty()) {
    out += fmt::format("moved {} files; undo: ltfit clean --undo {}\n", result.moves.size(),
                       result.manifest);
  }
  return out;
}

std::string clean_json(const CleanResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Suggestion& s : result.suggestions) {
    rows.push_back({{"path", s.path},
                    {"problem", s.problem},
                    {"split", s.split},
                    {"given", s.given},
                    {"suggested", s.suggested},
                    {"score", s.score},
                    {"detail", s.detail}});
  }
  nlohmann::json moves = nlohmann::json::array();
  for (const Move& m : result.moves) {
    moves.push_back({{"original", m.original}, {"moved_to", m.moved_to}, {"problem", m.problem}});
  }
  const nlohmann::json doc = {
      {"root", result.root},     {"out_dir", result.out_dir},
      {"images", result.images}, {"train_probabilities", result.train_probabilities},
      {"judged", result.judged}, {"mislabeled_fraction", result.flagged_fraction},
      {"suggestions", rows},     {"files", result.files},
      {"moves", moves},          {"manifest", result.manifest}};
  return dump_json(doc);
}

}  // namespace ltfit
