// `ltfit clean` end to end on a generated two-class set with planted problems: flipped labels,
// a cross-split leak, near and exact duplicates, unusable files; --folds, --apply, --undo, a
// read-only tree.
#include <unistd.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <random>
#include <set>

#include "model/archive_builders.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::run_ltfit;

namespace {

// A 64 px picture of random grey shapes tinted red or blue: the tint is the class, the shapes
// make every picture's perceptual hash its own.
cv::Mat tinted_picture(bool red, std::mt19937& rng) {
  std::uniform_int_distribution<int> pos(0, 63), grey(30, 225), radius(8, 24);
  cv::Mat gray(64, 64, CV_8UC1, cv::Scalar(grey(rng)));
  for (int s = 0; s < 4; ++s) {
    if (s % 2 == 0) {
      cv::circle(gray, {pos(rng), pos(rng)}, radius(rng), cv::Scalar(grey(rng)), cv::FILLED);
    } else {
      cv::rectangle(gray, cv::Rect(pos(rng), pos(rng), radius(rng) * 2, radius(rng)),
                    cv::Scalar(grey(rng)), cv::FILLED);
    }
  }
  cv::Mat bgr;
  cv::cvtColor(gray, bgr, cv::COLOR_GRAY2BGR);
  std::vector<cv::Mat> channels;
  cv::split(bgr, channels);
  // BGR: a red picture's red channel lifted and blue dimmed, the reverse for a blue one.
  channels[red ? 2 : 0] = channels[red ? 2 : 0] * 0.5 + 128;
  channels[red ? 0 : 2] *= 0.3;
  cv::merge(channels, bgr);
  return bgr;
}

struct PlantedSet {
  std::set<std::string> flipped;  // paths whose folder is the wrong class
  std::string leak, near_duplicate, exact_duplicate;
  std::set<std::string> unusable;
};

// <root>/{train,valid}/{blue,red}/: 50 + 15 pictures a class, 5 % of each split's labels
// flipped, and the planted duplicates and unusable files.
PlantedSet write_planted_set(const fs::path& root) {
  std::mt19937 rng(11);
  PlantedSet planted;
  for (const auto& [split, per_class] : {std::pair<std::string, int>{"train", 50}, {"valid", 15}}) {
    for (const std::string cls : {"blue", "red"}) fs::create_directories(root / split / cls);
    for (int i = 0; i < 2 * per_class; ++i) {
      const bool red = i % 2 == 1;
      const bool flip = i % 20 == 7;  // 5 %
      const std::string folder = (red != flip) ? "red" : "blue";
      const fs::path path = root / split / folder / (split + "_" + std::to_string(i) + ".jpg");
      REQUIRE(cv::imwrite(path.string(), tinted_picture(red, rng), {cv::IMWRITE_JPEG_QUALITY, 95}));
      if (flip) planted.flipped.insert(path.string());
    }
  }
  // A training picture again in validation, re-encoded at quality 60: a leak.
  const cv::Mat leaked = cv::imread((root / "train/blue/train_0.jpg").string());
  planted.leak = (root / "valid/blue/leaked.jpg").string();
  REQUIRE(cv::imwrite(planted.leak, leaked, {cv::IMWRITE_JPEG_QUALITY, 60}));
  // A training picture 1.5 times larger as a PNG in training, a validation JPEG copied byte for
  // byte.
  cv::Mat larger;
  cv::resize(cv::imread((root / "train/red/train_1.jpg").string()), larger, {96, 96});
  planted.near_duplicate = (root / "train/red/larger.png").string();
  REQUIRE(cv::imwrite(planted.near_duplicate, larger));
  planted.exact_duplicate = (root / "valid/red/copy.jpg").string();
  fs::copy_file(root / "valid/red/valid_1.jpg", planted.exact_duplicate);
  // Unusable: half a JPEG, an 8 px picture, a 400 x 20 strip.
  const std::string whole = ltfit::testing::read_file(root / "train/blue/train_2.jpg");
  ltfit::testing::write_file(root / "train/blue/truncated.jpg", whole.substr(0, whole.size() / 2));
  REQUIRE(cv::imwrite((root / "train/blue/tiny.png").string(),
                      tinted_picture(false, rng)(cv::Rect(0, 0, 8, 8))));
  cv::Mat strip;
  cv::resize(tinted_picture(true, rng), strip, {400, 20});
  REQUIRE(cv::imwrite((root / "train/red/strip.png").string(), strip));
  for (const char* f : {"train/blue/truncated.jpg", "train/blue/tiny.png", "train/red/strip.png"}) {
    planted.unusable.insert((root / f).string());
  }
  return planted;
}

fs::path train_planted(const ltfit::testing::TempDir& dir, const std::string& root) {
  const fs::path config = dir.path() / "clean.yaml";
  ltfit::testing::write_file(
      config, "run: {name: planted, out_dir: " + dir.str() + "/runs, seed: 3}\n" +
                  "data: {root: " + root + ", image_size: 32, batch_size: 16, workers: 2}\n" +
                  "model: {arch: resnet18, pretrained: none}\n" +
                  "train: {recipe: one_cycle, epochs: 2, lr: 2.0e-3, device: cpu}\n");
  // One intra-op thread: the flips surface (or are memorised) by a margin that two threads'
  // summation order changes on some CPUs (recall 0.43 with one, 0 with two, on the same seed).
  // Two epochs, not four: four memorised the flips on another CPU (recall 0.14, the same with
  // cleanlab's thresholds); two gave 0.57 there.
  const auto trained = run_ltfit("train --config " + config.string(), "OMP_NUM_THREADS=1");
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  return dir.path() / "runs/planted/checkpoints/last.ckpt";
}

std::set<std::string> rows_of(const nlohmann::json& j, const std::string& problem) {
  std::set<std::string> out;
  for (const auto& s : j["suggestions"]) {
    if (s["problem"] == problem) out.insert(s["path"].get<std::string>());
  }
  return out;
}

// Flipped files among the first 2 x (flipped) mislabeled rows, over the flipped.
double recall_at_twice(const nlohmann::json& j, const std::set<std::string>& flipped) {
  std::size_t seen = 0, found = 0;
  for (const auto& s : j["suggestions"]) {
    if (s["problem"] != "mislabeled" || seen == 2 * flipped.size()) continue;
    ++seen;
    found += flipped.count(s["path"].get<std::string>());
  }
  return static_cast<double>(found) / static_cast<double>(flipped.size());
}

std::set<std::string> files_under(const fs::path& root) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out.insert(e.path().string());
  }
  return out;
}

