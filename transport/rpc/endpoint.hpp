// HOST:PORT parsing for every address flag (--listen, --metrics, --connect):
// the port must be a number in 0..65535 (0: a free one), IPv6 hosts in
// brackets. Errors name the flag and the value.
#pragma once

#include <string>
#include <string_view>

#include "core/status.hpp"

namespace spindle::transport {

struct host_port {
  std::string host;  // without brackets
  unsigned port = 0;
};

expected<host_port> parse_host_port(std::string_view text, std::string_view flag);

}  // namespace spindle::transport
