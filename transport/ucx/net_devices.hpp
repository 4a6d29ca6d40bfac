// Which network devices UCX may open listeners on. By default UCX's tcp
// transport listens on every interface, so a cluster configured on loopback
// would still accept connections on the machine's external address. A process
// restricts UCX to the interface that carries its configured address before it
// creates a UCX context (a user's own UCX_NET_DEVICES wins).
#pragma once

#include <string>
#include <string_view>

#include "core/status.hpp"

namespace spindle::transport::ucx {

/// The interface name carrying `host` (an IPv4/IPv6 literal or a name that
/// resolves to one): "lo" for 127.0.0.0/8 and ::1. Fails, naming the host, when
/// no local interface has that address; "" for a wildcard (0.0.0.0, ::).
expected<std::string> interface_of(std::string_view host);

/// Sets UCX_NET_DEVICES to the interface carrying `host` unless the variable is
/// already set; a wildcard host leaves UCX's default (every device), logged.
/// Call before the process creates its first UCX context.
status restrict_to_host(std::string_view host);

}  // namespace spindle::transport::ucx
