// How the gateway turns a serving actor's reply into a door's answer: a failed
// actor request, a serving error (by its status code) or a missed deadline
// becomes the answer's status and message. Shared by the GNN path and the
// recommendation batcher.
#pragma once

#include <fmt/format.h>

#include <caf/all.hpp>
#include <chrono>

#include "core/status.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::actors::detail {

using transport::rpc::rpc_status;
using clock_type = std::chrono::steady_clock;

// A serving error's code as a reply status.
inline rpc_status status_of_error(const status& error) {
  switch (error.code()) {
    case errc::invalid_argument:
    case errc::not_found:
      return rpc_status::bad_request;
    case errc::unavailable:
      return rpc_status::unavailable;
    default:
      return rpc_status::internal;
  }
}

// A call's wait for its serving actor: its deadline, or none. A finite timeout
// puts one entry on CAF's clock thread per call and takes it off at the answer
// (two wake-ups of that thread per call, the served path's profile in
// docs/architecture.md); a call without a deadline waits on no timer.
inline caf::duration timeout_of(std::uint32_t deadline_us) {
  return deadline_us > 0 ? caf::duration(std::chrono::microseconds(deadline_us))
                         : caf::duration(caf::infinite);
}

inline double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

template <class Answer>
bool fail_caf(Answer& a, const caf::error* e, std::uint32_t deadline_us) {
  if (e == nullptr) return false;
  if (*e == caf::sec::request_timeout && deadline_us > 0) {
    a.status = rpc_status::deadline_exceeded;
    a.message = fmt::format("no answer within the deadline of {} us", deadline_us);
  } else {
    a.status = rpc_status::unavailable;
    a.message = "serving actor failed: " + caf::to_string(*e);
  }
  return true;
}

// The common part of answering a forwarded call: a failed actor request, a
// serving error, or a missed deadline. True when the reply's result is to be used.
template <class Answer, class Reply>
bool settle(Answer& a, const Reply* r, const caf::error* err, std::uint32_t deadline) {
  if (fail_caf(a, err, deadline)) return false;
  if (!r->error) {
    a.status = status_of_error(r->error);
    a.message = r->error.to_string();
    return false;
  }
  if (deadline > 0 && a.server_us > deadline) {
    a.status = rpc_status::deadline_exceeded;
    a.message = fmt::format("answered after {} us, deadline {} us", a.server_us, deadline);
    return false;
  }
  return true;
}

}  // namespace spindle::actors::detail
