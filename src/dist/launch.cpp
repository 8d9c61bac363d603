// Reading the launcher's variables: see launch.h.
#include "ltfit/dist/launch.h"

#include <cstdlib>
#include <limits>
#include <string>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr int kMaxWorld = 1 << 20;  // a bound far above any real cluster, far below int's end

// The variable as an integer in [low, high]; nullopt when unset.
std::optional<int> read_int(const EnvLookup& env, const std::string& name, int low, int high) {
  const std::optional<std::string> text = env(name);
  if (!text) return std::nullopt;
  // Slurm writes SLURM_NTASKS_PER_NODE as "4(x2)" on uniform allocations: the leading count.
  std::size_t digits = 0;
  while (digits < text->size() && digits < 9 && (*text)[digits] >= '0' && (*text)[digits] <= '9')
    ++digits;
  const bool slurm_list = digits > 0 && digits < text->size() && (*text)[digits] == '(' &&
                          name == "SLURM_NTASKS_PER_NODE";
  if (digits == 0 || (digits != text->size() && !slurm_list)) {
    throw ConfigError("environment variable " + name + "='" + *text + "' is not a whole number",
                      "unset it, or let the launcher (torchrun, srun) set it");
  }
  const long value = std::strtol(text->substr(0, digits).c_str(), nullptr, 10);
  if (value < low || value > high) {
    throw ConfigError("environment variable " + name + "=" + *text + " is outside [" +
                          std::to_string(low) + ", " + std::to_string(high) + "]",
                      "check the launcher's settings (world size, ranks)");
  }
  return static_cast<int>(value);
}

bool truthy(const std::optional<std::string>& text) {
  return text && (*text == "1" || *text == "True" || *text == "true");
}

void read_master(const EnvLookup& env, LaunchInfo& info) {
  info.master_addr = env("MASTER_ADDR").value_or("");
  info.master_port = read_int(env, "MASTER_PORT", 1, 65535).value_or(0);
  if (info.world_size > 1 && (info.master_addr.empty() || info.master_port == 0)) {
    throw ConfigError(info.launcher + " launch of " + std::to_string(info.world_size) +
                          " processes without MASTER_ADDR and MASTER_PORT",
                      "set both (the host of rank 0 and a free port on a trusted network)");
  }
}

}  // namespace

LaunchInfo detect_launch(const EnvLookup& env) {
  LaunchInfo info;
  const auto world = read_int(env, "WORLD_SIZE", 1, kMaxWorld);
  const auto rank = read_int(env, "RANK", 0, kMaxWorld - 1);
  if (world && rank) {
    info.launcher = env("TORCHELASTIC_RUN_ID") ? "torchrun" : "env";
    info.world_size = *world;
    info.rank = *rank;
    info.local_rank = read_int(env, "LOCAL_RANK", 0, kMaxWorld - 1).value_or(0);
    info.local_world_size = read_int(env, "LOCAL_WORLD_SIZE", 1, kMaxWorld).value_or(1);
    info.agent_store = truthy(env("TORCHELASTIC_USE_AGENT_STORE"));
    info.restart_count = read_int(env, "TORCHELASTIC_RESTART_COUNT", 0, kMaxWorld).value_or(0);
    info.error_file = env("TORCHELASTIC_ERROR_FILE").value_or("");
  } else if (const auto tasks = read_int(env, "SLURM_NTASKS", 1, kMaxWorld)) {
    info.launcher = "slurm";
    info.world_size = *tasks;
    info.rank = read_int(env, "SLURM_PROCID", 0, kMaxWorld - 1).value_or(0);
    info.local_rank = read_int(env, "SLURM_LOCALID", 0, kMaxWorld - 1).value_or(0);
    info.local_world_size = read_int(env, "SLURM_NTASKS_PER_NODE", 1, kMaxWorld).value_or(1);
  } else {
    return info;
  }
  if (info.rank >= info.world_size) {
    throw ConfigError("rank " + std::to_string(info.rank) + " is not below the world size " +
                          std::to_string(info.world_size) + " (" + info.launcher + " variables)",
                      "check RANK/WORLD_SIZE (or SLURM_PROCID/SLURM_NTASKS)");
  }
  if (info.local_rank >= info.local_world_size) info.local_world_size = info.local_rank + 1;
  read_master(env, info);
  return info;
}

LaunchInfo detect_launch() {
  return detect_launch([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

std::string describe_launch(const LaunchInfo& launch) {
  if (!launch.launched()) return "single process (no launcher variables)";
  std::string text = launch.launcher + ": rank " + std::to_string(launch.rank) + " of " +
                     std::to_string(launch.world_size) + " (local " +
                     std::to_string(launch.local_rank) + " of " +
                     std::to_string(launch.local_world_size) + ")";
  if (!launch.master_addr.empty()) {
    text += ", store " + launch.master_addr + ":" + std::to_string(launch.master_port) +
            (launch.agent_store ? " (torchrun's agent)" : " (rank 0)");
  }
  if (launch.restart_count > 0) text += ", restart " + std::to_string(launch.restart_count);
  return text;
}

}  // namespace ltfit
