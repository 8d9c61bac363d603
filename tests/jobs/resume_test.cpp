// resolve_resume: what train's --config, --set, --run-dir and --resume (auto | CKPT) mean, with
// the checkpoint and config files they name generated here: which config the run trains with,
// where it writes, which checkpoint it continues, and the errors (codes, messages, and which
// comes first when several inputs are wrong).
#include <catch2/catch.hpp>

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

// A checkpoint at `path` whose embedded config is run `name` in `out`, batch size 24.
void write_checkpoint(const fs::path& path, const std::string& name, const fs::path& out) {
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  ltfit::CheckpointMeta meta;
  meta.config_yaml = config_yaml(name, out, 24);
  meta.classes = {"cat", "dog"};
  meta.global_step = 3;
  fs::create_directories(path.parent_path());
  ltfit::save_checkpoint(path.string(), model, nullptr, meta);
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
  request.resume = ckpt.string();
  request.config = (dir.path() / "c.yaml").string();
  request.sets = {"train.epochs=3"};
  auto resolved = resolve_resume(request);
  CHECK(resolved.config.run.name == "from_ckpt");
  CHECK(resolved.config.data.batch_size == 24);
  CHECK(resolved.config.train.epochs == 3);  // --set on top of the checkpoint's config
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
  request.resume = loose.string();
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
    request.resume = "auto";
    request.run_dir = run.string();
    request.sets = {"train.epochs=2"};
    const auto resolved = resolve_resume(request);
    CHECK(resolved.options.resume == (run / "checkpoints/last.ckpt").string());
    CHECK(resolved.options.run_dir == run.string());
    CHECK_FALSE(resolved.options.reuse_run_dir);
    CHECK(resolved.config.run.name == "from_ckpt");
    CHECK(resolved.config.train.epochs == 2);
  }
  SECTION("the run directory from --config's run.out_dir/run.name") {
    TrainRequest request;
    request.resume = "auto";
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
  request.resume = "auto";
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
  request.resume = "auto";
  const ConfigError e = config_error_of(request);
  CHECK(std::string(e.what()) ==
        "--resume auto needs --run-dir or --config (to find the run directory)");
  CHECK(e.exit_code() == ltfit::ExitCode::kUsage);
}

TEST_CASE("resolve_resume reads the checkpoint before the --set overrides", "[jobs]") {
  TempDir dir;
  TrainRequest request;
  request.resume = (dir.path() / "missing.ckpt").string();
  request.sets = {"no-equals-sign"};
  // The checkpoint is read first: a missing one is exit 4 even with a malformed --set.
  CHECK_THROWS_AS(resolve_resume(request), ltfit::CheckpointError);
  write_checkpoint(dir.path() / "run/checkpoints/last.ckpt", "x", dir.path());
  request.resume = (dir.path() / "run/checkpoints/last.ckpt").string();
  CHECK_THROWS_AS(resolve_resume(request), ConfigError);
}
