// Registered memory and remote regions: memory mapped for one-sided gets (and
// readable by peers' read requests), its packed remote key, and a region of a
// peer's memory read by batched gets or, where one-sided reads cannot reach, by
// read messages.
#include <sys/mman.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstring>

#include "transport/ucx/ucx_internal.hpp"

namespace spindle::transport::ucx {

using detail::ctx_of;
using detail::ucx_error;

// ---- memory --------------------------------------------------------------

expected<mapped_memory> mapped_memory::allocate(const context& ctx, std::size_t bytes) {
  if (bytes == 0) return make_error(errc::invalid_argument, "ucp_mem_map: zero-byte region");
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  p.length = bytes;
  p.flags = UCP_MEM_MAP_ALLOCATE;
  ucp_mem_h memh = nullptr;
  if (ucs_status_t st = ucp_mem_map(ctx_of(ctx.native()), &p, &memh); st != UCS_OK)
    return ucx_error(st, fmt::format("ucp_mem_map({} bytes)", bytes));
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  if (ucs_status_t st = ucp_mem_query(memh, &attr); st != UCS_OK) {
    ucp_mem_unmap(ctx_of(ctx.native()), memh);
    return ucx_error(st, "ucp_mem_query");
  }
  mapped_memory m;
  m.ctx_ = ctx.native();
  m.memh_ = memh;
  m.data_ = static_cast<std::byte*>(attr.address);
  m.size_ = bytes;
  detail::expose_memory(m.data_, m.size_);  // readable by peers' read requests, as by gets
  return m;
}

mapped_memory::mapped_memory(mapped_memory&& o) noexcept
    : ctx_(std::exchange(o.ctx_, nullptr)),
      memh_(std::exchange(o.memh_, nullptr)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}
mapped_memory& mapped_memory::operator=(mapped_memory&& o) noexcept {
  std::swap(ctx_, o.ctx_);
  std::swap(memh_, o.memh_);
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  return *this;
}
mapped_memory::~mapped_memory() {
  if (data_) detail::withdraw_memory(data_);
  if (memh_) ucp_mem_unmap(ctx_of(ctx_), static_cast<ucp_mem_h>(memh_));
}

expected<std::vector<std::uint8_t>> mapped_memory::pack_rkey() const {
  void* buf = nullptr;
  size_t len = 0;
  if (ucs_status_t st = ucp_rkey_pack(ctx_of(ctx_), static_cast<ucp_mem_h>(memh_), &buf, &len);
      st != UCS_OK)
    return ucx_error(st, "ucp_rkey_pack");
  auto* p = static_cast<const std::uint8_t*>(buf);
  std::vector<std::uint8_t> out(p, p + len);
  ucp_rkey_buffer_release(buf);
  return out;
}

expected<region_descriptor> describe(const worker& w, const mapped_memory& memory) {
  region_descriptor d;
  SPINDLE_ASSIGN_OR_RETURN(d.worker_address, w.address());
  SPINDLE_ASSIGN_OR_RETURN(d.rkey, memory.pack_rkey());
  d.base = reinterpret_cast<std::uint64_t>(memory.data());
  d.length = memory.size();
  return d;
}

// ---- remote region -------------------------------------------------------

namespace {
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
// A freshly mapped peer region faults on first touch of every page (microseconds
// each in a VM); serving requests must not pay that, so attach pays it once.
void prefault(const std::byte* p, std::uint64_t length) {
  const std::uintptr_t page = 4096;
  auto begin = reinterpret_cast<std::uintptr_t>(p) & ~(page - 1);
  auto end = reinterpret_cast<std::uintptr_t>(p) + length;
  if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0) return;
  volatile std::byte sink{};
  for (std::uintptr_t a = begin; a < end; a += page)
    if (a >= reinterpret_cast<std::uintptr_t>(p)) sink = *reinterpret_cast<const std::byte*>(a);
  (void)sink;
}
}  // namespace

remote_region::remote_region(endpoint ep, void* rkey, std::uint64_t base, std::uint64_t length,
                             int timeout)
    : ep_(std::move(ep)), rkey_(rkey), base_(base), length_(length), timeout_ms_(timeout) {
  void* ptr = nullptr;
  if (ucp_rkey_ptr(static_cast<ucp_rkey_h>(rkey_), base_, &ptr) != UCS_OK) return;
  mapped_ = static_cast<const std::byte*>(ptr);
  prefault(mapped_, length_);
}

