// A small RAII wrapper over UCX UCP: context, worker, endpoint, memory allocated
// and registered through UCX, remote keys, batched one-sided gets and active
// messages. UCX types stay inside transport/. Each worker has exactly one owner
// thread (stated by whoever creates it); only worker::signal may be called from
// another thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/batched_read.hpp"
#include "core/status.hpp"

namespace spindle::transport::ucx {

/// The UCP context: one per process. Enables RMA, active messages and wakeup.
class context {
 public:
  /// `transports` overrides UCX_TLS ("shm,self", "tcp"); empty keeps UCX's choice.
  static expected<context> create(std::string_view transports = {});
  context(context&&) noexcept;
  context& operator=(context&&) noexcept;
  ~context();
  void* native() const { return handle_; }
  /// Workers of this context kept until exit (see worker::keep_until_exit); the
  /// context then is too, as UCX cannot clean up under a live worker.
  std::shared_ptr<std::atomic<int>> kept_workers() const { return kept_; }
  /// Whether UCX chose a network transport with true one-sided gets (RDMA:
  /// rc, dc, ud); without one, reads of a peer's memory go as messages.
  bool one_sided_network() const { return one_sided_network_; }
  /// The transports UCX chose, as "posix/memory, tcp/lo, ..." for logs.
  std::string transports() const;

 private:
  context() = default;
  void* handle_ = nullptr;
  std::shared_ptr<std::atomic<int>> kept_;
  bool one_sided_network_ = false;
};

/// One UCP worker. Progress, address and endpoints go through its single owner.
class worker {
 public:
  using am_handler = std::function<void(std::span<const std::byte> payload)>;

  static expected<worker> create(const context& ctx);
  worker(worker&&) noexcept;
  worker& operator=(worker&&) noexcept;
  ~worker();
  void* native() const;

  /// The packed worker address a peer passes to endpoint::connect.
  expected<std::vector<std::uint8_t>> address() const;
  /// Runs one round of progress; returns true when something happened.
  bool progress();
  /// Blocks until an event arrives or signal() is called (uses ucp_worker_arm).
  void wait();
  /// Wakes a thread blocked in wait(); safe from any thread.
  void signal();
  /// Waits for a UCX request (a ucs_status_ptr_t) to finish, progressing the
  /// worker, and frees it; gives up after `timeout_ms` with errc::unavailable.
  status wait_request(void* request, int timeout_ms, std::string_view what);
  /// Never destroys this worker (nor its context): UCX 1.13 asserts in
  /// ucp_worker_destroy while requests to a frozen peer are still queued on
  /// one of its endpoints, and cannot cancel them. Called when an operation
  /// to a peer timed out; the memory is the OS's to take back at exit.
  void keep_until_exit();
  bool kept_until_exit() const;
  /// Registers `handler` for active messages with `id` (payload eager or rndv).
  status set_am_handler(unsigned id, am_handler handler);

  /// A bulk message: `header` always inline; the payload either here (`data`,
  /// valid during the call) or, when `rndv` is set, still at the sender until
  /// receive_rndv() pulls it into the receiver's own buffer (zero copy).
  struct bulk_message {
    std::span<const std::byte> header;
    std::span<const std::byte> data;  // eager payload
    bool rndv = false;
    void* rndv_desc = nullptr;  // for receive_rndv
    std::size_t length = 0;     // payload bytes (eager or rndv)
  };
  using bulk_handler = std::function<void(const bulk_message&)>;
  /// Registers `handler` for bulk messages with `id` (runs on the progressing thread).
  /// For a rendezvous message the handler must call receive_rndv before it
  /// returns, or the payload is dropped (the sender still completes).
  status set_bulk_handler(unsigned id, bulk_handler handler);
  /// Pulls a rendezvous payload into `dest` (length bytes); `done` runs on the
  /// progressing thread when it has landed (or failed).
  status receive_rndv(void* rndv_desc, std::byte* dest, std::size_t length,
                      std::function<void(status)> done);

