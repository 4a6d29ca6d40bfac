// Internal to the Cap'n Proto client (rpc_client*.cpp): the connection's state
// and the helpers every part of the client uses (errors as values, admin replies).
#pragma once

#include <capnp/ez-rpc.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/timer.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "transport/rpc/codec.hpp"
#include "transport/rpc/rpc_client.hpp"
#include "transport/ucx/ucx.hpp"

namespace spindle::transport::rpc {

using detail::str;
using detail::text;

struct rpc_client::impl {
  capnp::EzRpcClient ez;
  ::Spindle::Client root;
  ::Inference::Client inference;
  ::Admin::Client admin;
  int timeout_ms;
  // SplitRPC data path (after open_split): this thread owns the worker.
  std::optional<ucx::context> ucx_ctx;
  std::optional<ucx::worker> ucx_worker;
  std::optional<ucx::endpoint> ucx_ep;
  std::vector<std::string> split_models;
  std::uint64_t next_call = 0;

  impl(const std::string& host, unsigned port, int timeout)
      : ez(host, port, limits()),
        root(ez.getMain<::Spindle>()),
        inference(root.inferenceRequest().send().getInference()),
        admin(root.adminRequest().send().getAdmin()),
        timeout_ms(timeout) {}

  static capnp::ReaderOptions limits() {
    capnp::ReaderOptions o;
    o.traversalLimitInWords = (256ull << 20) / 8;
    return o;
  }

  kj::WaitScope& ws() { return ez.getWaitScope(); }
  kj::Timer& timer() { return ez.getIoProvider().getTimer(); }

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
