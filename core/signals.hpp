// Stop signals for processes that wait for them with sigwait. Blocking them
// with pthread_sigmask covers only threads started afterwards; threads that
// libraries start before main (OpenBLAS's pool) keep the default action, so a
// signal delivered to one of them killed the process instead of reaching the
// waiting thread. A handler passes any such stray signal on to the waiter.
#pragma once

#include <signal.h>

namespace spindle {

/// Blocks `set` in the calling thread (and so in every thread it starts later)
/// and installs handlers that redirect each of its signals, if a thread started
/// earlier receives it, to the calling thread, where sigwait takes it.
void wait_for_signals_here(const sigset_t& set);

/// {SIGINT, SIGTERM}: what stops a server, a node or launch.
sigset_t stop_signal_set();

/// True when SIGINT or SIGTERM is pending for the calling thread (blocked, not
/// yet taken): a long wait at start checks it to stop at once, not at its end.
bool stop_signal_pending();

}  // namespace spindle
