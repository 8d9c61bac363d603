// `ltfit clean`'s work: see clean_job.h. The label check, cross-fitting, moves and reports are in
// clean_*.cpp.
#include "ltfit/jobs/clean_job.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <map>

#include "clean_parts.h"
#include "ltfit/config/config.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/data/duplicates.h"
#include "ltfit/data/image_problems.h"
#include "ltfit/eval/label_issues.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/jobs/train_job.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/output_dir.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

const std::vector<std::string>& clean_kind_names() {
  static const std::vector<std::string> names{"mislabeled", "duplicate", "leak", "unusable"};
  return names;
}

void check_clean_request(const CleanRequest& r) {
  for (const std::string& kind : r.kinds) {
    if (std::find(clean_kind_names().begin(), clean_kind_names().end(), kind) ==
        clean_kind_names().end()) {
      throw ConfigError("--kinds: unknown problem kind '" + kind + "'",
                        "choose among " + join(clean_kind_names(), ", "));
    }
  }
  if (r.folds < 0 || r.folds == 1 || r.folds > 20) {
    throw ConfigError("--folds " + std::to_string(r.folds) + ": cross-fitting needs 2 to 20 folds",
                      "pass --folds 5, or leave it out for in-sample training probabilities");
  }
  if (r.max_distance < 0 || r.max_distance > 32) {
    throw ConfigError("--max-distance " + std::to_string(r.max_distance) +
                          ": a perceptual hash has 64 bits; near copies differ in a few",
                      "pass 0 (identical hashes) to 32; default 6");
  }
  const std::vector<std::string>& filters = label_issue_filters();
  if (std::find(filters.begin(), filters.end(), r.filter_by) == filters.end()) {
    throw ConfigError("--filter-by: unknown filter '" + r.filter_by + "'",
                      "choose among " + join(filters, ", ") + " (docs/clean.md compares them)");
  }
  if (r.judge != "auto" && r.judge != "per_split" && r.judge != "together") {
    throw ConfigError("--judge: unknown '" + r.judge + "'",
                      "choose among auto, per_split, together (docs/clean.md compares them)");
  }
  if (r.relabel && !r.apply) {
    throw ConfigError("--relabel moves files, which only --apply does",
                      "add --apply, or leave --relabel out to only list the suggestions");
  }
}

// Exit 2 when a file clean writes into `out` is one it reads (`inputs`).
void check_clean_outputs(const CleanRequest& request, const fs::path& out,
                         const std::vector<CommandInput>& inputs) {
  check_outputs_not_inputs(
      out,
      {"suggestions.csv", "probabilities.csv", "mislabeled.png", "duplicates.png", "unusable.png",
       "folds", "quarantine", "quarantine/manifest.csv"},
      request.out.empty() ? "the clean output folder" : "the clean output folder (--out)", inputs);
}

// The output folder must not lie inside the dataset: the next training would index the
// quarantine and the pictures (a class folder "clean" of the folders layout).
void check_out_outside_root(const fs::path& out, const std::string& root, bool given) {
  std::error_code error, root_error;
  const fs::path o = fs::weakly_canonical(fs::absolute(out), error);
  const fs::path r = fs::weakly_canonical(fs::absolute(root), root_error);
  const fs::path rel = o.lexically_relative(r);
  if (error || root_error || rel.empty() || rel.begin()->string() == "..") return;
  throw ConfigError(std::string(given ? "--out '" : "the default output folder '") + out.string() +
                        "' is inside the dataset root '" + root + "'",
                    std::string(given ? "pass an --out outside it"
                                      : "run clean from another folder, or pass --out") +
                        ": the next training would take the quarantine and the pictures for data");
}

fs::path clean_out_dir(const CleanRequest& request) {
  if (!request.out.empty()) return request.out;
  const std::optional<std::string> run = run_dir_of_checkpoint(request.checkpoint);
  return run ? fs::path(*run) / "clean" : fs::path("clean");
}

std::vector<CleanSample> clean_samples(const DatasetIndex& index) {
  std::vector<CleanSample> all;
  for (const Sample& s : index.train) all.push_back({s, "train"});
  for (const Sample& s : index.valid) all.push_back({s, "valid"});
  return all;
}

// Unusable files: a row each; the usable ones' positions are returned.
std::vector<std::size_t> find_unusable(const std::vector<CleanSample>& all,
                                       const std::vector<std::string>& classes,
                                       const DataConfig& data, bool multi_label,
                                       std::vector<Suggestion>& out) {
  ImageProblemLimits limits;
  limits.image = image_limits(data);
  std::vector<std::size_t> usable;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const ImageCheck check = check_image_file(all[i].sample, limits);
    if (check.problem == ImageProblem::kNone) {
      usable.push_back(i);
      continue;
    }
    out.push_back(
        {all[i].sample.path,
         "unusable",
         all[i].split,
         given_labels(classes, all[i].sample, multi_label),
         "",
         0.0,
         image_problem_name(check.problem) + (check.detail.empty() ? "" : ": ") + check.detail,
         all[i].sample.image,
         {}});
  }
  return usable;
}

