#include "transport/ucx/net_devices.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>

#include "core/log.hpp"

namespace spindle::transport::ucx {
namespace {

bool same_address(const sockaddr* a, const sockaddr* b) {
  if (a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  if (a->sa_family == AF_INET6)
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, 16) == 0;
  return false;
}

bool is_wildcard(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr == htonl(INADDR_ANY);
  if (a->sa_family == AF_INET6)
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
  return false;
}

bool is_loopback(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  if (a->sa_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
  return false;
}

}  // namespace

expected<std::string> interface_of(std::string_view host_view) {
  std::string host(host_view);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0)
    return make_error(errc::invalid_argument, "host '{}': {}", host, ::gai_strerror(rc));
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) != 0) {
    ::freeaddrinfo(res);
    return make_error(errc::io_error, "getifaddrs: {}", std::strerror(errno));
  }
  std::string found;
  bool wildcard = false;
  for (auto* r = res; r && found.empty() && !wildcard; r = r->ai_next) {
    if (is_wildcard(r->ai_addr)) wildcard = true;
    for (auto* i = ifs; i && found.empty() && !wildcard; i = i->ifa_next) {
      if (!i->ifa_addr) continue;
      // 127.0.0.0/8 lives on the loopback interface although only 127.0.0.1 is listed.
      if (same_address(i->ifa_addr, r->ai_addr) ||
          (is_loopback(r->ai_addr) && is_loopback(i->ifa_addr)))
        found = i->ifa_name;
    }
  }
  ::freeifaddrs(ifs);
  ::freeaddrinfo(res);
  if (wildcard) return std::string();
  if (found.empty())
    return make_error(errc::invalid_argument, "host '{}': no local interface has this address",
                      host);
  return found;
}

status restrict_to_host(std::string_view host) {
  if (const char* own = std::getenv("UCX_NET_DEVICES"); own && *own) {
    log::debug("UCX_NET_DEVICES={} (set by the user)", own);
    return status::ok();
  }
  SPINDLE_ASSIGN_OR_RETURN(auto device, interface_of(host));
  if (device.empty()) {
    log::warn("{} is a wildcard: UCX listens on every network device", host);
    return status::ok();
  }
  ::setenv("UCX_NET_DEVICES", device.c_str(), 0);
  log::debug("UCX_NET_DEVICES={} (the interface of {})", device, host);
  return status::ok();
}

}  // namespace spindle::transport::ucx
