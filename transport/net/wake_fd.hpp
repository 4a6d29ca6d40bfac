// The eventfd a door's I/O thread watches beside its sockets: any thread writes
// to it to wake the loop (to stop it, or to hand it finished work).
#pragma once

#include <unistd.h>

#include <cstdint>

namespace spindle::transport::net {

/// Wakes the loop watching eventfd `fd` (its counter goes up by one).
inline void wake(int fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto w = ::write(fd, &one, sizeof one);
}

}  // namespace spindle::transport::net
