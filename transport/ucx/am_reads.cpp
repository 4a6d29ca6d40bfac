#include "transport/ucx/am_reads.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace spindle::transport::ucx::detail {
namespace {

constexpr unsigned kRequestId = 11;  // active-message ids (the bridge uses 7)
constexpr unsigned kReplyId = 12;
constexpr std::uint32_t kMagic = 0x31445253;             // "SRD1"
constexpr std::size_t kChunkOps = 4096;                  // ops per request
constexpr std::uint64_t kChunkBytes = 4ull << 20;        // reply bytes per request
constexpr std::uint64_t kMaxReplyBytes = 64ull << 20;    // what an owner packs at most

struct request_header {
  std::uint32_t magic = kMagic;
  std::uint32_t ops = 0;
  std::uint64_t id = 0;
};
struct wire_op {
  std::uint64_t address = 0, bytes = 0;
};
struct reply_header {
  std::uint64_t id = 0;
  std::int32_t code = 0;  // an errc; 0: the payload is the rows, else a message
  std::uint32_t reserved = 0;
};

// ---- the exposed-memory registry ----------------------------------------

// Shared while an owner checks and copies rows (so a region cannot be unmapped
// under the copy), exclusive while a region is exposed or withdrawn.
std::shared_mutex& registry_mu() {
  static std::shared_mutex mu;
  return mu;
}

bool exposed_locked(std::uint64_t address, std::uint64_t bytes);
std::map<std::uintptr_t, std::size_t>& registry() {
  static std::map<std::uintptr_t, std::size_t> r;
  return r;
}

// A send's buffers, alive until UCX reports it complete.
struct outgoing {
  reply_header reply;
  request_header request;
  std::vector<wire_op> ops;
  std::vector<std::byte> payload;
  std::atomic<std::size_t>* in_flight = nullptr;  // the owner's reply count
};

void sent(void* request, ucs_status_t, void* user) {
  auto* out = static_cast<outgoing*>(user);
  if (out->in_flight) out->in_flight->fetch_sub(1);
  delete out;
  ucp_request_free(request);
}

// Posts `out` on `ep`, eager only: over tcp UCX's rendezvous would pull the
// payload with the very emulated get this protocol replaces. Returns the status.
ucs_status_t post(ucp_ep_h ep, unsigned id, std::unique_ptr<outgoing> out, const void* header,
                  std::size_t header_bytes, const void* data, std::size_t bytes,
                  std::uint32_t flags) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = flags | UCP_AM_SEND_FLAG_EAGER;
  p.cb.send = sent;
  p.user_data = out.get();
  if (out->in_flight) out->in_flight->fetch_add(1);
  ucs_status_ptr_t req = ucp_am_send_nbx(ep, id, header, header_bytes, data, bytes, &p);
  if (req != nullptr && !UCS_PTR_IS_ERR(req)) {
    out.release();  // freed by sent()
    return UCS_INPROGRESS;
  }
  if (out->in_flight) out->in_flight->fetch_sub(1);
  return req == nullptr ? UCS_OK : UCS_PTR_STATUS(req);
}

}  // namespace

void expose_memory(const std::byte* base, std::size_t length) {
  std::unique_lock lock(registry_mu());
  registry()[reinterpret_cast<std::uintptr_t>(base)] = length;
}

void withdraw_memory(const std::byte* base) {
  std::unique_lock lock(registry_mu());
  registry().erase(reinterpret_cast<std::uintptr_t>(base));
}

bool memory_exposed(std::uint64_t address, std::uint64_t bytes) {
  std::shared_lock lock(registry_mu());
  return exposed_locked(address, bytes);
}

namespace {
bool exposed_locked(std::uint64_t address, std::uint64_t bytes) {
  const auto& r = registry();
  auto it = r.upper_bound(std::uintptr_t(address));
  if (it == r.begin()) return false;
  --it;
  const std::uint64_t offset = address - it->first;
  return offset <= it->second && bytes <= it->second - offset;
}
}  // namespace

// ---- one worker's table ---------------------------------------------------

struct read_table::state {
  struct pending {
    std::vector<read_op> ops;
    std::uint64_t bytes = 0;
    bool done = false;
    status result;
  };
  ucp_worker_h worker = nullptr;
  std::uint64_t next_id = 1;
  std::map<std::uint64_t, pending> pending_reads;  // owner thread only
  std::atomic<std::size_t> replies{0};

