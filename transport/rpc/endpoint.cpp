#include "transport/rpc/endpoint.hpp"

#include <algorithm>
#include <cctype>

namespace spindle::transport {

expected<host_port> parse_host_port(std::string_view text, std::string_view flag) {
  const auto shown = text.substr(0, 80);
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size())
    return make_error(errc::invalid_argument, "{} '{}': expected HOST:PORT", flag, shown);
  const auto port_text = text.substr(colon + 1);
  if (port_text.size() > 5 ||
      !std::all_of(port_text.begin(), port_text.end(), [](char c) { return std::isdigit(c); }))
    return make_error(errc::invalid_argument, "{} '{}': port '{}' is not a number in 0..65535",
                      flag, shown, port_text.substr(0, 16));
  const unsigned port = unsigned(std::stoul(std::string(port_text)));
  if (port > 65535)
    return make_error(errc::invalid_argument, "{} '{}': port {} is not in 0..65535", flag, shown,
                      port);
  std::string host(text.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return host_port{host, port};
}

}  // namespace spindle::transport