remote_region::~remote_region() {
  if (rkey_) ucp_rkey_destroy(static_cast<ucp_rkey_h>(rkey_));
}

namespace {
// Unpacks `d`'s rkey on a new endpoint of `w` with the given error mode.
expected<std::pair<endpoint, ucp_rkey_h>> connect_region(worker& w, const region_descriptor& d,
                                                         bool detect_peer_failure) {
  SPINDLE_ASSIGN_OR_RETURN(auto ep, endpoint::connect(w, d.worker_address, detect_peer_failure));
  ucp_rkey_h rkey = nullptr;
  if (ucs_status_t st =
          ucp_ep_rkey_unpack(static_cast<ucp_ep_h>(ep.native()), d.rkey.data(), &rkey);
      st != UCS_OK)
    return ucx_error(st, "ucp_ep_rkey_unpack");
  return std::pair{std::move(ep), rkey};
}
}  // namespace

// Shared memory (the rkey maps here): no peer error handling, so gets stay
// truly one-sided. Anything else (TCP): the owner serves every get from its
// worker, and without peer error handling on both sides a reader that dies
// while a reply is in flight makes UCX abort the OWNER (seen: a surviving
// member killed by ucs_fatal "Endpoint timeout" in ucp_get_req_handler). So
// those endpoints are made again with UCX's peer failure detection on.
expected<std::unique_ptr<remote_region>> remote_region::attach(worker& w,
                                                               const region_descriptor& d,
                                                               int timeout_ms) {
  SPINDLE_ASSIGN_OR_RETURN(auto first, connect_region(w, d, false));
  void* ptr = nullptr;
  if (ucp_rkey_ptr(first.second, d.base, &ptr) != UCS_OK) {
    ucp_rkey_destroy(first.second);
    SPINDLE_ASSIGN_OR_RETURN(first, connect_region(w, d, true));
  }
  std::unique_ptr<remote_region> r(
      new remote_region(std::move(first.first), first.second, d.base, d.length, timeout_ms));
  // SPINDLE_UCX_EMULATED_GETS=1 keeps UCX's own emulated gets, for comparison
  // (bench/gather_bench); they are unsafe with frozen peers (see am_reads.hpp).
  const char* env = std::getenv("SPINDLE_UCX_EMULATED_GETS");
  const bool emulated = env && *env && std::string_view(env) != "0";
  r->by_messages_ = r->mapped_ == nullptr && !w.s_->one_sided_network && !emulated;
  return r;
}

status remote_region::read_by_messages(std::span<const read_op> ops) {
  for (const auto& op : ops)
    if (op.offset + op.bytes > length_)
      return make_error(errc::invalid_argument, "remote read [{}, +{}) beyond region of {} bytes",
                        op.offset, op.bytes, length_);
  worker& w = ep_.owner();
  bool timed_out = false;
  status st = w.s_->reads->read(static_cast<ucp_ep_h>(ep_.native()), base_, ops, timeout_ms_,
                                timed_out);
  if (timed_out || (!st.is_ok() && st.code() == errc::unavailable)) {
    // The request may still sit queued on the endpoint: never close or destroy it.
    ep_.forget();
    w.keep_until_exit();
  }
  return st;
}

status remote_region::read(std::span<const read_op> ops) {
  if (ep_.failed()) return make_error(errc::unavailable, "remote region: owner is unreachable");
  if (by_messages_) return read_by_messages(ops);
  auto* ep = static_cast<ucp_ep_h>(ep_.native());
  auto* w = static_cast<ucp_worker_h>(ep_.owner().native());
  ucp_request_param_t p{};
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const read_op& op = ops[i];
    if (op.offset + op.bytes > length_)
      return make_error(errc::invalid_argument, "remote read [{}, +{}) beyond region of {} bytes",
                        op.offset, op.bytes, length_);
    ucs_status_ptr_t req =
        ucp_get_nbx(ep, op.dst, op.bytes, base_ + op.offset, static_cast<ucp_rkey_h>(rkey_), &p);
    if (UCS_PTR_IS_ERR(req)) return ucx_error(UCS_PTR_STATUS(req), "ucp_get_nbx");
    // Completion is observed once, by the flush below (one wait per batch).
    if (req != nullptr) ucp_request_free(req);
    if ((i & 255) == 255) ucp_worker_progress(w);
  }
  return ep_.flush(timeout_ms_);
}

}  // namespace spindle::transport::ucx