  ucs_status_t serve(const void* header, std::size_t header_bytes, const void* data,
                     std::size_t length, const ucp_am_recv_param_t* param);
  ucs_status_t complete(const void* header, std::size_t header_bytes, const void* data,
                        std::size_t length, const ucp_am_recv_param_t* param);
  void answer(ucp_ep_h ep, std::uint64_t id, const status& refusal);
};

void read_table::state::answer(ucp_ep_h ep, std::uint64_t id, const status& refusal) {
  auto out = std::make_unique<outgoing>();
  out->reply.id = id;
  out->reply.code = int(refusal.code());
  const std::string& text = refusal.message();
  out->payload.assign(reinterpret_cast<const std::byte*>(text.data()),
                      reinterpret_cast<const std::byte*>(text.data()) + text.size());
  out->in_flight = &replies;
  auto* raw = out.get();
  (void)post(ep, kReplyId, std::move(out), &raw->reply, sizeof(raw->reply), raw->payload.data(),
             raw->payload.size(), 0);
}

// The owner: checks every op against the exposed memory, packs the rows in op
// order and replies. A reply that cannot be sent (the reader died or froze) is
// dropped when UCX fails it; nothing here waits for the reader.
ucs_status_t read_table::state::serve(const void* header, std::size_t header_bytes,
                                      const void* data, std::size_t length,
                                      const ucp_am_recv_param_t* param) {
  request_header h;
  if (header_bytes != sizeof(h)) return UCS_OK;  // not ours to answer: no id
  std::memcpy(&h, header, sizeof(h));
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) || param->reply_ep == nullptr)
    return UCS_OK;
  ucp_ep_h ep = param->reply_ep;
  if (h.magic != kMagic || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
      length != std::size_t(h.ops) * sizeof(wire_op)) {
    answer(ep, h.id, make_error(errc::invalid_argument, "malformed read request ({} bytes, {} ops)",
                                length, h.ops));
    return UCS_OK;
  }
  std::vector<wire_op> ops(h.ops);
  std::memcpy(ops.data(), data, length);
  std::uint64_t total = 0;
  std::shared_lock exposed(registry_mu());  // held until the rows are copied
  for (const auto& op : ops) {
    if (!exposed_locked(op.address, op.bytes)) {
      answer(ep, h.id, make_error(errc::invalid_argument,
                                  "[{:#x}, +{}) is not memory this node exposed", op.address,
                                  op.bytes));
      return UCS_OK;
    }
    total += op.bytes;
  }
  if (total > kMaxReplyBytes) {
    answer(ep, h.id, make_error(errc::resource_exhausted,
                                "a read of {} bytes exceeds the {} a request may ask", total,
                                kMaxReplyBytes));
    return UCS_OK;
  }
  auto out = std::make_unique<outgoing>();
  out->reply.id = h.id;
  out->payload.resize(total);
  std::byte* at = out->payload.data();
  for (const auto& op : ops) {
    std::memcpy(at, reinterpret_cast<const void*>(op.address), op.bytes);
    at += op.bytes;
  }
  exposed.unlock();
  out->in_flight = &replies;
  auto* raw = out.get();
  (void)post(ep, kReplyId, std::move(out), &raw->reply, sizeof(raw->reply), raw->payload.data(),
             raw->payload.size(), 0);
  return UCS_OK;
}

// The reader: scatters a reply into the pending read's buffers. A reply for no
// pending read (it timed out) is dropped.
ucs_status_t read_table::state::complete(const void* header, std::size_t header_bytes,
                                         const void* data, std::size_t length,
                                         const ucp_am_recv_param_t* param) {
  reply_header h;
  if (header_bytes != sizeof(h)) return UCS_OK;
  std::memcpy(&h, header, sizeof(h));
  auto it = pending_reads.find(h.id);
  if (it == pending_reads.end()) return UCS_OK;
  auto& p = it->second;
  p.done = true;
  const auto* bytes = static_cast<const std::byte*>(data);
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
    p.result = make_error(errc::internal, "a read reply came by rendezvous");
  } else if (h.code != 0) {
    const auto code = h.code > 0 && h.code <= int(errc::internal) ? errc(h.code) : errc::internal;
    p.result = make_error(code, "the owner refused a read: {}",
                          std::string_view(reinterpret_cast<const char*>(bytes), length));
  } else if (length != p.bytes) {
    p.result = make_error(errc::corrupt_data, "a read reply holds {} bytes, {} asked", length,
                          p.bytes);
  } else {
    for (const auto& op : p.ops) {
      std::memcpy(op.dst, bytes, op.bytes);
      bytes += op.bytes;
    }
  }
  return UCS_OK;
}