// A pretend --apply of `n` files: <base>/quarantine/data/f<i>.txt, listed in
// <base>/quarantine/manifest.csv against <base>/data/f<i>.txt (absolute paths, or relative to
// `base` when `relative`). Returns the manifest.
fs::path fake_quarantine(const fs::path& base, int n, bool relative = false) {
  std::string manifest = "original,moved_to,problem\n";
  const std::string prefix = relative ? "" : base.string() + "/";
  for (int i = 0; i < n; ++i) {
    const std::string name = "f" + std::to_string(i) + ".txt";
    ltfit::testing::write_file(base / "quarantine/data" / name, "file " + std::to_string(i));
    manifest += prefix + "data/" + name + "," + prefix + "quarantine/data/" + name + ",unusable\n";
  }
  fs::create_directories(base / "data");
  ltfit::testing::write_file(base / "quarantine/manifest.csv", manifest);
  return base / "quarantine/manifest.csv";
}

std::size_t files_in(const fs::path& dir) {
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("clean finds planted flipped labels and duplicates and a leak and unusable files",
          "[cli][clean]") {
  ltfit::testing::TempDir dir;
  const std::string root = dir.str() + "/colours";
  const PlantedSet planted = write_planted_set(root);
  const fs::path ckpt = train_planted(dir, root);
  const auto r =
      run_ltfit("clean --json --checkpoint " + ckpt.string() + " --out " + dir.str() + "/clean");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.stdout_text);
  CHECK(j["train_probabilities"] == "in-sample");
  CHECK(rows_of(j, "unusable") == planted.unusable);
  CHECK(rows_of(j, "leak") == std::set<std::string>{planted.leak});
  // One row per planted pair: the copy or its original (the first path of a group is kept).
  const std::set<std::string> duplicates = rows_of(j, "duplicate");
  CHECK(duplicates.size() == 2);
  for (const auto& [copy, original] :
       {std::pair<std::string, std::string>{planted.near_duplicate,
                                            root + "/train/red/train_1.jpg"},
        {planted.exact_duplicate, root + "/valid/red/valid_1.jpg"}}) {
    CHECK(duplicates.count(copy) + duplicates.count(original) == 1);
  }
  const double recall = recall_at_twice(j, planted.flipped);
  WARN("clean: recall of the " << planted.flipped.size() << " flipped labels among the top "
                               << 2 * planted.flipped.size() << " suggestions: " << recall);
  // In-sample training probabilities hide what the model memorised; confident learning on this
  // set (its thresholds near the model's 0.97 confidence) finds 3 of 7 here, as cleanlab does.
  CHECK(recall >= 0.25);
  for (const char* f : {"suggestions.csv", "probabilities.csv", "mislabeled.png", "duplicates.png",
                        "unusable.png"}) {
    CHECK(fs::exists(dir.path() / "clean" / f));
  }
  // cleanlab's find_label_issues on the same probabilities finds the same, each split judged on
  // its own (the default with in-sample training probabilities), and all together with --judge
  // together (skipped visibly without cleanlab).
  CHECK(j["judged"] == "per split");
  std::string flipped_list;
  for (const auto& f : planted.flipped) flipped_list += f + "\n";
  ltfit::testing::write_file(dir.path() / "flipped.txt", flipped_list);
  const auto together = run_ltfit("clean --json --judge together --kinds mislabeled --checkpoint " +
                                  ckpt.string() + " --out " + dir.str() + "/together");
  REQUIRE(together.exit_code == 0);
  CHECK(nlohmann::json::parse(together.stdout_text)["judged"] == "together");
  for (const auto& [out, flag] :
       {std::pair<std::string, std::string>{"clean", " --per-split"}, {"together", ""}}) {
    const auto [status, output] = ltfit::testing::run_command(
        "python3 " + (ltfit::testing::source_dir() / "tests/cli/clean_cleanlab.py").string() + " " +
        dir.str() + "/" + out + "/probabilities.csv " + dir.str() + "/flipped.txt " + dir.str() +
        "/" + out + "/suggestions.csv" + flag);
    INFO(output);
    if (status == 77) {
      WARN("cleanlab is not installed: the comparison with find_label_issues is skipped");
    } else {
      CHECK(status == 0);
      WARN(out << ": " << output);
    }
  }
  CHECK(run_ltfit("clean --judge sometimes --checkpoint " + ckpt.string()).exit_code == 2);
}

