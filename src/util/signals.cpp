#include "ltfit/util/signals.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <ctime>
#include <iterator>
#include <mutex>

#include "ltfit/util/error.h"
#include "ltfit/util/temp_files.h"

namespace ltfit {

namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kInterruptedExit = 130;

volatile std::sig_atomic_t g_signal = 0;  // the first stop signal received, 0 if none
std::atomic<std::int64_t> g_first_ms{0};  // when it arrived (CLOCK_MONOTONIC)
std::atomic<int> g_mode{0};               // the outermost StopSignals' StopMode
struct sigaction g_old[sizeof kStopSignals / sizeof kStopSignals[0]]{};
std::mutex g_mutex;  // guards g_depth and the installation
int g_depth = 0;     // live StopSignals objects

static_assert(std::atomic<std::int64_t>::is_always_lock_free, "used in a signal handler");

std::int64_t monotonic_ms() {  // clock_gettime is async-signal-safe
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

// A message from the handler: write(2) is all it may use.
template <std::size_t N>
void say(const char (&text)[N]) {
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, N - 1);
}

extern "C" void on_stop_signal(int signal) {
  const std::int64_t now = monotonic_ms();
  if (g_signal == 0) {
    g_signal = signal;
    g_first_ms.store(now);
    if (g_mode.load() != static_cast<int>(StopMode::kExitNow)) return;
    remove_live_temp_files();
    say("ltfit: stopped by a signal (exit 130)\n");
    ::_exit(kInterruptedExit);
  }
  if (repeats_stop_request(now - g_first_ms.load())) {
    say("ltfit: stop already requested (a repeat within 2 s is the same request)\n");
    return;
  }
  // A deliberate second request: stop now, without leaving temporary files.
  remove_live_temp_files();
  say("ltfit: second stop request: stopping at once\n");
  std::signal(signal, SIG_DFL);
  std::raise(signal);  // delivered as the handler returns (the signal is blocked in it)
}

}  // namespace

StopSignals::StopSignals(StopMode mode) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_depth++ > 0) return;
  g_signal = 0;
  g_mode.store(static_cast<int>(mode));
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (int s : kStopSignals) sigaddset(&action.sa_mask, s);  // one handler at a time
  action.sa_flags = SA_RESTART;                              // reads and waits in progress carry on
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i) {
    sigaction(kStopSignals[i], &action, &g_old[i]);
  }
}

StopSignals::~StopSignals() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_depth > 0) return;
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i) {
    sigaction(kStopSignals[i], &g_old[i], nullptr);
  }
}

bool StopSignals::requested() { return g_signal != 0; }

void StopSignals::reset() { g_signal = 0; }

void throw_if_stop_requested(const std::string& during) {
  if (g_signal == 0) return;
  {
    // A flag left from an earlier StopSignals (a test's) is not a request to this work.
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_depth == 0) return;
  }
  throw InterruptedError("stopped by a signal while " + during,
                         "nothing had started that a run could resume: run the command again");
}

}  // namespace ltfit