 private:
  struct state;
  friend class remote_region;
  explicit worker(std::unique_ptr<state> s);
  std::unique_ptr<state> s_;
};

/// An endpoint to a peer worker. With `detect_peer_failure`, UCX's peer error
/// handling is on: failed() turns true when the peer dies, but UCX 1.13 then
/// routes gets through transports that need the peer's worker to progress. Without
/// it (the default for reads), shared-memory gets are truly one-sided and a dead
/// peer shows up as a completion timeout (errc::unavailable) or a transport error.
class endpoint {
 public:
  static expected<endpoint> connect(worker& w, std::span<const std::uint8_t> peer_address,
                                    bool detect_peer_failure = false);
  endpoint(endpoint&&) noexcept;
  endpoint& operator=(endpoint&&) noexcept;
  ~endpoint();
  void* native() const;
  worker& owner() const;
  bool failed() const;
  /// Skips the close handshake: the endpoint is released with its worker. For
  /// teardown and dead peers, where UCX 1.13 asserts when a close races the
  /// peer's wireup (seen over tcp with both sides connected to each other).
  void forget();
  /// Waits until every operation issued on this endpoint completed.
  status flush(int timeout_ms);
  /// Sends an active message and waits for local completion.
  status send_am(unsigned id, std::span<const std::byte> payload, int timeout_ms);
  /// Sends header + payload (rendezvous when large, so the receiver pulls the
  /// payload straight into its buffer) and waits for local completion.
  status send_bulk(unsigned id, std::span<const std::byte> header,
                   std::span<const std::byte> payload, int timeout_ms);
  /// Like send_bulk without waiting: `done` runs on the progressing thread once
  /// the send completed locally or failed (at once when it completed inline).
  /// Both buffers must stay valid until then.
  void post_bulk(unsigned id, std::span<const std::byte> header, std::span<const std::byte> payload,
                 std::function<void(status)> done);

 private:
  struct state;
  explicit endpoint(std::unique_ptr<state> s);
  std::unique_ptr<state> s_;
};

/// Memory allocated by UCX (UCP_MEM_MAP_ALLOCATE) and registered for one-sided
/// access; on one host the shared-memory transports then serve gets without the
/// owner's worker taking part.
class mapped_memory {
 public:
  static expected<mapped_memory> allocate(const context& ctx, std::size_t bytes);
  mapped_memory(mapped_memory&&) noexcept;
  mapped_memory& operator=(mapped_memory&&) noexcept;
  ~mapped_memory();
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  /// The packed remote key a reader unpacks with remote_region::attach.
  expected<std::vector<std::uint8_t>> pack_rkey() const;

 private:
  mapped_memory() = default;
  void* ctx_ = nullptr;
  void* memh_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Appends `bytes` as lowercase hex (addresses and keys travel as text).
void append_hex(std::string& out, std::span<const std::uint8_t> bytes);
/// Parses hex text; errors name `field`.
expected<std::vector<std::uint8_t>> parse_hex(std::string_view text, std::string_view field);

/// What a reader needs to get from a region: published through the control plane.
struct region_descriptor {
  std::vector<std::uint8_t> worker_address;
  std::vector<std::uint8_t> rkey;
  std::uint64_t base = 0;
  std::uint64_t length = 0;

  /// Hex text, one line, for pipes, files and CAF strings.
  std::string encode() const;
  static expected<region_descriptor> decode(std::string_view text);
};

/// A descriptor for `memory`, owned by `w`.
expected<region_descriptor> describe(const worker& w, const mapped_memory& memory);

/// A remote region read through an endpoint of the reader's worker: by pointer
/// when UCX maps the owner's memory here (shared memory), by one-sided gets over
/// an RDMA transport, and otherwise (tcp) by read requests the owner's worker
/// answers with the rows (transport/ucx/am_reads.hpp says why not UCX's
/// emulated gets). read() issues everything, then waits once; the reader's
/// thread owns the worker while it runs.
class remote_region final : public batched_reader {
 public:
  static expected<std::unique_ptr<remote_region>> attach(worker& w, const region_descriptor& d,
                                                         int timeout_ms = 10'000);
  ~remote_region() override;
  std::uint64_t size() const override { return length_; }
  status read(std::span<const read_op> ops) override;
  /// The owner's memory mapped here (ucp_rkey_ptr) when UCX reaches the owner
  /// through shared memory; nullptr over tcp and other network transports.
  const std::byte* mapped() const override { return mapped_; }

 private:
  remote_region(endpoint ep, void* rkey, std::uint64_t base, std::uint64_t length, int timeout);
  status read_by_messages(std::span<const read_op> ops);
  endpoint ep_;
  bool by_messages_ = false;
  void* rkey_ = nullptr;
  std::uint64_t base_ = 0;
  std::uint64_t length_ = 0;
  int timeout_ms_ = 0;
  const std::byte* mapped_ = nullptr;
};

}  // namespace spindle::transport::ucx
