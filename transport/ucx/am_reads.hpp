// Reads of a peer's UCX-mapped memory carried by active messages, for
// transports without true one-sided access (tcp). UCX 1.13 emulates a get over
// tcp with its own request/reply messages, and its reply path ucs_fatal()s the
// OWNER when the reader froze ("Endpoint timeout" in ucp_get_req_handler).
// Here the owner's handler packs the rows itself and posts the reply as an
// ordinary active message whose failure is only a status. Internal to
// transport/ucx (it speaks UCX types); ucx.cpp installs it on every worker.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/batched_read.hpp"
#include "core/status.hpp"

namespace spindle::transport::ucx::detail {

/// Memory a peer may read through a request: exactly what mapped_memory
/// registered for remote access (the same rights its rkey gives a get).
void expose_memory(const std::byte* base, std::size_t length);
void withdraw_memory(const std::byte* base);
bool memory_exposed(std::uint64_t address, std::uint64_t bytes);

/// One worker's side of the protocol: it serves requests for exposed memory
/// and completes its own reads when replies come. Runs on the worker's owner thread.
class read_table {
 public:
  /// Registers both handlers on `w`; the table must live as long as `w`.
  static expected<std::unique_ptr<read_table>> install(ucp_worker_h w);
  ~read_table();
  read_table(const read_table&) = delete;
  read_table& operator=(const read_table&) = delete;

  /// Reads `ops` (offsets from `base` at the peer) over `ep`: one request per
  /// chunk, every chunk sent before the first wait. On a timeout the pending
  /// reads are dropped (a late reply is discarded) and `timed_out` is set.
  status read(ucp_ep_h ep, std::uint64_t base, std::span<const read_op> ops, int timeout_ms,
              bool& timed_out);
  /// Replies posted by this worker not yet completed (a frozen reader's stay).
  std::size_t replies_in_flight() const;

  struct state;  // public for the handlers' trampolines only

 private:
  explicit read_table(std::unique_ptr<state> s);
  std::unique_ptr<state> s_;
};

}  // namespace spindle::transport::ucx::detail
