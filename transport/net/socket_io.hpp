// Blocking TCP socket I/O bounded by a deadline, for short exchanges outside
// the event loops: the file door's wire and the token relay's one-shot proof.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "core/status.hpp"

namespace spindle::transport::net::socket_io {

using clock_type = std::chrono::steady_clock;

/// All n bytes written / read before `deadline`; false on error, EOF or time out.
bool send_all(int fd, const void* data, std::size_t n, clock_type::time_point deadline);
bool recv_exact(int fd, void* out, std::size_t n, clock_type::time_point deadline);

/// A connected TCP socket to host:port (close-on-exec, TCP_NODELAY), or
/// errc::unavailable naming the address and why.
expected<int> connect_to(const std::string& host, int port, int timeout_ms);

}  // namespace spindle::transport::net::socket_io
