// Reading torchrun's, Slurm's and plain RANK/WORLD_SIZE launches from environment variables.
#include <catch2/catch.hpp>

#include <map>

#include "ltfit/dist/group.h"
#include "ltfit/dist/launch.h"
#include "ltfit/util/error.h"

namespace {

ltfit::LaunchInfo launch(const std::map<std::string, std::string>& vars) {
  return ltfit::detect_launch([&](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

}  // namespace

TEST_CASE("no launcher variables: one process, as without a launcher", "[dist]") {
  const ltfit::LaunchInfo info = launch({});
  CHECK_FALSE(info.launched());
  CHECK(info.world_size == 1);
  CHECK(info.rank == 0);
  CHECK(ltfit::describe_launch(info) == "single process (no launcher variables)");
  CHECK_FALSE(ltfit::should_join(info, ltfit::DistBackend::kAuto));
  CHECK_FALSE(ltfit::should_join(info, ltfit::DistBackend::kGloo));
}

TEST_CASE("torchrun's variables", "[dist]") {
  const ltfit::LaunchInfo info =
      launch({{"RANK", "3"},
              {"WORLD_SIZE", "4"},
              {"LOCAL_RANK", "1"},
              {"LOCAL_WORLD_SIZE", "2"},
              {"MASTER_ADDR", "10.0.0.1"},
              {"MASTER_PORT", "29500"},
              {"TORCHELASTIC_RUN_ID", "abc"},
              {"TORCHELASTIC_USE_AGENT_STORE", "True"},
              {"TORCHELASTIC_RESTART_COUNT", "2"},
              {"TORCHELASTIC_ERROR_FILE", "/tmp/e.json"},
              {"SLURM_NTASKS", "8"}});  // torchrun inside a Slurm allocation: torchrun wins
  CHECK(info.launcher == "torchrun");
  CHECK((info.rank == 3 && info.world_size == 4));
  CHECK((info.local_rank == 1 && info.local_world_size == 2));
  CHECK((info.master_addr == "10.0.0.1" && info.master_port == 29500));
  CHECK(info.agent_store);
  CHECK(info.restart_count == 2);
  CHECK(info.error_file == "/tmp/e.json");
  CHECK(ltfit::describe_launch(info) ==
        "torchrun: rank 3 of 4 (local 1 of 2), store 10.0.0.1:29500 (torchrun's agent), "
        "restart 2");
  CHECK(ltfit::should_join(info, ltfit::DistBackend::kAuto));
  CHECK_FALSE(ltfit::should_join(info, ltfit::DistBackend::kOff));
}

TEST_CASE("plain RANK/WORLD_SIZE and Slurm launches", "[dist]") {
  const ltfit::LaunchInfo plain = launch(
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"}});
  CHECK(plain.launcher == "env");
  CHECK_FALSE(plain.agent_store);  // rank 0 hosts the store
  CHECK(plain.local_world_size == 1);

  const ltfit::LaunchInfo slurm = launch({{"SLURM_PROCID", "5"},
                                          {"SLURM_NTASKS", "8"},
                                          {"SLURM_LOCALID", "1"},
                                          {"SLURM_NTASKS_PER_NODE", "4(x2)"},
                                          {"MASTER_ADDR", "node1"},
                                          {"MASTER_PORT", "29400"}});
  CHECK(slurm.launcher == "slurm");
  CHECK((slurm.rank == 5 && slurm.world_size == 8));
  CHECK((slurm.local_rank == 1 && slurm.local_world_size == 4));

  // A world of one under a launcher: today's single process unless a backend is named.
  const ltfit::LaunchInfo one = launch({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  CHECK(one.launched());
  CHECK_FALSE(ltfit::should_join(one, ltfit::DistBackend::kAuto));
  CHECK(ltfit::should_join(one, ltfit::DistBackend::kNccl));
}

TEST_CASE("bad launcher variables are config errors naming the variable", "[dist]") {
  CHECK_THROWS_WITH(launch({{"RANK", "x"}, {"WORLD_SIZE", "2"}}),
                    Catch::Contains("RANK='x' is not a whole number"));
  CHECK_THROWS_WITH(
      launch({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}),
      Catch::Contains("rank 2 is not below the world size 2"));
  CHECK_THROWS_WITH(launch({{"RANK", "0"}, {"WORLD_SIZE", "2"}}),
                    Catch::Contains("without MASTER_ADDR and MASTER_PORT"));
  CHECK_THROWS_WITH(
      launch({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}}),
      Catch::Contains("MASTER_PORT=70000 is outside"));
  CHECK_THROWS_AS(launch({{"SLURM_NTASKS", "-1"}}), ltfit::ConfigError);
  CHECK_THROWS_AS(launch({{"RANK", "0"}, {"WORLD_SIZE", "99999999999999"}}), ltfit::ConfigError);
}
