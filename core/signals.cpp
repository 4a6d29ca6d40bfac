#include "core/signals.hpp"

#include <pthread.h>

#include <atomic>

namespace spindle {
namespace {

std::atomic<pthread_t> waiter{};

// Runs on a thread that did not block the signal; async-signal-safe (tgkill).
void redirect(int sig) { ::pthread_kill(waiter.load(), sig); }

}  // namespace

void wait_for_signals_here(const sigset_t& set) {
  waiter = ::pthread_self();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sigismember(&set, sig) != 1) continue;
    struct sigaction sa {};
    sa.sa_handler = redirect;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(sig, &sa, nullptr);
  }
}

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

bool stop_signal_pending() {
  sigset_t pending;
  if (::sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1;
}

}  // namespace spindle
