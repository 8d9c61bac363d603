// Experiment plans and study files: the shipped ones load and say what the study did; mistakes
// are ConfigErrors naming file:line and key.
#include <catch2/catch.hpp>

#include "ltfit/config/config_loader.h"
#include "ltfit/study/experiment.h"
#include "ltfit/study/experiment_plan.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

using Catch::Matchers::Contains;
using ltfit::ConfigError;

namespace {

std::string value_of(const std::vector<ltfit::Override>& overrides, const std::string& key) {
  for (const auto& o : overrides)
    if (o.key == key) return o.value;
  return "<absent>";
}

// The ConfigError message parsing `yaml` as a plan raises ("" when none).
std::string plan_error(const std::string& yaml) {
  try {
    ltfit::parse_experiment_plan(yaml, "plan.yaml", "/plans");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

const char* const kStudy =
    "title: t\ntrain_images: 10\nvalid_images: 4\n"
    "platforms:\n  - {id: a, name: A}\n  - {id: b, name: B}\n"
    "runs:\n  - id: r1\n    times: {a: \"10:00\", b: \"crashed: no memory\"}\n";

}  // namespace

TEST_CASE("the shipped Kaggle-vs-Colab plan loads with the study's figures", "[experiment]") {
  const auto dir = ltfit::testing::source_dir() / "configs" / "experiments";
  const auto plan = ltfit::load_experiment_plan((dir / "kaggle_vs_colab.yaml").string());
  CHECK(plan.name == "kaggle_vs_colab");
  CHECK(plan.base == (ltfit::testing::source_dir() / "configs" / "cats_dogs.yaml").string());
  REQUIRE(plan.runs.size() >= 6);
  REQUIRE(plan.study.platforms.size() == 2);
  CHECK(plan.study.platforms[0].software == "CUDA 9.2.148, cuDNN 7.4.1");
  CHECK(plan.study.platforms[1].gpu_memory == "11.17 GiB (12.0 GB)");
  CHECK(plan.study.train_images == 23000);
  CHECK(plan.study.valid_images == 2000);
  const ltfit::StudyRun* first = plan.study.find("e3_bs16_fp32");
  REQUIRE(first != nullptr);
  CHECK(first->times[0].seconds == Approx(11 * 60 + 17));
  CHECK(first->times[1].seconds == Approx(19 * 60 + 54));
  const ltfit::StudyRun* bs64 = plan.study.find("e2_bs64_fp32");
  REQUIRE(bs64 != nullptr);
  CHECK_FALSE(bs64->times[0].seconds.has_value());
  CHECK_THAT(bs64->times[0].text, Contains("/dev/shm"));
  CHECK(plan.study.find("e2_bs256_fp32")->times[1].seconds == Approx(18 * 60 + 38));

  // Every run resolves against the base config to the study's recipe.
  for (const auto& run : plan.runs) {
    INFO(run.id);
    const auto config = ltfit::load_config(plan.base, ltfit::run_overrides(plan, run, {}));
    CHECK(config.train.recipe == ltfit::Recipe::kOneCycle);
    CHECK(config.train.frozen);
    CHECK(config.train.lr == std::vector<double>{3.0e-3});
    CHECK(config.eval.tta);
    CHECK(config.eval.tta_mode == ltfit::TtaMode::kV1);
    CHECK(config.run.seed == 42);
  }
  const auto fp16 = ltfit::load_config(plan.base, ltfit::run_overrides(plan, plan.runs[1], {}));
  CHECK(fp16.train.precision == ltfit::Precision::kFp16);
  CHECK(fp16.train.epochs == 3);
  CHECK(fp16.data.batch_size == 16);
}

TEST_CASE("the shipped CIFAR-10 plan loads with the guides' figures, both stems and precisions",
          "[experiment][cifar]") {
  const auto dir = ltfit::testing::source_dir() / "configs" / "experiments";
  const auto plan = ltfit::load_experiment_plan((dir / "cifar10_guides.yaml").string());
  CHECK(plan.name == "cifar10_guides");
  CHECK(plan.base == (ltfit::testing::source_dir() / "configs" / "cifar10.yaml").string());
  REQUIRE(plan.study.platforms.size() == 5);
  CHECK(plan.study.train_images == 50000);
  CHECK(plan.study.valid_images == 10000);
  const ltfit::StudyRun* r50 = plan.study.find("r50_bs128_e50");
  REQUIRE(r50 != nullptr);
  CHECK(r50->times[0].seconds == Approx(37 * 60));
  CHECK(r50->times[1].seconds == Approx(40 * 60));
  CHECK_THAT(r50->times[1].text, Contains("restarted from zero"));
  CHECK(r50->times[2].seconds == Approx(35 * 60));
  const ltfit::StudyRun* r18 = plan.study.find("r18_adam_bs128_e10");
  REQUIRE(r18 != nullptr);
  CHECK(r18->times[3].seconds == Approx(2 * 3600));
  CHECK(r18->times[4].seconds == Approx(7 * 60 + 50));

  int cifar_stems = 0, imagenet_stems = 0, half = 0, cut = 0;
  for (const auto& run : plan.runs) {
    INFO(run.id);
    const auto config = ltfit::load_config(plan.base, ltfit::run_overrides(plan, run, {}));
    CHECK(config.data.layout == ltfit::DataLayout::kCifar10);
    CHECK(config.data.cache == ltfit::DataCache::kDevice);
    CHECK(config.data.batch_size == 128);
    CHECK(config.data.image_size == 32);
    CHECK(config.model.pretrained.kind == ltfit::PretrainedWeights::Kind::kNone);
    const bool r50_run = run.study_run == "r50_bs128_e50";
    CHECK(config.model.arch == (r50_run ? "resnet50" : "resnet18"));
    CHECK(config.train.epochs == (r50_run ? 50 : 10));
    cifar_stems += config.model.stem == ltfit::Stem::kCifar;
    imagenet_stems += config.model.stem == ltfit::Stem::kImagenet;
    half += config.train.precision == ltfit::Precision::kFp16 ||
            config.train.precision == ltfit::Precision::kBf16;
    if (run.kill_at_epoch) {  // the run killed mid-run and resumed, as Colab's was cut
      ++cut;
      CHECK(run.study_run == "r50_bs128_e50");
      CHECK(*run.kill_at_epoch == 25.5);
      CHECK_FALSE(run.gpus.given);
    }
  }
  CHECK(imagenet_stems == 1);
  CHECK(cifar_stems == static_cast<int>(plan.runs.size()) - 1);
  CHECK(half == 3);
  CHECK(cut == 1);
}

TEST_CASE("the shipped plan has 1, 2 and all-GPU rows at one global batch beside the 2xT4 1.8x",
          "[experiment][study]") {
  const auto dir = ltfit::testing::source_dir() / "configs" / "experiments";
  const auto plan = ltfit::load_experiment_plan((dir / "kaggle_vs_colab.yaml").string());
  std::vector<const ltfit::PlanRun*> scaling;
  for (const auto& run : plan.runs)
    if (run.gpus.given) scaling.push_back(&run);
  REQUIRE(scaling.size() == 3);
  CHECK(scaling[0]->gpus.text() == "1");
  CHECK(scaling[1]->gpus.text() == "2");
  CHECK(scaling[2]->gpus.all);
  for (const auto* run : scaling) {
    INFO(run->id);
    const auto config = ltfit::load_config(plan.base, ltfit::run_overrides(plan, *run, {}));
    CHECK(config.train.precision == ltfit::Precision::kFp16);
    CHECK(config.data.batch_size == 64);  // the global batch, the same on every row
    CHECK(config.train.epochs == 2);
    CHECK(config.model.arch == "resnet34");
  }
  // Runs without the key keep today's single process.
  CHECK_FALSE(plan.runs[0].gpus.given);
  CHECK(plan.runs[0].gpus.resolve(8) == 0);
  REQUIRE(plan.study.scaling.size() == 1);
  CHECK(plan.study.scaling[0].gpus == 2);
  CHECK(plan.study.scaling[0].speedup == Approx(1.8));
  CHECK_THAT(plan.study.scaling[0].platform, Contains("T4"));
  CHECK_THAT(plan.study.scaling[0].source, Contains("Kaggle GPU guide that accompanied the study"));
}

TEST_CASE("a plan run's gpus: is a count of GPUs or all - anything else names file:line and key",
          "[experiment][study]") {
  const auto plan = ltfit::parse_experiment_plan(
      "name: p\nbase: b.yaml\nruns:\n  - {id: a}\n  - {id: b, gpus: 1}\n"
      "  - {id: c, gpus: 2}\n  - {id: d, gpus: all}\n  - {id: e, gpus: null}\n",
      "plan.yaml", "");
  REQUIRE(plan.runs.size() == 5);
  CHECK_FALSE(plan.runs[0].gpus.given);
  CHECK(plan.runs[1].gpus.text() == "1");
  CHECK(plan.runs[2].gpus.resolve(8) == 2);
  CHECK(plan.runs[3].gpus.all);
  CHECK(plan.runs[3].gpus.resolve(8) == 8);
  CHECK(plan.runs[3].gpus.resolve(0) == 0);
  CHECK_FALSE(plan.runs[4].gpus.given);

  for (const std::string bad : {"0", "-2", "two", "1.5", "'2'", "All", "[2]", "{n: 2}", "1025"}) {
    INFO(bad);
    CHECK_THAT(
        plan_error("name: p\nbase: b.yaml\nruns:\n  - id: a\n  - id: b\n    gpus: " + bad + "\n"),
        Contains("plan.yaml:6: runs[1].gpus: expected a number of GPUs from 1 to 1024 or "
                 "all, got"));
  }
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nruns:\n  - id: a\n    gpu: 2\n"),
             Contains("plan.yaml:5") && Contains("runs[0].gpu") && Contains("did you mean 'gpus'"));
}

TEST_CASE("a plan run's kill_at_epoch: a number of epochs >= 1 on a single-process run",
          "[experiment][study]") {
  const auto plan = ltfit::parse_experiment_plan(
      "name: p\nbase: b.yaml\nruns:\n  - {id: a}\n  - {id: b, kill_at_epoch: 25.5}\n"
      "  - {id: c, kill_at_epoch: 2, gpus: 1}\n  - {id: d, kill_at_epoch: null}\n",
      "plan.yaml", "");
  REQUIRE(plan.runs.size() == 4);
  CHECK_FALSE(plan.runs[0].kill_at_epoch);
  CHECK(plan.runs[1].kill_at_epoch == 25.5);
  CHECK(plan.runs[2].kill_at_epoch == 2.0);
  CHECK_FALSE(plan.runs[3].kill_at_epoch);
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nruns:\n  - id: a\n    kill_at_epoch: 0.5\n"),
             Contains("runs[0].kill_at_epoch: expected a number of epochs >= 1 (25.5: halfway "
                      "through the 26th epoch), got 0.5"));
  for (const std::string bad : {"0.5", "0", "-1", ".nan", ".inf", "half", "[2]", "'2'"}) {
    INFO(bad);
    CHECK_THAT(
        plan_error("name: p\nbase: b.yaml\nruns:\n  - id: a\n    kill_at_epoch: " + bad + "\n"),
        Contains("plan.yaml:5: runs[0].kill_at_epoch: expected a number"));
  }
  for (const std::string gpus : {"2", "all"}) {
    CHECK_THAT(
        plan_error("name: p\nbase: b.yaml\nruns:\n  - {id: a, gpus: " + gpus +
                   ", kill_at_epoch: 2}\n"),
        Contains("runs[0].kill_at_epoch: is for a single-process run, not one with gpus: " + gpus));
  }
}

