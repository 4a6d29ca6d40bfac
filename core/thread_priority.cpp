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

}  // namespace

void lower_to_compute_priority() {
  if (current_thread_nice() >= kComputeNice) return;
  if (::setpriority(PRIO_PROCESS, this_thread_id(), kComputeNice) != 0) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      log::warn("cannot lower compute threads to nice {}: {}; requests may wait behind batches",
                kComputeNice, std::strerror(errno));
  }
}

void lower_to_background_priority() {
  if (current_thread_nice() >= kBackgroundNice) return;
  if (::setpriority(PRIO_PROCESS, this_thread_id(), kBackgroundNice) != 0) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      log::warn("cannot lower background work to nice {}: {}; it competes with serving",
                kBackgroundNice, std::strerror(errno));
  }
}

int current_thread_nice() {
  errno = 0;
  const int n = ::getpriority(PRIO_PROCESS, this_thread_id());
  return errno == 0 ? n : 0;
}

}  // namespace spindle
