// resolve_resume: what train's --config, --set, --run-dir and --resume (auto | CKPT) mean, with
// the checkpoint and config files they name generated here: which config the run trains with,
// where it writes, which checkpoint it continues, and the errors (codes, messages, and which
// comes first when several inputs are wrong).
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <filesystem>

#include "ltfit/jobs/resume.h"
#include "ltfit/jobs/train_job.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

namespace fs = std::filesystem;
using Catch::Contains;
using ltfit::CheckpointError;
using ltfit::ConfigError;
using ltfit::resolve_resume;
using ltfit::TrainRequest;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

// A config naming run `name` in `out` (data.root need not exist: nothing is trained).
std::string config_yaml(const std::string& name, const fs::path& out, int batch_size) {
  return "run: {name: " + name + ", out_dir: \"" + out.string() + "\", seed: 5}\n" +
         "data: {root: /nonexistent/data, image_size: 32, batch_size: " +
         std::to_string(batch_size) + "}\n" +
         "model: {arch: resnet18, pretrained: none}\ntrain: {epochs: 1, device: cpu}\n";
}

// A checkpoint at `path` whose embedded config is run `name` in `out`, batch size 24, with an
// optimizer's state (a run can continue from it) unless `weights_only`; `epochs_done` of the
// config's one epoch.
void write_checkpoint(const fs::path& path, const std::string& name, const fs::path& out,
                      bool weights_only = false, int epochs_done = 0) {
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  torch::optim::AdamW optimizer(model->parameters());
  ltfit::CheckpointMeta meta;
  meta.config_yaml = config_yaml(name, out, 24);
  meta.classes = {"cat", "dog"};
  meta.global_step = 3;
  meta.epochs_done = epochs_done;
  fs::create_directories(path.parent_path());
  ltfit::save_checkpoint(path.string(), model, weights_only ? nullptr : &optimizer, meta);
}