TEST_CASE("a study file's scaling: figures and their mistakes", "[experiment][study]") {
  const std::string with =
      std::string(kStudy) +
      "scaling:\n  - {platform: 2x T4, gpus: 2, speedup: 1.8, source: a guide}\n";
  const auto study = ltfit::parse_study_figures(with, "study.yaml");
  REQUIRE(study.scaling.size() == 1);
  CHECK(study.scaling[0].platform == "2x T4");
  CHECK(study.scaling[0].speedup == Approx(1.8));
  CHECK(study.scaling[0].note.empty());
  CHECK(ltfit::parse_study_figures(kStudy, "study.yaml").scaling.empty());

  const auto error = [&](const std::string& item) {
    try {
      ltfit::parse_study_figures(std::string(kStudy) + "scaling:\n  - " + item + "\n",
                                 "study.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(error("{platform: p, gpus: 1, speedup: 1.8, source: s}"),
             Contains("study.yaml:11: scaling[0].gpus") && Contains("from 2"));
  CHECK_THAT(error("{platform: p, gpus: 2, speedup: -1, source: s}"),
             Contains("scaling[0].speedup") && Contains("positive"));
  CHECK_THAT(error("{platform: p, gpus: 2, source: s}"),
             Contains("scaling[0].speedup") && Contains("required"));
  CHECK_THAT(error("{platform: p, gpus: 2, speedup: 1.8, source: s, speed: 2}"),
             Contains("scaling[0].speed") && Contains("did you mean"));
}

TEST_CASE("plan set: values become --set text, in order", "[experiment]") {
  const auto plan = ltfit::parse_experiment_plan(
      "name: p\nbase: base.yaml\nset: {train.lr: [1.0e-5, 1.0e-3]}\n"
      "runs:\n  - id: a\n    label: A\n    set: {data.root: 'x: y', data.batch_size: 64}\n"
      "  - id: b\n",
      "plan.yaml", "/plans");
  CHECK(plan.base == "/plans/base.yaml");
  CHECK(plan.study.source.empty());
  CHECK(value_of(plan.overrides, "train.lr") == "[1.0e-5, 1.0e-3]");
  REQUIRE(plan.runs.size() == 2);
  CHECK(plan.runs[0].label == "A");
  CHECK(plan.runs[1].label == "b");  // the id when no label
  CHECK(plan.runs[0].line == 5);
  REQUIRE(plan.runs[0].overrides.size() == 2);
  CHECK(plan.runs[0].overrides[0].key == "data.root");
  CHECK(plan.runs[0].overrides[0].value == "'x: y'");  // quoted stays a string
  CHECK(plan.runs[0].overrides[1].value == "64");
  // --set order: the plan's set:, then the command line's, then the run's own.
  const auto all = ltfit::run_overrides(plan, plan.runs[0], {{"data.batch_size", "8"}});
  REQUIRE(all.size() == 4);
  CHECK(all[0].key == "train.lr");
  CHECK(all[1].value == "8");
  CHECK(all[3].value == "64");
}

TEST_CASE("plan mistakes name the file, the line and the key", "[experiment]") {
  CHECK_THAT(
      plan_error("name: p\nbase: b.yaml\nruns:\n  - id: a\n    lable: A\n"),
      Contains("plan.yaml:5") && Contains("runs[0].lable") && Contains("did you mean 'label'"));
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nrun:\n  - id: a\n"),
             Contains("plan.yaml:3") && Contains("run") && Contains("did you mean 'runs'"));
  CHECK_THAT(plan_error("name: p\nruns:\n  - id: a\n"), Contains("base") && Contains("required"));
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nruns:\n  - id: a\n  - id: a\n"),
             Contains("plan.yaml:5") && Contains("duplicate run id 'a'"));
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nruns:\n  - id: ../x\n"),
             Contains("runs[0].id") && Contains("'../x'"));
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nruns: []\n"), Contains("non-empty list"));
}

