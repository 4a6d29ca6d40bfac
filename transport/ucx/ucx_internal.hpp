// Internal to the UCX wrapper (ucx.cpp, memory.cpp): UCX status codes as
// Spindle errors, the context's handle, and a worker's state (its handlers and
// read table), which remote regions reach for the worker they were attached on.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <map>
#include <memory>
#include <string_view>

#include "transport/ucx/am_reads.hpp"
#include "transport/ucx/ucx.hpp"

namespace spindle::transport::ucx {
namespace detail {

inline status ucx_error(ucs_status_t s, std::string_view what) {
  errc code = s == UCS_ERR_CONNECTION_RESET || s == UCS_ERR_ENDPOINT_TIMEOUT ||
                      s == UCS_ERR_UNREACHABLE || s == UCS_ERR_CANCELED || s == UCS_ERR_TIMED_OUT
                  ? errc::unavailable
                  : errc::io_error;
  return make_error(code, "{}: {}", what, ucs_status_string(s));
}

inline ucp_context_h ctx_of(void* p) { return static_cast<ucp_context_h>(p); }

}  // namespace detail

struct worker::state {
  ucp_worker_h handle = nullptr;
  std::shared_ptr<std::atomic<int>> ctx_kept;  // the context's count of kept workers
  bool kept = false;
  bool one_sided_network = false;  // the context's
  std::map<unsigned, am_handler> handlers;
  std::map<unsigned, bulk_handler> bulk_handlers;
  std::unique_ptr<detail::read_table> reads;  // serves and issues reads by message
  ~state() {
    if (!handle) return;
    // A reply still queued to a frozen reader: UCX would assert in destroy.
    if (reads && reads->replies_in_flight() > 0 && !kept) {
      kept = true;
      if (ctx_kept) ctx_kept->fetch_add(1);
    }
    if (kept) {
      // Handlers stay reachable from UCX: leak them with the worker.
      new std::map<unsigned, am_handler>(std::move(handlers));
      new std::map<unsigned, bulk_handler>(std::move(bulk_handlers));
      (void)reads.release();
      return;
    }
    ucp_worker_destroy(handle);
  }
};

}  // namespace spindle::transport::ucx
