#include "transport/rpc/rpc_acceptor.hpp"

#include <capnp/rpc-twoparty.h>
#include <sys/socket.h>

#include <map>
#include <string>

#include "core/log.hpp"
#include "transport/net/door_gate.hpp"
#include "transport/net/listen_socket.hpp"
#include "transport/rpc/coalescing_stream.hpp"
#include "transport/rpc/watched_stream.hpp"

namespace spindle::transport::rpc {
namespace {

// One client connection: its two-party network and RPC system, with a flow
// limit so a connection cannot queue unbounded calls (Cap'n Proto stops reading
// from it until answers drain).
struct connection {
  kj::Own<watched_stream> stream;
  coalescing_stream out;  // the answers of one loop turn in one write
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
  connection(kj::Own<kj::AsyncIoStream> s, capnp::Capability::Client main,
             capnp::ReaderOptions limits, std::size_t flow_limit)
      : stream(kj::heap<watched_stream>(kj::mv(s))),
        out(*stream),
        network(out, capnp::rpc::twoparty::Side::SERVER, limits),
        rpc(capnp::makeRpcServer(network, kj::mv(main))) {
    rpc.setFlowLimit(flow_limit / sizeof(capnp::word));  // Cap'n Proto counts words
  }
};

// The accept loop. A failed accept is logged and retried with backoff, never
// the end of the listener (out of descriptors, one pending connection is shed);
// a connection the door's gate does not admit (net/door_gate.hpp) is closed at
// once, after the connection idle longest could not make room.
class acceptor final : public acceptor_loop, public kj::TaskSet::ErrorHandler {
 public:
  acceptor(kj::ConnectionReceiver& listener, int listen_fd, kj::Timer& timer,
           capnp::Capability::Client main, capnp::ReaderOptions limits, const server_options& o)
      : listener_(listener),
        listen_fd_(listen_fd),
        timer_(timer),
        main_(kj::mv(main)),
        limits_(limits),
        o_(o),
        gate_("rpc", o.max_connections) {}

  kj::Promise<void> loop() override {
    // evalNow: accept() may throw at once (EMFILE); that must reach the handler below.
    return kj::evalNow([this] { return listener_.accept(); })
        .then(
            [this](kj::Own<kj::AsyncIoStream> stream) {
              backoff_ms_ = 0;
              admit(kj::mv(stream));
              return loop();
            },
            [this](kj::Exception&& e) -> kj::Promise<void> {
              backoff_ms_ = backoff_ms_ == 0 ? 10 : std::min<std::uint64_t>(backoff_ms_ * 2, 1000);
              const std::string why = e.getDescription().cStr();
              if (++accept_failures_ % 100 == 1)  // rate-limited: one line per 100 failures
                log::warn("rpc: accept failed ({} so far): {}; retrying in {} ms", accept_failures_,
                          why, backoff_ms_);
              // Out of descriptors (EMFILE, ENFILE): a pending client sees its connection end.
              if (why.find("Too many open files") != std::string::npos) spare_.shed_one(listen_fd_);
              return timer_.afterDelay(backoff_ms_ * kj::MILLISECONDS).then([this] {
                return loop();
              });
            });
  }

  // Every 2 s: a connection stalled inside a message for kMessageDeadline is
  // closed (it holds up to the message limit in buffers while sending nothing).
  kj::Promise<void> sweep() override {
    return timer_.afterDelay(2 * kj::SECONDS).then([this] {
      gate_.tick();
      net::return_memory_after_flood();
      for (auto& [id, l] : live_)
        if (watched_stream* w = l.stream;
            !w->closed() && w->mid_message() && w->idle_s() > kMessageDeadlineSeconds) {
          if (++stalled_ % 100 == 1)
            log::warn("rpc: closed a connection whose message was not complete {:.0f} s after "
                      "it began ({} so far)",
                      w->idle_s(), stalled_);
          w->close();
        }
      return sweep();
    });
  }

  void taskFailed(kj::Exception&& e) override {
    log::debug("rpc: a connection ended with an error: {}", e.getDescription().cStr());
  }