TEST_CASE("a key written twice in a plan or a study file is a ConfigError at its second line",
          "[experiment][study]") {
  // yaml-cpp keeps both entries and a look-up finds the first: read naively, the second label or
  // batch size would be dropped without a word.
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nruns:\n  - id: a\n    label: A\n    label: B\n"),
             Contains("plan.yaml:6: runs[0].label: duplicate key"));
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nset:\n  data.batch_size: 8\n"
                        "  data.batch_size: 64\nruns:\n  - id: a\n"),
             Contains("plan.yaml:5: set.data.batch_size: duplicate key"));
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nruns:\n  - id: a\nbase: c.yaml\n"),
             Contains("plan.yaml:5: base: duplicate key"));
  std::string twice = kStudy;
  twice.replace(twice.find("b: \"crashed"), 1, "a");
  CHECK_THROWS_WITH(ltfit::parse_study_figures(twice, "study.yaml"),
                    Contains("study.yaml:9: runs[0].times.a: duplicate key"));
}

TEST_CASE("bad override values in a plan are ConfigErrors at their line", "[experiment]") {
  // A nested map is no --set value: nested keys are written dotted.
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nruns:\n  - id: a\n    set:\n"
                        "      data.augment: {flip: false}\n"),
             Contains("plan.yaml:6") && Contains("runs[0].set.data.augment") &&
                 Contains("expected a value or a list of values"));
  CHECK_THAT(
      plan_error("name: p\nbase: b.yaml\nruns:\n  - id: a\n    set:\n      batch_size: 64\n"),
      Contains("plan.yaml:6") && Contains("dotted config key"));
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nruns:\n  - id: a\n    set: [data.batch_size]\n"),
             Contains("plan.yaml:5") && Contains("runs[0].set"));
  CHECK_THAT(plan_error("name: p\nbase: b.yaml\nset: {train.lr: [[1]]}\nruns:\n  - id: a\n"),
             Contains("plan.yaml:3") && Contains("set.train.lr"));
}