TEST_CASE(
    "clean --apply moves into quarantine and --undo moves back and a read-only tree moves nothing",
    "[cli][clean]") {
  ltfit::testing::TempDir dir;
  const std::string root = dir.str() + "/colours";
  write_planted_set(root);
  // A flagged symbolic link (to the truncated JPEG): moved as the link, and back.
  fs::create_symlink("truncated.jpg", fs::path(root) / "train/blue/zz_link.jpg");
  const fs::path ckpt = train_planted(dir, root);
  const std::set<std::string> before = files_under(root);
  // Read-only: root ignores permissions unless it gives up CAP_DAC_OVERRIDE.
  const std::string as_user =
      ::geteuid() == 0 ? "setpriv --bounding-set=-dac_override,-dac_read_search " : "";
  fs::permissions(fs::path(root) / "train/blue",
                  fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  const auto refused = run_ltfit("clean --apply --kinds unusable --checkpoint " + ckpt.string() +
                                     " --out " + dir.str() + "/c1",
                                 as_user);
  fs::permissions(fs::path(root) / "train/blue", fs::perms::owner_write, fs::perm_options::add);
  INFO(refused.output);
  CHECK(refused.exit_code == 5);
  CHECK_THAT(refused.output, Contains("nothing was moved"));
  CHECK(files_under(root) == before);
  // Writable: the unusable files go to quarantine, the rest stays; --undo brings them back.
  const auto applied = run_ltfit("clean --json --apply --kinds unusable --checkpoint " +
                                 ckpt.string() + " --out " + dir.str() + "/c2");
  INFO(applied.output);
  REQUIRE(applied.exit_code == 0);
  const auto j = nlohmann::json::parse(applied.stdout_text);
  REQUIRE(j["moves"].size() == 4);
  for (const auto& m : j["moves"]) {
    CHECK(!fs::exists(fs::symlink_status(m["original"].get<std::string>())));
    CHECK(fs::exists(fs::symlink_status(m["moved_to"].get<std::string>())));
    CHECK_THAT(m["moved_to"].get<std::string>(), Contains(dir.str() + "/c2/quarantine/train/"));
  }
  const fs::path quarantined_link = dir.path() / "c2/quarantine/train/blue/zz_link.jpg";
  CHECK(fs::is_symlink(quarantined_link));
  CHECK(fs::read_symlink(quarantined_link) == "truncated.jpg");
  CHECK(files_under(root).size() == before.size() - 4);
  // The manifest's paths are absolute: --undo works from any folder.
  const std::string manifest = ltfit::testing::read_file(j["manifest"].get<std::string>());
  CHECK_THAT(manifest, Contains("\n" + root + "/train/blue/zz_link.jpg," + dir.str() + "/c2/"));
  fs::create_directories(dir.path() / "elsewhere");
  const auto undone = run_ltfit("clean --undo " + j["manifest"].get<std::string>(),
                                "cd " + dir.str() + "/elsewhere &&");
  INFO(undone.output);
  CHECK(undone.exit_code == 0);
  CHECK_THAT(undone.stdout_text, Contains("moved 4 files back"));
  CHECK(files_under(root) == before);
  CHECK(fs::read_symlink(fs::path(root) / "train/blue/zz_link.jpg") == "truncated.jpg");
  // --relabel: the mislabeled files go into their suggested class folder; --undo again.
  const auto relabelled = run_ltfit(
      "clean --json --apply --relabel --kinds mislabeled "
      "--checkpoint " +
      ckpt.string() + " --out " + dir.str() + "/c3");
  INFO(relabelled.output);
  REQUIRE(relabelled.exit_code == 0);
  const auto k = nlohmann::json::parse(relabelled.stdout_text);
  REQUIRE(!k["moves"].empty());
  for (const auto& m : k["moves"]) {
    const fs::path from(m["original"].get<std::string>()), to(m["moved_to"].get<std::string>());
    CHECK(to.filename() == from.filename());
    CHECK(to.parent_path().parent_path() == from.parent_path().parent_path());  // same split
    CHECK(to.parent_path().filename() != from.parent_path().filename());        // other class
    CHECK(fs::exists(to));
  }
  REQUIRE(run_ltfit("clean --undo " + k["manifest"].get<std::string>()).exit_code == 0);
  CHECK(files_under(root) == before);
  // An output folder inside the dataset would be indexed by the next training: refused before
  // anything is written, whether given or the default ./clean of a run from the root.
  const auto inside =
      run_ltfit("clean --checkpoint " + ckpt.string() + " --out " + root + "/clean");
  INFO(inside.output);
  CHECK(inside.exit_code == 2);
  CHECK_THAT(inside.output, Contains("inside the dataset root"));
  fs::copy_file(ckpt, dir.path() / "model.ckpt");
  const auto from_root =
      run_ltfit("clean --checkpoint " + dir.str() + "/model.ckpt", "cd " + root + " &&");
  INFO(from_root.output);
  CHECK(from_root.exit_code == 2);
  CHECK(!fs::exists(fs::path(root) / "clean"));
  CHECK(files_under(root) == before);
  CHECK(run_ltfit("clean --relabel --checkpoint " + ckpt.string()).exit_code == 2);
  CHECK(run_ltfit("clean --filter-by typo --checkpoint " + ckpt.string()).exit_code == 2);
  CHECK(run_ltfit("clean --folds 1 --checkpoint " + ckpt.string()).exit_code == 2);
  CHECK(run_ltfit("clean --kinds typo --checkpoint " + ckpt.string()).exit_code == 2);
}

TEST_CASE("clean --folds cross-fits the training split with the checkpoint's recipe",
          "[cli][clean]") {
  ltfit::testing::TempDir dir;
  const std::string root = dir.str() + "/colours";
  const PlantedSet planted = write_planted_set(root);
  const fs::path ckpt = train_planted(dir, root);
  const auto r = run_ltfit("clean --json --folds 2 --checkpoint " + ckpt.string() + " --out " +
                           dir.str() + "/clean");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.stdout_text);
  CHECK(j["train_probabilities"] == "cross-fitted (2 folds)");
  for (const char* fold : {"fold-0", "fold-1"}) {
    CHECK(fs::exists(dir.path() / "clean/folds" / fold / "checkpoints/last.ckpt"));
  }
  const double recall = recall_at_twice(j, planted.flipped);
  WARN("clean --folds 2: recall of the flipped labels among the top " << 2 * planted.flipped.size()
                                                                      << ": " << recall);
  // Out of sample: 4 of 7 here, every one flagged a flipped label (cleanlab finds the same 4).
  CHECK(recall >= 0.5);
  std::size_t flagged = 0, right = 0;
  for (const auto& row : j["suggestions"]) {
    if (row["problem"] != "mislabeled") continue;
    ++flagged;
    right += planted.flipped.count(row["path"].get<std::string>());
  }
  CHECK(right >= flagged * 3 / 4);
}

