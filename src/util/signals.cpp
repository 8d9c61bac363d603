#include "ltfit/util/signals.h"

#include <csignal>
#include <mutex>

namespace ltfit {

namespace {

volatile std::sig_atomic_t g_signal = 0;  // the first stop signal received, 0 if none
struct sigaction g_old_int {};
struct sigaction g_old_term {};
std::mutex g_mutex;  // guards g_depth and the installation
int g_depth = 0;     // live StopSignals objects

extern "C" void on_stop_signal(int signal) {
  if (g_signal != 0) {  // second request: stop for real
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  g_signal = signal;
}

}  // namespace

StopSignals::StopSignals() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_depth++ > 0) return;
  g_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and waits in progress carry on
  sigaction(SIGINT, &action, &g_old_int);
  sigaction(SIGTERM, &action, &g_old_term);
}

StopSignals::~StopSignals() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_depth > 0) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

bool StopSignals::requested() { return g_signal != 0; }


void StopSignals::reset() { g_signal = 0; }

}  // namespace ltfit
