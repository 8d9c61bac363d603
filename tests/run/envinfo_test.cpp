// Environment report: parsers on fabricated /proc text, the MiB/GB/GiB trap, container detection,
// and a real collection on this machine whose JSON carries every key.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>

#include <torch/cuda.h>

#include "ltfit/run/envinfo.h"
#include "support/test_support.h"

using Catch::Matchers::WithinAbs;

TEST_CASE("GPU memory converts between MiB, GB and GiB as the study warns", "[envinfo]") {
  // The K80 the study saw: 11441 MiB, shown as "11.17 GB" (really GiB), is 12.0 GB.
  const ltfit::GpuMemory k80 = ltfit::gpu_memory_from_mib(11441.0);
  CHECK_THAT(k80.gib, WithinAbs(11.17, 0.005));
  CHECK_THAT(k80.gb, WithinAbs(12.0, 0.05));
  CHECK(k80.mib == 11441.0);
  const ltfit::GpuMemory exact = ltfit::gpu_memory_from_mib(11.17 * 1024.0);
  CHECK_THAT(exact.gib, WithinAbs(11.17, 1e-9));
  CHECK_THAT(exact.gb, WithinAbs(11.9937, 1e-4));  // rounds to 12.0, not 11.17
  CHECK_THAT(ltfit::gpu_memory_from_mib(1024.0).gb, WithinAbs(1.073741824, 1e-9));
}

TEST_CASE("cpuinfo parsing counts sockets, cores and threads", "[envinfo]") {
  std::string text;
  for (int socket = 0; socket < 2; ++socket) {
    for (int core = 0; core < 4; ++core) {
      for (int ht = 0; ht < 2; ++ht) {  // two hyper-threads per core
        text += "processor\t: " + std::to_string(socket * 8 + core * 2 + ht) + "\n" +
                "model name\t: Intel(R) Xeon(R) CPU @ 2.30GHz\n" +
                "physical id\t: " + std::to_string(socket) +
                "\ncore id\t\t: " + std::to_string(core) + "\ncpu cores\t: 4\n\n";
      }
    }
  }
  const ltfit::CpuInfo cpu = ltfit::parse_cpuinfo(text);
  CHECK(cpu.model == "Intel(R) Xeon(R) CPU @ 2.30GHz");
  CHECK(cpu.sockets == 2);
  CHECK(cpu.physical_cores == 8);
  CHECK(cpu.logical_threads == 16);

  const ltfit::CpuInfo bare = ltfit::parse_cpuinfo("processor : 0\nprocessor : 1\n");
  CHECK(bare.model == "none");
  CHECK(bare.sockets == 1);
  CHECK(bare.physical_cores == 2);
}

TEST_CASE("meminfo and nvidia-smi output parse", "[envinfo]") {
  const ltfit::MemInfo mem =
      ltfit::parse_meminfo("MemTotal:       13294780 kB\nMemFree: 1 kB\nMemAvailable: 1024 kB\n");
  CHECK(mem.total_bytes == 13294780LL * 1024);
  CHECK(mem.available_bytes == 1024LL * 1024);

  std::string driver;
  const auto gpus = ltfit::parse_nvidia_smi(
      "Tesla K80, 11441, 418.67, 3.7\nTesla P100-PCIE-16GB, 16280, 418.67, 6.0\n", &driver);
  REQUIRE(gpus.size() == 2);
  CHECK(driver == "418.67");
  CHECK(gpus[0].name == "Tesla K80");
  CHECK(gpus[0].compute_capability == "3.7");
  CHECK_THAT(gpus[0].memory.gib, WithinAbs(11.17, 0.005));
  CHECK(gpus[1].index == 1);
  CHECK_THAT(gpus[1].memory.mib, WithinAbs(16280.0, 1e-9));
  // An old driver without compute_cap: three columns.
  const auto old = ltfit::parse_nvidia_smi("Tesla K80, 11441, 410.79\n", &driver);
  REQUIRE(old.size() == 1);
  CHECK(old[0].compute_capability == "none");
  CHECK(driver == "410.79");
  CHECK(ltfit::parse_nvidia_smi("", nullptr).empty());
}

TEST_CASE("container detection reads markers, cgroups and the telling mounts", "[envinfo]") {
  ltfit::ContainerProbe host;
  host.cgroup = "0::/init.scope\n";
  // A host that runs Docker has overlay mounts of its containers, but not on "/".
  host.mountinfo =
      "27 1 254:0 / / rw,relatime - ext4 /dev/sda1 rw\n"
      "300 27 0:50 / /var/lib/docker/overlay2/abc/merged rw - overlay overlay rw,"
      "lowerdir=/var/lib/docker/overlay2/l/X\n";
  CHECK(ltfit::detect_container(host) == "none");

  ltfit::ContainerProbe docker_v1 = host;
  docker_v1.cgroup = "12:memory:/docker/0123456789abcdef\n";
  CHECK(ltfit::detect_container(docker_v1) == "docker");

  ltfit::ContainerProbe docker_v2 = host;  // cgroup v2 hides the path; mountinfo does not
  docker_v2.cgroup = "0::/\n";
  docker_v2.mountinfo =
      "600 500 0:60 / / rw - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/Y\n";
  CHECK(ltfit::detect_container(docker_v2) == "docker");

  ltfit::ContainerProbe k8s = host;
  k8s.mountinfo =
      "700 600 8:1 /var/lib/kubelet/pods/p1/etc-hosts /etc/hosts rw - ext4 /dev/sda1 rw\n";
  k8s.dockerenv = true;
  CHECK(ltfit::detect_container(k8s) == "kubernetes");

  ltfit::ContainerProbe marker = host;
  marker.dockerenv = true;
  CHECK(ltfit::detect_container(marker) == "docker");
  marker.dockerenv = false;
  marker.containerenv = true;
  CHECK(ltfit::detect_container(marker) == "podman");
  ltfit::ContainerProbe nspawn = host;
  nspawn.env = "systemd-nspawn";
  CHECK(ltfit::detect_container(nspawn) == "container");
}