TEST_CASE("study files: times, notes, and mistakes", "[experiment]") {
  const auto study = ltfit::parse_study_figures(kStudy, "study.yaml");
  REQUIRE(study.runs.size() == 1);
  CHECK(study.runs[0].label == "r1");
  CHECK(study.runs[0].times[0].seconds == Approx(600));
  CHECK_FALSE(study.runs[0].times[1].seconds.has_value());
  CHECK(study.runs[0].times[1].text == "crashed: no memory");

  std::string bad = kStudy;
  bad.replace(bad.find("b: \"crashed"), 1, "c");
  CHECK_THROWS_WITH(ltfit::parse_study_figures(bad, "study.yaml"),
                    Contains("study.yaml:9") && Contains("runs[0].times.c"));

  ltfit::ExperimentPlan plan = ltfit::parse_experiment_plan(
      "name: p\nbase: b.yaml\nruns:\n  - id: a\n  - id: b\n    study_run: r2\n", "plan.yaml", "");
  CHECK_THROWS_WITH(ltfit::check_study_links(plan, study),
                    Contains("plan.yaml:5") && Contains("'r2'") && Contains("did you mean 'r1'"));
  plan.runs[1].study_run = "r1";
  CHECK_NOTHROW(ltfit::check_study_links(plan, study));
}

TEST_CASE("leading mm:ss of a study figure", "[experiment]") {
  CHECK(ltfit::parse_leading_mm_ss("11:17") == Approx(677));
  CHECK(ltfit::parse_leading_mm_ss("18:38 at the memory limit") == Approx(1118));
  CHECK(ltfit::parse_leading_mm_ss("1:02:03") == Approx(3723));
  CHECK_FALSE(ltfit::parse_leading_mm_ss("—").has_value());
  CHECK_FALSE(ltfit::parse_leading_mm_ss("crashed: 11:17").has_value());
  CHECK_FALSE(ltfit::parse_leading_mm_ss("11:77").has_value());
  CHECK_FALSE(ltfit::parse_leading_mm_ss("11").has_value());
  CHECK_FALSE(ltfit::parse_leading_mm_ss("11:17x").has_value());
}
