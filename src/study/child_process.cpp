// Child processes of `ltfit experiment` (child_process.h).
#include "study/child_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include "ltfit/util/error.h"
#include "ltfit/util/signals.h"

namespace ltfit {
namespace {

// In the child, before exec: `fd` opened on `path`; errno when it cannot. Async-signal-safe.
int redirect(int fd, const char* path, int flags) {
  const int opened = ::open(path, flags, 0644);
  if (opened < 0) return errno;
  const int error = ::dup2(opened, fd) < 0 ? errno : 0;
  ::close(opened);
  return error;
}

// The forked child, up to exec: only async-signal-safe calls (the parent may have threads). It
// asks for SIGTERM when the parent dies (then checks that the parent did not die before that),
// with SIGTERM's default action until the exec'd program installs its own; an error is written
// to `report` (close-on-exec, so the parent reads nothing when exec succeeds).
[[noreturn]] void exec_child(char* const* argv, const char* out_path, const char* err_path,
                             pid_t parent, int report) {
  ::signal(SIGTERM, SIG_DFL);
  int error = ::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 ? errno : 0;
  if (error == 0 && ::getppid() != parent) ::_exit(128 + SIGTERM);  // orphaned already
  const int out_flags = O_WRONLY | O_CREAT | O_TRUNC;
  if (error == 0) error = redirect(STDIN_FILENO, "/dev/null", O_RDONLY);
  if (error == 0) error = redirect(STDOUT_FILENO, out_path, out_flags);
  if (error == 0) error = redirect(STDERR_FILENO, err_path, out_flags);
  if (error == 0) {
    ::execvp(argv[0], argv);  // a bare `python3` is looked up on PATH; a path is used as is
    error = errno;
  }
  (void)!::write(report, &error, sizeof error);
  ::_exit(127);
}

// Starts `argv` with stdin /dev/null, stdout and stderr to the given files; its pid, or -1 with
// `error` set when it could not be started.
pid_t start_child(char* const* argv, const std::string& out_path, const std::string& err_path,
                  int& error) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    error = errno;
    return -1;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(argv, out_path.c_str(), err_path.c_str(), parent, report[1]);
  error = pid < 0 ? errno : 0;
  ::close(report[1]);
  if (pid > 0) {
    ssize_t n = 0;
    while ((n = ::read(report[0], &error, sizeof error)) < 0 && errno == EINTR) {
    }
    if (n == static_cast<ssize_t>(sizeof error)) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    } else {
      error = 0;
    }
  }
  ::close(report[0]);
  return error != 0 ? -1 : pid;
}

// How often wait_child looks at the child and at the stop flag: a stop passed on this late is
// still the child's first request repeated, not a second one.
constexpr int kChildPollMs = 100;
static_assert(kChildPollMs * 5 < StopSignals::kRepeatWindowMs,
              "see experiment_runner.cpp's file comment");

}  // namespace

ChildEnd wait_child(pid_t pid, const std::function<bool()>& stop_signal, CutClock* cut,
                    bool* killed) {
  bool forwarded = false;
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      return WIFEXITED(status) ? ChildEnd{WEXITSTATUS(status), 0} : ChildEnd{-1, WTERMSIG(status)};
    }
    if (done < 0 && errno != EINTR) return {};
    if (!forwarded && stop_signal && stop_signal()) {
      ::kill(pid, SIGINT);
      forwarded = true;
    }
    if (!forwarded && cut != nullptr && cut->due()) {
      ::kill(pid, SIGKILL);
      *killed = true;
      cut = nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kChildPollMs));
  }
}

pid_t spawn(const std::vector<std::string>& args, const std::string& out_path,
            const std::string& err_path) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int error = 0;
  const pid_t pid = start_child(argv.data(), out_path, err_path, error);
  if (pid < 0) {
    throw RuntimeError("cannot start '" + args[0] + "': " + std::strerror(error));
  }
  return pid;
}

}  // namespace ltfit