// Duplicate and leak rows from the perceptual and content hashes of the usable images.
void find_duplicate_rows(const std::vector<CleanSample>& all,
                         const std::vector<std::size_t>& usable,
                         const std::vector<std::string>& classes, const DataConfig& data,
                         bool multi_label, int max_distance, std::vector<Suggestion>& out) {
  std::vector<ImageInput> inputs;
  for (const std::size_t i : usable) inputs.emplace_back(all[i].sample);
  const std::vector<ImageFingerprint> prints =
      fingerprint_images(inputs, 0, {}, image_limits(data));
  for (const DuplicateGroup& group : find_duplicates(prints, max_distance)) {
    std::vector<std::int64_t> members = group.members;
    const auto split_of = [&](std::int64_t m) { return all[usable[static_cast<size_t>(m)]].split; };
    // Kept: the first training member (the first member when none is in training).
    std::stable_partition(members.begin(), members.end(),
                          [&](std::int64_t m) { return split_of(m) == "train"; });
    const ImageFingerprint& kept = prints[static_cast<std::size_t>(members.front())];
    const SampleImage& kept_image =
        all[usable[static_cast<std::size_t>(members.front())]].sample.image;
    const bool leak = split_of(members.front()) == "train" && split_of(members.back()) == "valid";
    for (std::size_t j = 1; j < members.size(); ++j) {
      const CleanSample& s = all[usable[static_cast<std::size_t>(members[j])]];
      const ImageFingerprint& p = prints[static_cast<std::size_t>(members[j])];
      const bool exact = p.sha256 == kept.sha256;
      const int distance = exact ? 0 : std::popcount(p.phash ^ kept.phash);
      const bool is_leak = leak && s.split == "valid";
      out.push_back({s.sample.path, is_leak ? "leak" : "duplicate", s.split,
                     given_labels(classes, s.sample, multi_label), "",
                     static_cast<double>(distance),
                     std::string(exact ? "same bytes as " : "near copy of ") + kept.path,
                     s.sample.image, kept_image});
    }
  }
}

// The checkpoint's config (of its metadata `meta`), its data.root replaced by --data when given.
Config clean_config(const CleanRequest& request, const CheckpointMeta& meta) {
  Config config = load_config_from_string(meta.config_yaml, request.checkpoint + " (config)");
  if (!request.data.empty()) config.data.root = request.data;
  config.data.subset = 1.0;  // every image is judged
  return config;
}

void write_clean_files(const fs::path& out, const DataConfig& data, CleanResult& result) {
  create_output_dir(out, "clean output folder");
  const std::string suggestions_csv_text = suggestions_csv(result.suggestions);
  for (const auto& [name, text] :
       {std::pair<std::string, const std::string*>{"suggestions.csv", &suggestions_csv_text},
        {"probabilities.csv", &result.probabilities_csv}}) {
    const std::string path = (out / name).string();
    write_text_atomic(path, *text);
    result.files.push_back(path);
  }
  for (const std::string kind : {"mislabeled", "duplicate", "unusable"}) {
    std::vector<Suggestion> rows;
    for (const Suggestion& s : result.suggestions) {
      const bool duplicate_kind = kind == std::string("duplicate") && s.problem == "leak";
      if (s.problem == kind || duplicate_kind) rows.push_back(s);
    }
    const std::optional<EncodedPng> png = suggestions_png(rows, kind, image_limits(data));
    if (!png) continue;
    const std::string path =
        (out / (std::string(kind) + (kind == std::string("duplicate") ? "s" : "") + ".png"))
            .string();
    write_file_atomic(path, png->bytes);
    result.files.push_back(path);
  }
}

}  // namespace

CleanResult run_clean_job(const CleanRequest& request) {
  check_clean_request(request);
  const fs::path out = clean_out_dir(request);
  check_clean_outputs(request, out, {{"the checkpoint (--checkpoint)", request.checkpoint}});
  check_output_file(out / "suggestions.csv",
                    request.out.empty() ? "clean output folder" : "clean output folder (--out)");
  const CheckpointMeta meta = read_checkpoint_meta(request.checkpoint);
  const Config config = clean_config(request, meta);
  check_clean_outputs(request, out, config_inputs(config));
  check_out_outside_root(out, config.data.root, !request.out.empty());
  const DatasetIndex index = index_dataset(config.data, config.run.seed, is_multi_label(config));
  if (meta.classes != index.classes) {
    throw ConfigError("clean: the classes of '" + config.data.root + "' (" +
                          join(index.classes, ", ") + ") are not those of checkpoint '" +
                          request.checkpoint + "' (" + join(meta.classes, ", ") + ")",
                      "pass the dataset the checkpoint was trained on as --data");
  }
  // --apply moves image files: records held in memory (CIFAR's) or members of other files (tar
  // shards') are refused before any work.
  const auto held = [](const Sample& s) { return !is_image_file(s); };
  if (request.apply && (std::any_of(index.train.begin(), index.train.end(), held) ||
                        std::any_of(index.valid.begin(), index.valid.end(), held))) {
    throw ConfigError(
        "clean --apply moves image files, and layout " + index.layout +
            " holds its images inside other files (records of batch files, members of shards); "
            "nothing was moved",
        "drop --apply: suggestions.csv names each record (<file>#<record>) to "
        "leave out or relabel");
  }
  CleanResult result;
  result.root = config.data.root;
  result.out_dir = out.string();
  const std::vector<CleanSample> all = clean_samples(index);
  result.images = static_cast<std::int64_t>(all.size());
  spdlog::info("clean: {} images of {} classes in {}", all.size(), index.classes.size(),
               config.data.root);
  const std::vector<std::size_t> usable =
      find_unusable(all, index.classes, config.data, index.multi_label, result.suggestions);
  find_duplicate_rows(all, usable, index.classes, config.data, index.multi_label,
                      request.max_distance, result.suggestions);
  find_mislabeled_rows(request, config, all, usable, index.classes, out, result);
  write_clean_files(out, config.data, result);
  if (request.apply) apply_clean(request, config.data.root, index.layout, result);
  return result;
}

}  // namespace ltfit