TEST_CASE("clean of a multi-label checkpoint suggests label sets with flagged classes toggled",
          "[cli][clean][multi_label]") {
  ltfit::testing::TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() +
                    "/shapes --layout csv --task shapes --train 40 --valid 16 --seed 2")
              .exit_code == 0);
  const fs::path config = dir.path() / "shapes.yaml";
  ltfit::testing::write_file(
      config, "run: {name: shapes, out_dir: " + dir.str() + "/runs, seed: 3}\n" + "data: {root: " +
                  dir.str() + "/shapes, image_size: 32, batch_size: 8, workers: 2, layout: csv, " +
                  "csv: {valid_column: is_valid, label_delim: ' '}}\n" +
                  "model: {arch: resnet18, pretrained: none}\n" +
                  "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n");
  REQUIRE(run_ltfit("train --config " + config.string()).exit_code == 0);
  const auto r = run_ltfit("clean --json --folds 2 --checkpoint " + dir.str() +
                           "/runs/shapes/checkpoints/last.ckpt --out " + dir.str() + "/clean");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.stdout_text);
  CHECK(j["train_probabilities"] == "cross-fitted (2 folds)");
  // Every image judged, a probability per class (circle square star triangle).
  const std::string probs = ltfit::testing::read_file(dir.path() / "clean/probabilities.csv");
  CHECK(probs.rfind("path,split,given,prob_circle,prob_square,prob_star,prob_triangle\n", 0) == 0);
  CHECK(std::count(probs.begin(), probs.end(), '\n') == 1 + 56);
  std::size_t mislabeled = 0;
  for (const auto& s : j["suggestions"]) {
    if (s["problem"] != "mislabeled") continue;
    ++mislabeled;
    CHECK_THAT(s["detail"].get<std::string>(), Contains("classes "));
    CHECK(s["given"] != s["suggested"]);
  }
  WARN("clean, multi-label shapes (1 epoch, 2 folds): " << mislabeled << " of 56 images flagged");
}

