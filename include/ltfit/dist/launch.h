// Who this process is in a data-parallel run, read from its launcher's environment variables.
//
// Three launchers are recognised, in this order:
//   torchrun (python -m torch.distributed.run --no-python): RANK, WORLD_SIZE, LOCAL_RANK,
//     LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and TORCHELASTIC_* (the agent hosts the store
//     when TORCHELASTIC_USE_AGENT_STORE is True: every rank, rank 0 included, is a client);
//   plain variables: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (LOCAL_RANK and
//     LOCAL_WORLD_SIZE when set; rank 0 hosts the store);
//   Slurm (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE, with
//     MASTER_ADDR and MASTER_PORT from the job script (rank 0 hosts the store).
// Nothing set, or a world of one: a single process, exactly as without a launcher.
// Pure functions of the variables given; thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace ltfit {

struct LaunchInfo {
  std::string launcher = "none";  // torchrun | env | slurm | none
  int rank = 0;                   // this process's rank in [0, world_size)
  int world_size = 1;             // processes in the run
  int local_rank = 0;             // rank among the processes on this machine (its GPU index)
  int local_world_size = 1;       // processes on this machine (they share its cores)
  std::string master_addr;        // host of the rendezvous store
  int master_port = 0;            // its TCP port
  bool agent_store = false;       // torchrun's agent hosts the store (every rank a client)
  int restart_count = 0;          // TORCHELASTIC_RESTART_COUNT: attempts before this one
  std::string error_file;         // TORCHELASTIC_ERROR_FILE: where a failure is described

  bool launched() const { return launcher != "none"; }
};

// Reads a variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The launch `env` describes. Throws ConfigError (exit 2) naming the variable for a value that
// is not a number, a rank outside the world, or a launched world of more than one process
// without MASTER_ADDR/MASTER_PORT.
LaunchInfo detect_launch(const EnvLookup& env);

// The same from this process's environment.
LaunchInfo detect_launch();

// One line for logs and `ltfit envinfo`: "torchrun: rank 1 of 4 (local 1 of 2), store
// 10.0.0.1:29500 (agent)", or "single process (no launcher variables)".
std::string describe_launch(const LaunchInfo& launch);

}  // namespace ltfit