 private:
  static std::string peer_of(kj::AsyncIoStream& stream) {
    sockaddr_storage sa{};
    kj::uint len = sizeof sa;
    try {
      stream.getpeername(reinterpret_cast<sockaddr*>(&sa), &len);
    } catch (...) {
      return "?";
    }
    return net::address_of(reinterpret_cast<sockaddr*>(&sa), socklen_t(len));
  }

  void admit(kj::Own<kj::AsyncIoStream> stream) {
    const std::string peer = peer_of(*stream);
    auto a = gate_.admit(peer);
    if (a != net::admission::admitted &&
        evict_idlest(a == net::admission::peer_full ? &peer : nullptr))
      a = gate_.admit(peer);
    if (a != net::admission::admitted) {
      gate_.refused(a, peer);
      return;  // `stream` closes here: the client sees the connection end at once
    }
    auto c = kj::heap<connection>(kj::mv(stream), main_, limits_, o_.flow_limit_bytes);
    const std::uint64_t id = ++next_id_;
    live_[id] = {c->stream.get(), peer};
    auto done = c->network.onDisconnect();
    // (kj's then() keeps a reference to an lvalue functor: each gets its own lambda.)
    tasks_.add(done.attach(kj::mv(c)).then([this, id] { forget(id); },
                                           [this, id](kj::Exception&&) { forget(id); }));
    // A client that sends nothing by the handshake deadline holds a slot for nothing.
    tasks_.add(timer_.afterDelay(kHandshakeDeadline).then([this, id] {
      auto it = live_.find(id);
      if (it == live_.end()) return;
      watched_stream* w = it->second.stream;
      if (w->bytes() == 0 && !w->closed()) {
        if (++silent_ % 100 == 1)
          log::warn("rpc: closed a connection that sent nothing in {} s ({} so far)",
                    kHandshakeDeadline / kj::SECONDS, silent_);
        w->close();
      }
    }));
  }

  void forget(std::uint64_t id) {
    auto it = live_.find(id);
    if (it == live_.end()) return;  // an evicted connection's slot was freed already
    gate_.release(it->second.peer);
    live_.erase(it);
  }

  // Full: the connection idle longest (of `peer` when given; at least
  // net::kEvictIdleSeconds) makes room; false when every one is busy.
  bool evict_idlest(const std::string* peer) {
    auto idlest = live_.end();
    for (auto it = live_.begin(); it != live_.end(); ++it)
      if (!it->second.stream->closed() && (!peer || it->second.peer == *peer) &&
          (idlest == live_.end() || it->second.stream->idle_s() > idlest->second.stream->idle_s()))
        idlest = it;
    if (idlest == live_.end() || idlest->second.stream->idle_s() < net::kEvictIdleSeconds)
      return false;
    gate_.evicted(idlest->second.stream->idle_s());
    idlest->second.stream->close();
    forget(idlest->first);  // its slot is free now; its task ends on its own
    return true;
  }

  static constexpr kj::Duration kHandshakeDeadline = 10 * kj::SECONDS;
  static constexpr double kMessageDeadlineSeconds = 10.0;
  std::uint64_t stalled_ = 0;
  struct live_connection {
    watched_stream* stream;
    std::string peer;
  };
  std::map<std::uint64_t, live_connection> live_;  // open connections by admission order
  std::uint64_t next_id_ = 0, silent_ = 0;

  kj::ConnectionReceiver& listener_;
  int listen_fd_;
  kj::Timer& timer_;
  capnp::Capability::Client main_;
  capnp::ReaderOptions limits_;
  server_options o_;
  net::door_gate gate_;
  net::spare_descriptor spare_;
  kj::TaskSet tasks_{*this};
  std::uint64_t backoff_ms_ = 0, accept_failures_ = 0;
};

}  // namespace

kj::Own<acceptor_loop> make_acceptor(kj::ConnectionReceiver& listener, int listen_fd,
                                     kj::Timer& timer, capnp::Capability::Client main,
                                     capnp::ReaderOptions limits, const server_options& o) {
  return kj::heap<acceptor>(listener, listen_fd, timer, kj::mv(main), limits, o);
}

}  // namespace spindle::transport::rpc