// The ConfigError `request` ends in (fails the test if it resolves).
ConfigError config_error_of(const TrainRequest& request) {
  try {
    resolve_resume(request);
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("resolved without a ConfigError");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("the --resume text is parsed once: none, auto or a checkpoint file", "[jobs]") {
  using Kind = ltfit::ResumeRequest::Kind;
  CHECK(ltfit::parse_resume_request("") == ltfit::ResumeRequest{});
  CHECK(ltfit::parse_resume_request("auto") == ltfit::ResumeRequest{Kind::kAuto, ""});
  CHECK(ltfit::parse_resume_request("run/checkpoints/last.ckpt") ==
        ltfit::ResumeRequest{Kind::kCheckpoint, "run/checkpoints/last.ckpt"});
  CHECK(ltfit::parse_resume_request("./auto") == ltfit::ResumeRequest{Kind::kCheckpoint, "./auto"});
}

TEST_CASE("resolve_resume without --resume: --config (+ --set), --run-dir if given", "[jobs]") {
  TempDir dir;
  write_file(dir.path() / "c.yaml", config_yaml("fresh", dir.path() / "runs", 16));
  TrainRequest request;
  request.config = (dir.path() / "c.yaml").string();
  request.sets = {"data.batch_size=48"};
  auto resolved = resolve_resume(request);
  CHECK(resolved.config.run.name == "fresh");
  CHECK(resolved.config.data.batch_size == 48);
  CHECK_FALSE(resolved.options.run_dir);  // run_train_job numbers <out_dir>/<name>[-N]
  CHECK_FALSE(resolved.options.resume);
  CHECK_FALSE(resolved.options.reuse_run_dir);

  request.run_dir = (dir.path() / "here").string();
  resolved = resolve_resume(request);
  CHECK(resolved.options.run_dir == request.run_dir);
  CHECK_FALSE(resolved.options.reuse_run_dir);

  const ConfigError missing = config_error_of(TrainRequest{});
  CHECK(std::string(missing.what()) == "train: --config FILE is required");
  CHECK(missing.exit_code() == ltfit::ExitCode::kUsage);
}

TEST_CASE("resolve_resume --resume CKPT: the checkpoint's config, never --config's", "[jobs]") {
  TempDir dir;
  const fs::path ckpt = dir.path() / "old/checkpoints/step_3.ckpt";
  write_checkpoint(ckpt, "from_ckpt", dir.path() / "elsewhere");
  write_file(dir.path() / "c.yaml", config_yaml("from_file", dir.path() / "runs", 16));
  TrainRequest request;
  request.resume = ltfit::parse_resume_request(ckpt.string());
  request.config = (dir.path() / "c.yaml").string();
  request.sets = {"data.workers=3"};
  auto resolved = resolve_resume(request);
  CHECK(resolved.config.run.name == "from_ckpt");
  CHECK(resolved.config.data.batch_size == 24);
  CHECK(resolved.config.data.workers == 3);  // --set on top of the checkpoint's config
  CHECK(resolved.options.resume == ckpt.string());
  CHECK_FALSE(resolved.options.run_dir);  // run_train_job: the checkpoint's own run directory
  CHECK_FALSE(resolved.options.reuse_run_dir);
  CHECK(ltfit::run_dir_of_checkpoint(ckpt.string()) == fs::absolute(dir.path() / "old").string());

  request.run_dir = (dir.path() / "moved").string();
  resolved = resolve_resume(request);
  CHECK(resolved.options.run_dir == request.run_dir);
  CHECK(resolved.options.resume == ckpt.string());
}

TEST_CASE("resolve_resume --resume CKPT outside a run directory: refused naming --run-dir",
          "[jobs]") {
  TempDir dir;
  const fs::path loose = dir.path() / "loose.ckpt";
  write_checkpoint(loose, "victim", dir.path() / "victim");
  TrainRequest request;
  request.resume = ltfit::parse_resume_request(loose.string());
  const auto resolved = resolve_resume(request);
  CHECK(resolved.options.resume == loose.string());
  CHECK_FALSE(resolved.options.run_dir);
  // The job opens the run directory first: it refuses before writing anything, and never goes
  // where the checkpoint's embedded config points.
  try {
    ltfit::run_train_job(resolved.config, resolved.options);
    FAIL("a checkpoint outside a run directory was resumed");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(),
               Contains("--resume " + loose.string()) && Contains("not in a run directory"));
    CHECK_THAT(e.hint(), Contains("--run-dir DIR"));
  }
  CHECK_FALSE(fs::exists(dir.path() / "victim"));
  // With --run-dir it is resumable: that directory is where it writes.
  request.run_dir = (dir.path() / "target").string();
  CHECK(resolve_resume(request).options.run_dir == request.run_dir);
}

TEST_CASE("resolve_resume --resume auto with a checkpoint continues it", "[jobs]") {
  TempDir dir;
  const fs::path run = dir.path() / "runs/tiny";
  write_checkpoint(run / "checkpoints/last.ckpt", "from_ckpt", dir.path() / "elsewhere");
  write_file(dir.path() / "c.yaml", config_yaml("tiny", dir.path() / "runs", 16));

  SECTION("the run directory from --run-dir") {
    TrainRequest request;
    request.resume = ltfit::parse_resume_request("auto");
    request.run_dir = run.string();
    request.sets = {"train.checkpoint.keep=5"};
    const auto resolved = resolve_resume(request);
    CHECK(resolved.options.resume == (run / "checkpoints/last.ckpt").string());
    CHECK(resolved.options.run_dir == run.string());
    CHECK_FALSE(resolved.options.reuse_run_dir);
    CHECK(resolved.config.run.name == "from_ckpt");
    CHECK(resolved.config.train.checkpoint.keep == 5);
  }
  SECTION("the run directory from --config's run.out_dir/run.name") {
    TrainRequest request;
    request.resume = ltfit::parse_resume_request("auto");
    request.config = (dir.path() / "c.yaml").string();
    const auto resolved = resolve_resume(request);
    CHECK(resolved.options.resume == (run / "checkpoints/last.ckpt").string());
    CHECK(resolved.options.run_dir == run.string());
    CHECK_FALSE(resolved.options.reuse_run_dir);
    CHECK(resolved.config.run.name == "from_ckpt");  // the checkpoint's, not c.yaml's
    CHECK(resolved.config.data.batch_size == 24);
  }
}

TEST_CASE("resolve_resume --resume auto without a checkpoint starts the run there", "[jobs]") {
  TempDir dir;
  const fs::path run = dir.path() / "runs/tiny";
  fs::create_directories(run / "checkpoints");  // a folder, but no last.ckpt in it
  write_file(dir.path() / "c.yaml", config_yaml("tiny", dir.path() / "runs", 16));
  TrainRequest request;
  request.resume = ltfit::parse_resume_request("auto");
  request.sets = {"data.batch_size=32"};

  SECTION("--config alone: its run.out_dir/run.name") {
    request.config = (dir.path() / "c.yaml").string();
    const auto resolved = resolve_resume(request);
    CHECK(resolved.options.run_dir == run.string());
    CHECK(resolved.options.reuse_run_dir);
    CHECK_FALSE(resolved.options.resume);
    CHECK(resolved.config.run.name == "tiny");
    CHECK(resolved.config.data.batch_size == 32);
  }
  SECTION("--run-dir and --config: --config's settings in --run-dir") {
    request.config = (dir.path() / "c.yaml").string();
    request.run_dir = (dir.path() / "other").string();
    const auto resolved = resolve_resume(request);
    CHECK(resolved.options.run_dir == request.run_dir);
    CHECK(resolved.options.reuse_run_dir);
    CHECK_FALSE(resolved.options.resume);
    CHECK(resolved.config.data.batch_size == 32);
  }
  SECTION("--run-dir alone: the directory's config.yaml") {
    write_file(run / "config.yaml", config_yaml("saved", dir.path() / "runs", 16));
    request.run_dir = run.string();
    const auto resolved = resolve_resume(request);
    CHECK(resolved.options.run_dir == run.string());
    CHECK(resolved.options.reuse_run_dir);
    CHECK(resolved.config.run.name == "saved");
    CHECK(resolved.config.data.batch_size == 32);
  }
  SECTION("--run-dir alone without config.yaml: ConfigError asking for --config") {
    request.run_dir = run.string();
    const ConfigError e = config_error_of(request);
    CHECK(std::string(e.what()) ==
          "--resume auto: no checkpoint and no config.yaml in " + run.string());
    CHECK(e.hint() == "pass --config FILE to start the run");
  }
}

TEST_CASE("resolve_resume --resume auto needs --run-dir or --config", "[jobs]") {
  TrainRequest request;
  request.resume = ltfit::parse_resume_request("auto");
  const ConfigError e = config_error_of(request);
  CHECK(std::string(e.what()) ==
        "--resume auto needs --run-dir or --config (to find the run directory)");
  CHECK(e.exit_code() == ltfit::ExitCode::kUsage);
}

TEST_CASE("resolve_resume reads the checkpoint before the --set overrides", "[jobs]") {
  TempDir dir;
  TrainRequest request;
  request.resume = ltfit::parse_resume_request((dir.path() / "missing.ckpt").string());
  request.sets = {"no-equals-sign"};
  // The checkpoint is read first: a missing one is exit 4 even with a malformed --set.
  CHECK_THROWS_AS(resolve_resume(request), ltfit::CheckpointError);
  write_checkpoint(dir.path() / "run/checkpoints/last.ckpt", "x", dir.path());
  request.resume = ltfit::parse_resume_request((dir.path() / "run/checkpoints/last.ckpt").string());
  CHECK_THROWS_AS(resolve_resume(request), ConfigError);
}

TEST_CASE("resolve_resume --resume refuses a --set that changes the schedule, naming every key",
          "[jobs][resume]") {
  TempDir dir;
  const fs::path ckpt = dir.path() / "run/checkpoints/last.ckpt";
  write_checkpoint(ckpt, "r", dir.path());
  TrainRequest request;
  request.resume = ltfit::parse_resume_request(ckpt.string());
  request.sets = {"train.epochs=5", "data.workers=2", "data.batch_size=12"};
  const ConfigError e = config_error_of(request);
  CHECK(e.exit_code() == ltfit::ExitCode::kUsage);
  CHECK_THAT(e.what(), Contains("--resume " + ckpt.string()) && Contains("train.epochs 1 -> 5") &&
                           Contains("data.batch_size 24 -> 12"));
  CHECK_THAT(e.what(), !Contains("data.workers"));
  CHECK_THAT(e.hint(), Contains("ltfit train --init-from " + ckpt.string()) &&
                           Contains("--set train.epochs=5"));
  // The same through --resume auto; a value equal to the checkpoint's is no change.
  request.resume = ltfit::parse_resume_request("auto");
  request.run_dir = (dir.path() / "run").string();
  request.sets = {"train.lr=2.0e-3"};
  CHECK_THAT(config_error_of(request).what(), Contains("train.lr [0.001] -> [0.002]"));
  request.sets = {"train.epochs=1", "data.batch_size=24", "train.time_limit=5h"};
  CHECK_NOTHROW(resolve_resume(request));
}

TEST_CASE("resolve_resume --resume from a weights-only checkpoint: exit 4 naming --init-from",
          "[jobs][resume]") {
  TempDir dir;
  const fs::path best = dir.path() / "run/checkpoints/best.ckpt";
  write_checkpoint(best, "r", dir.path(), /*weights_only=*/true);
  TrainRequest request;
  request.resume = ltfit::parse_resume_request(best.string());
  try {
    resolve_resume(request);
    FAIL("resumed from a weights-only checkpoint");
  } catch (const CheckpointError& e) {
    CHECK(e.exit_code() == ltfit::ExitCode::kCheckpoint);
    CHECK_THAT(e.what(), Contains(best.string()) && Contains("weights only"));
    CHECK_THAT(e.hint(), Contains("last.ckpt") && Contains("--init-from " + best.string()));
  }
  // --resume auto never picks it: with no other checkpoint the run starts afresh.
  request.resume = ltfit::parse_resume_request("auto");
  request.run_dir = (dir.path() / "run").string();
  write_file(dir.path() / "run/config.yaml", config_yaml("r", dir.path(), 24));
  CHECK_FALSE(resolve_resume(request).options.resume);
}

TEST_CASE("resolve_resume --resume auto takes the newest readable checkpoint", "[jobs][resume]") {
  TempDir dir;
  const fs::path run = dir.path() / "run";
  write_checkpoint(run / "checkpoints/step-000000002.ckpt", "r", dir.path());
  write_checkpoint(run / "checkpoints/step-000000004.ckpt", "r", dir.path());
  TrainRequest request;
  request.resume = ltfit::parse_resume_request("auto");
  request.run_dir = run.string();
  // last.ckpt gone: the newest numbered one, not a fresh start.
  CHECK(resolve_resume(request).options.resume ==
        (run / "checkpoints/step-000000004.ckpt").string());
  // A torn last.ckpt and a torn newest numbered one: skipped.
  write_file(run / "checkpoints/last.ckpt", "PK torn");
  write_file(run / "checkpoints/step-000000004.ckpt", "torn");
  CHECK(resolve_resume(request).options.resume ==
        (run / "checkpoints/step-000000002.ckpt").string());
}

TEST_CASE("resolve_resume --resume of a complete run names its summary.json", "[jobs][resume]") {
  TempDir dir;
  const fs::path ckpt = dir.path() / "run/checkpoints/last.ckpt";
  // fine_tune, freeze_epochs 1 + epochs 1: two epochs in all
  write_checkpoint(ckpt, "r", dir.path(), /*weights_only=*/false, /*epochs_done=*/2);
  TrainRequest request;
  request.resume = ltfit::parse_resume_request(ckpt.string());
  CHECK_FALSE(resolve_resume(request).completed_summary);  // no summary.json yet: finish it
  write_file(dir.path() / "run/summary.json", "{\"accuracy\": 0.5}\n");
  const auto resolved = resolve_resume(request);
  REQUIRE(resolved.completed_summary);
  CHECK(*resolved.completed_summary == (dir.path() / "run/summary.json").string());
  CHECK(ltfit::report_completed_run(*resolved.completed_summary) == "{\"accuracy\": 0.5}\n");
  // Not complete: a checkpoint before the last epoch.
  write_checkpoint(ckpt, "r", dir.path(), /*weights_only=*/false, /*epochs_done=*/1);
  CHECK_FALSE(resolve_resume(request).completed_summary);
}

TEST_CASE("resolve_resume --init-from: a new run from --config or the checkpoint's config",
          "[jobs][resume]") {
  TempDir dir;
  const fs::path best = dir.path() / "old/checkpoints/best.ckpt";
  write_checkpoint(best, "old", dir.path() / "runs", /*weights_only=*/true);
  TrainRequest request;
  request.init_from = best.string();
  request.sets = {"train.epochs=4", "model.pretrained=imagenet"};
  auto resolved = resolve_resume(request);
  CHECK(resolved.options.init_from == best.string());
  CHECK_FALSE(resolved.options.resume);
  CHECK_FALSE(resolved.options.run_dir);  // a new <out_dir>/<name>[-N]
  CHECK(resolved.config.run.name == "old");
  CHECK(resolved.config.train.epochs == 4);
  CHECK(resolved.config.model.pretrained.kind ==
        ltfit::PretrainedWeights::Kind::kNone);  // the weights come from the checkpoint

  write_file(dir.path() / "c.yaml", config_yaml("more", dir.path() / "runs", 16));
  request.config = (dir.path() / "c.yaml").string();
  request.sets = {};
  resolved = resolve_resume(request);
  CHECK(resolved.config.run.name == "more");
  CHECK(resolved.config.data.batch_size == 16);

  request.sets = {"model.arch=resnet34"};
  const ConfigError other = config_error_of(request);
  CHECK_THAT(other.what(), Contains("resnet18") && Contains("model.arch resnet34"));
  request.sets = {};
  request.resume = ltfit::parse_resume_request("auto");
  CHECK_THAT(config_error_of(request).what(), Contains("--resume and --init-from"));
}

TEST_CASE("resolve_resume makes a relative data.root absolute", "[jobs]") {
  TempDir dir;
  write_file(dir.path() / "c.yaml",
             "run: {name: rel, out_dir: \"" + dir.str() + "\"}\ndata: {root: flat/../data}\n");
  TrainRequest request;
  request.config = (dir.path() / "c.yaml").string();
  const auto resolved = resolve_resume(request);
  CHECK(resolved.config.data.root == (fs::current_path() / "data").string());
}
