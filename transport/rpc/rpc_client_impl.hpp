// Internal to the Cap'n Proto client (rpc_client*.cpp): the connection's state
// and the helpers every part of the client uses (errors as values, admin replies).
#pragma once

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/timer.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/rpc/codec.hpp"
#include "transport/rpc/coalescing_stream.hpp"
#include "transport/rpc/rpc_client.hpp"
#include "transport/ucx/ucx.hpp"

namespace spindle::transport::rpc {

using detail::str;
using detail::text;

// The event loop and I/O of this thread, shared by every client the thread
// opens (kj allows one event loop a thread: `client load` over several doors
// opens a client per door); it goes with the thread's last client.
struct thread_io {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  static std::shared_ptr<thread_io> get() {
    thread_local std::weak_ptr<thread_io> current;
    auto p = current.lock();
    if (!p) {
      p = std::make_shared<thread_io>();
      current = p;
    }
    return p;
  }
};

struct rpc_client::impl {
  int timeout_ms;
  std::shared_ptr<thread_io> shared_io;  // first: outlives the connection below
  kj::AsyncIoContext& io;
  kj::Own<kj::AsyncIoStream> stream;
  kj::Own<coalescing_stream> batched;  // the requests of one loop turn in one write
  kj::Own<capnp::TwoPartyVatNetwork> network;
  kj::Own<capnp::RpcSystem<capnp::rpc::twoparty::VatId>> rpc;
  ::Spindle::Client root = nullptr;
  ::Inference::Client inference = nullptr;
  ::Admin::Client admin = nullptr;
  // SplitRPC data path (after open_split): this thread owns the worker.
  std::optional<ucx::context> ucx_ctx;
  std::optional<ucx::worker> ucx_worker;
  std::optional<ucx::endpoint> ucx_ep;
  std::vector<std::string> split_models;
  std::uint64_t next_call = 0;
  unsigned answer_poll_us = 0;  // poll_answers(): a lone closed loop's wait for its answer

  // Connects (within the timeout; a kj::Exception otherwise) and asks for the root.
  impl(const std::string& host, unsigned port, int timeout)
      : timeout_ms(timeout), shared_io(thread_io::get()), io(shared_io->io) {
    auto address = wait(io.provider->getNetwork().parseAddress(host, port));
    stream = wait(address->connect());
    batched = kj::heap<coalescing_stream>(*stream);
    network = kj::heap<capnp::TwoPartyVatNetwork>(*batched, capnp::rpc::twoparty::Side::CLIENT,
                                                  limits());
    rpc = kj::heap<capnp::RpcSystem<capnp::rpc::twoparty::VatId>>(capnp::makeRpcClient(*network));
    capnp::MallocMessageBuilder vat(8);
    auto server = vat.initRoot<capnp::rpc::twoparty::VatId>();
    server.setSide(capnp::rpc::twoparty::Side::SERVER);
    root = rpc->bootstrap(server).castAs<::Spindle>();
    inference = root.inferenceRequest().send().getInference();
    admin = root.adminRequest().send().getAdmin();
  }

  static capnp::ReaderOptions limits() {
    capnp::ReaderOptions o;
    o.traversalLimitInWords = (256ull << 20) / 8;
    return o;
  }

  kj::WaitScope& ws() { return io.waitScope; }
  kj::Timer& timer() { return io.provider->getTimer(); }

  template <class T>
  T wait(kj::Promise<T> p) {
    return timer().timeoutAfter(timeout_ms * kj::MILLISECONDS, kj::mv(p)).wait(ws());
  }
};

namespace detail {

template <class F>
auto guarded(const std::string& endpoint, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const kj::Exception& e) {
    return make_error(errc::unavailable, "rpc {}: {}", endpoint, e.getDescription().cStr());
  }
}

template <class Results>
admin_reply admin_of(Results& r) {
  admin_reply a;
  a.status = detail::from_wire(r.getStatus());
  a.message = str(r.getMessage());
  return a;
}

inline double seconds_between(std::chrono::steady_clock::time_point a,
                       std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace detail

// What every part of the client uses, unqualified.
using detail::admin_of;
using detail::guarded;
using detail::seconds_between;

}  // namespace spindle::transport::rpc