TEST_CASE("clean --undo skips a move that never happened and names a deleted quarantined file",
          "[cli][clean]") {
  ltfit::testing::TempDir dir;
  const fs::path manifest = fake_quarantine(dir.path(), 3);
  // kill -9 during --apply: a line written whose move never happened, and a line cut short.
  const std::string intent = dir.str() + "/data/never_moved.txt";
  ltfit::testing::write_file(intent, "still here");
  std::string text = ltfit::testing::read_file(manifest);
  text += intent + "," + dir.str() + "/quarantine/data/never_moved.txt,unusable\n";
  text += dir.str() + "/data/cut";
  ltfit::testing::write_file(manifest, text);
  // A quarantined file the user deleted.
  fs::remove(dir.path() / "quarantine/data/f1.txt");
  const auto first = run_ltfit("clean --undo " + manifest.string());
  INFO(first.output);
  CHECK(first.exit_code == 3);
  CHECK_THAT(first.output, Contains(dir.str() + "/data/f1.txt"));
  CHECK_THAT(first.output, Contains("moved back 2, already in place 1"));
  CHECK(ltfit::testing::read_file(dir.path() / "data/f0.txt") == "file 0");
  CHECK(ltfit::testing::read_file(dir.path() / "data/f2.txt") == "file 2");
  CHECK(ltfit::testing::read_file(intent) == "still here");
  CHECK(fs::exists(manifest));  // kept: the missing file is reported again
  const auto again = run_ltfit("clean --undo " + manifest.string());
  INFO(again.output);
  CHECK(again.exit_code == 3);
  CHECK_THAT(again.output, Contains("moved back 0, already in place 3"));
  // The file found again: the rest is done and the manifest retired.
  ltfit::testing::write_file(dir.path() / "quarantine/data/f1.txt", "file 1");
  const auto last = run_ltfit("clean --undo " + manifest.string());
  INFO(last.output);
  CHECK(last.exit_code == 0);
  CHECK_THAT(last.stdout_text, Contains("moved 1 files back; 3 were already in place"));
  CHECK(fs::exists(manifest.string() + ".undone"));
  CHECK(files_in(dir.path() / "data") == 4);
  CHECK(files_in(dir.path() / "quarantine/data") == 0);
}

