#include "core/thread_priority.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/log.hpp"

namespace spindle {
namespace {

// On Linux PRIO_PROCESS with a thread id sets that one thread's nice value.
id_t this_thread_id() { return id_t(::syscall(SYS_gettid)); }

// Lowers this thread to nice `nice` unless it already is at least that; a
// refusal is logged once per `warned` flag, naming `who` and what it costs.
void lower_to(int nice, std::atomic<bool>& warned, const char* who, const char* cost) {
  if (current_thread_nice() >= nice) return;
  if (::setpriority(PRIO_PROCESS, this_thread_id(), nice) != 0 && !warned.exchange(true))
    log::warn("cannot lower {} to nice {}: {}; {}", who, nice, std::strerror(errno), cost);
}

std::atomic<bool> compute_priority_warned{false};
std::atomic<bool> background_priority_warned{false};

}  // namespace

void lower_to_compute_priority() {
  lower_to(kComputeNice, compute_priority_warned, "compute threads",
           "requests may wait behind batches");
}

void lower_to_background_priority() {
  lower_to(kBackgroundNice, background_priority_warned, "background work",
           "it competes with serving");
}

int current_thread_nice() {
  errno = 0;
  const int n = ::getpriority(PRIO_PROCESS, this_thread_id());
  return errno == 0 ? n : 0;
}

}  // namespace spindle