TEST_CASE("collect_envinfo fills every field on this machine", "[envinfo]") {
  ltfit::testing::TempDir dir;
  const ltfit::EnvInfo info = ltfit::collect_envinfo(dir.str(), (dir.path() / "absent").string());
  CHECK(!info.cpu_model.empty());
  CHECK(info.cpu_model != "none");
  CHECK(info.sockets >= 1);
  CHECK(info.logical_threads >= 1);
  CHECK(info.physical_cores >= 1);
  CHECK(info.physical_cores <= info.logical_threads);
  CHECK(info.available_cores >= 1);
  CHECK(info.available_cores <= info.logical_threads);
  CHECK(info.ram_total_bytes > 0);
  CHECK(info.ram_available_bytes > 0);
  CHECK(info.ram_available_bytes <= info.ram_total_bytes);
  REQUIRE(info.data_disk.total_bytes.has_value());
  CHECK(*info.data_disk.total_bytes >= *info.data_disk.free_bytes);
  CHECK(!info.run_disk.total_bytes.has_value());  // missing directory
  CHECK(info.libtorch_version.find('.') != std::string::npos);
  CHECK(info.opencv_version.find('.') != std::string::npos);
  CHECK(info.ltfit_version == LTFIT_VERSION);
  CHECK(info.compiler != "none");
  CHECK(info.kernel.find("Linux") == 0);
  CHECK(info.gpus.empty() == !torch::cuda::is_available());
  if (info.gpus.empty()) {  // this machine (no GPU): the versions say so explicitly
    CHECK(info.driver_version == "none");
    CHECK(info.cuda_runtime == "none");
    CHECK(info.cudnn_version == "none");
    CHECK(info.gpu_source == "none");
  } else {
    CHECK(info.gpus[0].memory.mib > 0.0);
    CHECK(info.driver_version != "none");
  }

  const auto j = nlohmann::json::parse(ltfit::envinfo_json(info));
  for (const char* key : {"cpu",
                          "memory",
                          "data_disk",
                          "run_disk",
                          "shm",
                          "gpus",
                          "gpu_source",
                          "driver_version",
                          "cuda_runtime",
                          "cudnn_version",
                          "libtorch_version",
                          "libtorch_cuda",
                          "cuda_half",
                          "libtorch_cudnn",
                          "opencv_version",
                          "compiler",
                          "ltfit_version",
                          "os",
                          "kernel",
                          "container"}) {
    INFO(key);
    CHECK(j.contains(key));
  }
  for (const char* key :
       {"model", "sockets", "physical_cores", "logical_threads", "available_cores"}) {
    CHECK(j["cpu"].contains(key));
  }
  CHECK(j["gpus"].is_array());
  CHECK(j["gpus"].size() == info.gpus.size());
  CHECK(j["memory"]["total_bytes"].get<std::int64_t>() == info.ram_total_bytes);
  CHECK(j["data_disk"]["total_bytes"].is_number());
  CHECK(j["run_disk"]["total_bytes"] == "none");
  CHECK(j["cpu"]["logical_threads"] == info.logical_threads);

  const std::string table = ltfit::envinfo_table(info);
  CHECK(table.find(info.cpu_model) != std::string::npos);
  CHECK(table.find("container") != std::string::npos);

  const auto path = dir.path() / "env.json";
  ltfit::write_envinfo_json(path.string(), info);
  CHECK(nlohmann::json::parse(ltfit::testing::read_file(path)) == j);
}

TEST_CASE("the table says when LibTorch's CPU libraries run alone", "[envinfo]") {
  ltfit::EnvInfo info;
  info.libtorch_version = "2.15.0";
  info.libtorch_cuda = "13.2";
  info.libtorch_cudnn = "9.26.0";
  CHECK_THAT(ltfit::envinfo_table(info),
             Catch::Matchers::Contains("2.15.0 (built with CUDA 13.2, cuDNN 9.26.0)"));
  info.libtorch_cuda = std::string(ltfit::kCudaNotLoaded);  // the CUDA half not loaded
  info.cuda_half = "not loaded: no NVIDIA driver (libcuda.so.1 is not installed)";
  const std::string table = ltfit::envinfo_table(info);
  CHECK_THAT(table,
             Catch::Matchers::Contains("2.15.0 (CPU libraries only: the CUDA half is not loaded)"));
  CHECK_THAT(table, Catch::Matchers::Contains("CUDA half     not loaded: no NVIDIA driver"));
  CHECK_THAT(table, !Catch::Matchers::Contains("built with CUDA"));
}
