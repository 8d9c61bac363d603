// A child process of `ltfit experiment` (experiment_runner.cpp): started with stdin /dev/null and
// stdout and stderr to files, asking for SIGTERM when its parent dies, and waited for while a
// stop request is passed on to it as one SIGINT (or a due cut kills it with SIGKILL). Internal to
// src/study.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "ltfit/study/run_cut.h"

namespace ltfit {

// How a child ended: its exit code, or the signal that killed it. (An exit 130, ltfit's
// "interrupted after a checkpoint", is not a death by SIGINT.)
struct ChildEnd {
  int code = -1;   // the exit code; -1 when unknown
  int signal = 0;  // the signal that killed it, 0 if it exited
  // The shell's figure: the exit code, or 128 + the signal.
  int status() const { return signal != 0 ? 128 + signal : code; }
};

// Starts `args` (args[0] looked up on PATH when it has no '/') with stdin /dev/null and stdout
// and stderr to the given files (truncated); its pid. RuntimeError when it cannot be started
// (fork, the files, exec), naming args[0].
pid_t spawn(const std::vector<std::string>& args, const std::string& out_path,
            const std::string& err_path);

// Waits for `pid`; passes a stop request on as one SIGINT; kills it with SIGKILL once `cut` says
// the cut is due (then `killed` is set), unless a stop request came first.
ChildEnd wait_child(pid_t pid, const std::function<bool()>& stop_signal, CutClock* cut = nullptr,
                    bool* killed = nullptr);

}  // namespace ltfit
