// Whether a loopback connection was opened by this very process: its peer's
// socket is found in /proc/net/tcp and must be one of this process's
// descriptors. The cluster's dialer relays only its own process's links.
#pragma once

namespace spindle::transport::net {

/// True when the IPv4 connection `fd` (accepted here) was opened by this process.
bool from_this_process(int fd);

}  // namespace spindle::transport::net
