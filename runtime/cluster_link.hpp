// The cluster's CAF links behind authenticated relays (transport/net/
// token_relay.hpp): a node's actor is published on a loopback port that only
// its token gate (at the node's configured host:port) reaches, and another
// node's actor is reached through a token dialer. A stranger's bytes on a
// node's port end at the gate, never in CAF's middleman.
#pragma once

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <memory>
#include <string>

#include "config/topology.hpp"
#include "core/status.hpp"
#include "transport/net/token_relay.hpp"

namespace spindle::runtime {

/// Publishes `actor` behind a gate at me.host:me.port; the gate relays to CAF
/// only connections that prove `token`. Keep the returned relay for as long as
/// the node serves. `caf_port` gets CAF's own loopback port (for the log).
expected<std::unique_ptr<transport::net::token_relay>> publish_gated(caf::actor_system& sys,
                                                                     const caf::actor& actor,
                                                                     const config::server_spec& me,
                                                                     const std::string& token,
                                                                     int* caf_port = nullptr);

/// A remote node's published actor, and the dialer its link runs through (keep
/// both together).
struct remote_link {
  caf::actor actor;
  std::unique_ptr<transport::net::token_relay> dialer;
};

/// Connects to the actor `to` publishes, retrying for `timeout_s` seconds.
expected<remote_link> connect_gated(caf::actor_system& sys, const config::server_spec& to,
                                    const std::string& token, int timeout_s);

/// A port free on `host` now (bound, read, released), for a process about to
/// listen there (a plan server, a joining rank's gate); fails naming the host.
expected<int> free_port_on(const std::string& host);

}  // namespace spindle::runtime
