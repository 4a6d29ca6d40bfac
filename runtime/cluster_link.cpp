#include "runtime/cluster_link.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/signals.hpp"

namespace spindle::runtime {

expected<std::unique_ptr<transport::net::token_relay>> publish_gated(caf::actor_system& sys,
                                                                     const caf::actor& actor,
                                                                     const config::server_spec& me,
                                                                     const std::string& token,
                                                                     int* caf_port) {
  auto inner = sys.middleman().publish(actor, 0, "127.0.0.1", true);
  if (!inner)
    return make_error(errc::io_error, "server '{}': cannot publish on loopback: {}", me.name,
                      to_string(inner.error()));
  if (caf_port) *caf_port = int(*inner);
  auto gate = transport::net::token_relay::gate(me.host, me.port, int(*inner), token, "caf-gate");
  if (!gate)
    return make_error(errc::io_error, "server '{}': cannot listen on {}:{}: {}", me.name, me.host,
                      me.port, gate.error().message());
  return gate;
}

expected<remote_link> connect_gated(caf::actor_system& sys, const config::server_spec& to,
                                    const std::string& token, int timeout_s) {
  SPINDLE_ASSIGN_OR_RETURN(
      auto dialer, transport::net::token_relay::dialer(to.host, to.port, token, "caf-dialer"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int refusals = 0;
  for (;;) {
    // The handshake alone first: a refused token is said as such, at once.
    const status proof = transport::net::token_relay::prove(to.host, to.port, token);
    // A refusal is believed when it repeats: a gate under a flood of unproven
    // connections may close ours mid-handshake to make room.
    const bool refused = proof.message().find("cluster token") != std::string::npos ||
                         proof.message().find("cluster's token") != std::string::npos ||
                         proof.message().find("not a Spindle cluster port") != std::string::npos;
    refusals = refused ? refusals + 1 : 0;
    if (refusals >= 3) return make_error(errc::unavailable, "{}: {}", to.name, proof.message());
    if (proof) {
      auto a = sys.middleman().remote_actor("127.0.0.1", std::uint16_t(dialer->port()));
      if (a) return remote_link{*a, std::move(dialer)};
    }
    if (std::chrono::steady_clock::now() > deadline)
      return make_error(errc::unavailable, "{} at {}:{} unreachable: {}", to.name, to.host, to.port,
                        proof ? "the link did not come up" : proof.message());
    if (stop_signal_pending())  // launch, mpirun or Kubernetes stops the node: now
      return make_error(errc::unavailable, "stopped by a signal while reaching {} at {}:{}",
                        to.name, to.host, to.port);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

expected<int> free_port_on(const std::string& host) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), "0", &hints, &res) != 0 || !res)
    return make_error(errc::invalid_argument, "host '{}': cannot resolve", host);
  const int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int port = -1;
  if (fd >= 0 && ::bind(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0)
      port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  if (fd >= 0) ::close(fd);
  freeaddrinfo(res);
  if (port <= 0) return make_error(errc::io_error, "host '{}': no free port", host);
  return port;
}

}  // namespace spindle::runtime