namespace {
template <ucs_status_t (read_table::state::*Handler)(const void*, std::size_t, const void*,
                                                     std::size_t, const ucp_am_recv_param_t*)>
ucs_status_t trampoline(void* arg, const void* header, size_t header_bytes, void* data,
                        size_t length, const ucp_am_recv_param_t* param) {
  return (static_cast<read_table::state*>(arg)->*Handler)(header, header_bytes, data, length,
                                                          param);
}

ucs_status_t set_handler(ucp_worker_h w, unsigned id, ucp_am_recv_callback_t cb, void* arg) {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                 UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  p.id = id;
  p.cb = cb;
  p.arg = arg;
  p.flags = UCP_AM_FLAG_WHOLE_MSG;
  return ucp_worker_set_am_recv_handler(w, &p);
}
}  // namespace

read_table::read_table(std::unique_ptr<state> s) : s_(std::move(s)) {}
read_table::~read_table() = default;

expected<std::unique_ptr<read_table>> read_table::install(ucp_worker_h w) {
  auto s = std::make_unique<state>();
  s->worker = w;
  for (auto [id, cb] : {std::pair{kRequestId, &trampoline<&state::serve>},
                        std::pair{kReplyId, &trampoline<&state::complete>}})
    if (ucs_status_t st = set_handler(w, id, cb, s.get()); st != UCS_OK)
      return make_error(errc::io_error, "ucp_worker_set_am_recv_handler({}): {}", id,
                        ucs_status_string(st));
  return std::unique_ptr<read_table>(new read_table(std::move(s)));
}

std::size_t read_table::replies_in_flight() const { return s_->replies.load(); }

namespace {
// `ops` cut into requests: at most kChunkOps ops and kChunkBytes reply bytes
// each (an op larger than that is split into pieces).
std::vector<std::vector<read_op>> chunks_of(std::span<const read_op> ops) {
  std::vector<std::vector<read_op>> out(1);
  std::uint64_t bytes = 0;
  for (read_op op : ops) {
    while (true) {
      const std::uint64_t piece = std::min(op.bytes, kChunkBytes);
      if (!out.back().empty() && (out.back().size() == kChunkOps || bytes + piece > kChunkBytes)) {
        out.emplace_back();
        bytes = 0;
      }
      out.back().push_back({op.offset, op.dst, piece});
      bytes += piece;
      if (piece == op.bytes) break;
      op = {op.offset + piece, static_cast<std::byte*>(op.dst) + piece, op.bytes - piece};
    }
  }
  return out;
}
}  // namespace

status read_table::read(ucp_ep_h ep, std::uint64_t base, std::span<const read_op> ops,
                        int timeout_ms, bool& timed_out) {
  timed_out = false;
  if (ops.empty()) return status::ok();
  std::vector<std::uint64_t> ids;
  status failed;
  for (auto& chunk : chunks_of(ops)) {
    const std::uint64_t id = s_->next_id++;
    auto out = std::make_unique<outgoing>();
    out->request.id = id;
    out->request.ops = std::uint32_t(chunk.size());
    std::uint64_t bytes = 0;
    for (const auto& op : chunk) {
      out->ops.push_back({base + op.offset, op.bytes});
      bytes += op.bytes;
    }
    auto& p = s_->pending_reads[id];
    p.ops = std::move(chunk);
    p.bytes = bytes;
    ids.push_back(id);
    auto* raw = out.get();
    const ucs_status_t st =
        post(ep, kRequestId, std::move(out), &raw->request, sizeof(raw->request), raw->ops.data(),
             raw->ops.size() * sizeof(wire_op), UCP_AM_SEND_FLAG_REPLY);
    if (st != UCS_OK && st != UCS_INPROGRESS) {
      failed = make_error(errc::unavailable, "read request: {}", ucs_status_string(st));
      break;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto all_done = [&] {
    return std::all_of(ids.begin(), ids.end(),
                       [&](std::uint64_t id) { return s_->pending_reads[id].done; });
  };
  for (unsigned spins = 0; failed.is_ok() && !all_done(); ++spins) {
    ucp_worker_progress(s_->worker);
    if ((spins & 1023) == 1023 && std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      failed = make_error(errc::unavailable, "no read reply from the owner within {} ms",
                          timeout_ms);
    }
  }
  for (auto id : ids) {
    auto node = s_->pending_reads.extract(id);
    if (failed.is_ok() && !node.mapped().result.is_ok()) failed = node.mapped().result;
  }
  return failed;
}

}  // namespace spindle::transport::ucx::detail