TEST_CASE("clean --undo reads an old manifest of relative paths from the folder apply ran in",
          "[cli][clean]") {
  ltfit::testing::TempDir dir;
  const fs::path manifest = fake_quarantine(dir.path(), 2, /*relative=*/true);
  const auto r = run_ltfit("clean --undo " + manifest.string(), "cd " + dir.str() + " &&");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(files_in(dir.path() / "data") == 2);
}

TEST_CASE("clean --undo stopped by SIGINT, SIGTERM or kill -9 strands nothing: a rerun finishes",
          "[cli][clean]") {
  for (const std::string signal : {"INT", "TERM", "KILL"}) {
    ltfit::testing::TempDir dir;
    constexpr int kFiles = 3000;
    const fs::path manifest = fake_quarantine(dir.path(), kFiles);
    // The last line is undone first: once its file is back, the undo is under way.
    const std::string first_back = dir.str() + "/data/f" + std::to_string(kFiles - 1) + ".txt";
    const std::string code = ltfit::testing::run_bash(
        dir.path(), "set -m\n" + std::string(LTFIT_BINARY) + " clean --undo " + manifest.string() +
                        " >/dev/null 2>&1 &\npid=$!\nwhile [ ! -e " + first_back +
                        " ] && kill -0 $pid 2>/dev/null; do :; done\nkill -" + signal +
                        " $pid\nwait $pid\necho $?\n");
    const std::size_t back = files_in(dir.path() / "data");
    WARN("clean --undo, SIG" << signal << ": exit " << code << " with " << back << " of " << kFiles
                             << " files back");
    const int status = std::stoi(code);
    CHECK((status == (signal == "KILL" ? 137 : 130) || status == 0));
    if (status != 0) {  // else it had finished before the signal came
      const auto rerun = run_ltfit("clean --undo " + manifest.string());
      INFO(rerun.output);
      CHECK(rerun.exit_code == 0);
    }
    CHECK(files_in(dir.path() / "data") == kFiles);
    CHECK(files_in(dir.path() / "quarantine/data") == 0);
  }
}
