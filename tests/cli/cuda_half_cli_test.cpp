// One binary for CPU and GPU machines (ltfit/util/cuda_half.h): ltfit links LibTorch's CPU half
// alone and loads its CUDA half (libltfit_cuda.so, which links libtorch_cuda) with dlopen. What
// the linker recorded, what a process loads (LD_DEBUG=files), and what envinfo and a request for
// a CUDA device say, with LTFIT_CUDA auto, on, off and wrong. Runs without a GPU; the cases that
// need no driver on the machine say so and skip where one is installed.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using ltfit::testing::run_ltfit;

namespace {

// The libltfit_cuda.so ltfit finds first: beside it. Empty LTFIT_CUDA_PLUGIN (the suite sets it
// for its own process) leaves ltfit to its own search.
const fs::path kBesideBinary = fs::path(LTFIT_BINARY).parent_path() / "libltfit_cuda.so";
const std::string kOwnSearch = "LTFIT_CUDA_PLUGIN= ";

std::string needed_libraries(const fs::path& file) {
  ltfit::testing::TempDir dir;
  return ltfit::testing::run_bash(
      dir.path(), "readelf -d '" + file.string() + "' | grep NEEDED | tr -s ' ' | cut -d' ' -f6");
}

// As ltfit decides (auto): can the driver's library be opened?
bool driver_installed() { return ::dlopen("libcuda.so.1", RTLD_LAZY) != nullptr; }

nlohmann::json envinfo(const std::string& env, std::string* stderr_text = nullptr) {
  const auto r = run_ltfit("envinfo --json", kOwnSearch + env);
  REQUIRE(r.exit_code == 0);
  if (stderr_text != nullptr) *stderr_text = r.output.substr(r.stdout_text.size());
  return nlohmann::json::parse(r.stdout_text);
}

// A request for a CUDA device, in a tiny training run: exit code and log.
ltfit::testing::CommandResult train_on_cuda(const std::string& env) {
  ltfit::testing::TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 4, 2, 40, 48);
  return run_ltfit("train --config quickstart --set data.root=" + (dir.path() / "data").string() +
                       " --set run.out_dir=" + (dir.path() / "runs").string() +
                       " --set train.device=cuda",
                   kOwnSearch + env);
}

}  // namespace

TEST_CASE("ltfit links LibTorch's CPU half alone, and its CUDA half is a library of its own",
          "[cli][cuda_half]") {
  const std::string binary = needed_libraries(LTFIT_BINARY);
  CHECK_THAT(binary, Contains("libtorch_cpu.so") && Contains("libc10.so"));
  for (const char* cuda :
       {"libtorch_cuda", "libc10_cuda", "libtorch.so", "libnccl", "libcudnn", "libltfit_cuda"}) {
    INFO(cuda);
    CHECK_THAT(binary, !Contains(cuda));
  }
  if (!fs::exists(kBesideBinary)) {
    WARN("SKIPPED: no libltfit_cuda.so beside ltfit (a CPU LibTorch or LTFIT_CPU_ONLY build)");
    return;
  }
  CHECK_THAT(needed_libraries(kBesideBinary), Contains("libtorch_cuda.so"));
}

TEST_CASE("without a driver the CUDA half stays out of the process, and a CUDA request says why",
          "[cli][cuda_half]") {
  if (driver_installed()) {
    WARN("SKIPPED: an NVIDIA driver is installed here (this case is for machines without one)");
    return;
  }
  std::string loaded;
  const auto j = envinfo("LD_DEBUG=files", &loaded);
  CHECK_THAT(j["cuda_half"].get<std::string>(),
             StartsWith("not loaded: no NVIDIA driver (libcuda.so.1"));
  CHECK(j["libtorch_cuda"] == "not loaded");
  CHECK(j["dist_backends"] == "gloo");
  CHECK_THAT(loaded, Contains("file=libtorch_cpu.so"));  // LD_DEBUG does report what loads
  CHECK_THAT(loaded, !Contains("file=libtorch_cuda.so") && !Contains("file=libltfit_cuda.so"));

  const auto r = train_on_cuda("");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("train.device: 'cuda' requested, but ltfit's CUDA half is not "
                                "loaded: no NVIDIA driver"));
  CHECK_THAT(r.output, Contains("LTFIT_CUDA=on forces the load"));
}

TEST_CASE(
    "LTFIT_CUDA=on loads the CUDA half without a GPU, off keeps it out, a wrong value is said",
    "[cli][cuda_half]") {
  std::string loaded;
  const auto off = envinfo("LTFIT_CUDA=off LD_DEBUG=files", &loaded);
  CHECK(off["cuda_half"] == "not loaded: LTFIT_CUDA=off");
  CHECK_THAT(loaded, !Contains("file=libtorch_cuda.so"));
  const auto off_run = train_on_cuda("LTFIT_CUDA=off");
  CHECK(off_run.exit_code == 2);
  CHECK_THAT(off_run.output, Contains("CUDA half is not loaded: LTFIT_CUDA=off"));

  CHECK_THAT(
      envinfo("LTFIT_CUDA=maybe LTFIT_CUDA_PLUGIN=/nonexistent/libltfit_cuda.so")["cuda_half"]
          .get<std::string>(),
      Contains("LTFIT_CUDA='maybe' is not auto, on or off; read as auto."));
  CHECK_THAT(envinfo("LTFIT_CUDA=on LTFIT_CUDA_PLUGIN=/nonexistent/libltfit_cuda.so")["cuda_half"]
                 .get<std::string>(),
             Contains("this ltfit has no CUDA half (no /nonexistent/libltfit_cuda.so"));

  if (!fs::exists(kBesideBinary)) {
    WARN("SKIPPED: no libltfit_cuda.so beside ltfit (a CPU LibTorch or LTFIT_CPU_ONLY build)");
    return;
  }
  const auto on = envinfo("LTFIT_CUDA=on LD_DEBUG=files", &loaded);
  CHECK_THAT(on["cuda_half"].get<std::string>(),
             StartsWith("loaded from " + kBesideBinary.string() + " in "));
  CHECK(on["libtorch_cuda"] != "not loaded");  // the CUDA hooks are LibTorch's real ones now
  CHECK(on["libtorch_cuda"] != "none");
  CHECK_THAT(loaded, Contains("file=libtorch_cuda.so"));
  if (!on["gpus"].empty()) return;  // the rest is for a machine without a GPU
  const auto r = train_on_cuda("LTFIT_CUDA=on");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("train.device: 'cuda' requested but no CUDA GPU is visible"));
}

TEST_CASE("a library that is not ltfit's CUDA half is refused, with its name", "[cli][cuda_half]") {
  // libz: loads anywhere, exports no ltfit_cuda_half.
  ltfit::testing::TempDir dir;
  const std::string libz =
      ltfit::testing::run_bash(dir.path(), "ldconfig -p | grep -m1 -o '/[^ ]*/libz.so.1$'");
  REQUIRE_FALSE(libz.empty());
  const std::string path = libz.substr(0, libz.find('\n'));
  const auto j = envinfo("LTFIT_CUDA=on LTFIT_CUDA_PLUGIN=" + path);
  CHECK(j["cuda_half"] ==
        "not loaded: " + path + " has no ltfit_cuda_half entry (not ltfit's CUDA half)");
  CHECK(j["libtorch_cuda"] == "not loaded");
}
