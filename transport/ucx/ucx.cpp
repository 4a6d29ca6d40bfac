#include "transport/ucx/ucx.hpp"

#include "transport/ucx/am_reads.hpp"
#include "transport/ucx/ucx_internal.hpp"

#include <sys/mman.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

namespace spindle::transport::ucx {

using detail::ctx_of;
using detail::ucx_error;

// ---- context -------------------------------------------------------------

expected<context> context::create(std::string_view transports) {
  // UCX 1.13's tcp PUT path segfaults in uct_tcp_iface_progress under load (6 in
  // 30 runs of tests/transport beside two busy cores; 0 in 60 without it). With
  // it off, UCP emulates RMA over active messages. A user's own setting wins.
  setenv("UCX_TCP_PUT_ENABLE", "n", /*overwrite=*/0);
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK)
    return ucx_error(s, "ucp_config_read");
  if (!transports.empty()) {
    std::string tls(transports);
    if (ucs_status_t s = ucp_config_modify(config, "TLS", tls.c_str()); s != UCS_OK) {
      ucp_config_release(config);
      return ucx_error(s, fmt::format("UCX_TLS={}", tls));
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  // Workers of one context run on different threads (a progress loop owns one,
  // readers own others), so the context's shared state must be thread-safe.
  params.mt_workers_shared = 1;
  ucp_context_h handle = nullptr;
  ucs_status_t s = ucp_init(&params, config, &handle);
  ucp_config_release(config);
  if (s != UCS_OK) return ucx_error(s, "ucp_init");
  context c;
  c.handle_ = handle;
  c.kept_ = std::make_shared<std::atomic<int>>(0);
  const std::string chosen = c.transports();
  c.one_sided_network_ = chosen.find("rc_") != std::string::npos ||
                         chosen.find("dc_") != std::string::npos ||
                         chosen.find("ud_") != std::string::npos;
  return c;
}

context::context(context&& o) noexcept
    : handle_(std::exchange(o.handle_, nullptr)),
      kept_(std::move(o.kept_)),
      one_sided_network_(o.one_sided_network_) {}
context& context::operator=(context&& o) noexcept {
  std::swap(handle_, o.handle_);
  std::swap(kept_, o.kept_);
  std::swap(one_sided_network_, o.one_sided_network_);
  return *this;
}
context::~context() {
  if (handle_ && !(kept_ && kept_->load() > 0)) ucp_cleanup(ctx_of(handle_));
}

std::string context::transports() const {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return "?";
  ucp_context_print_info(ctx_of(handle_), f);
  std::fclose(f);
  std::string text(buf, len);
  std::free(buf);
  return text;
}

// ---- worker --------------------------------------------------------------


worker::worker(std::unique_ptr<state> s) : s_(std::move(s)) {}
worker::worker(worker&&) noexcept = default;
worker& worker::operator=(worker&&) noexcept = default;
worker::~worker() = default;
void* worker::native() const { return s_->handle; }

void worker::keep_until_exit() {
  if (s_->kept) return;
  s_->kept = true;
  if (s_->ctx_kept) s_->ctx_kept->fetch_add(1);
}
bool worker::kept_until_exit() const { return s_->kept; }

expected<worker> worker::create(const context& ctx) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // One owner thread per worker (see the header); signal() is thread-safe anyway.
  params.thread_mode = UCS_THREAD_MODE_SINGLE;
  auto s = std::make_unique<state>();
  s->ctx_kept = ctx.kept_workers();
  s->one_sided_network = ctx.one_sided_network();
  if (ucs_status_t st = ucp_worker_create(ctx_of(ctx.native()), &params, &s->handle); st != UCS_OK)
    return ucx_error(st, "ucp_worker_create");
  SPINDLE_ASSIGN_OR_RETURN(s->reads, detail::read_table::install(s->handle));
  return worker(std::move(s));
}

expected<std::vector<std::uint8_t>> worker::address() const {
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  if (ucs_status_t st = ucp_worker_get_address(s_->handle, &addr, &len); st != UCS_OK)
    return ucx_error(st, "ucp_worker_get_address");
  auto* p = reinterpret_cast<const std::uint8_t*>(addr);
  std::vector<std::uint8_t> out(p, p + len);
  ucp_worker_release_address(s_->handle, addr);
  return out;
}

bool worker::progress() { return ucp_worker_progress(s_->handle) != 0; }

void worker::wait() {
  ucs_status_t st = ucp_worker_arm(s_->handle);
  if (st == UCS_OK) ucp_worker_wait(s_->handle);  // UCS_ERR_BUSY: events are pending
}

void worker::signal() { ucp_worker_signal(s_->handle); }

status worker::wait_request(void* request, int timeout_ms, std::string_view what) {
  auto ptr = static_cast<ucs_status_ptr_t>(request);
  if (ptr == nullptr) return status::ok();
  if (UCS_PTR_IS_ERR(ptr)) return ucx_error(UCS_PTR_STATUS(ptr), what);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  ucs_status_t st;
  for (unsigned spins = 0; (st = ucp_request_check_status(ptr)) == UCS_INPROGRESS; ++spins) {
    ucp_worker_progress(s_->handle);
    if ((spins & 1023) == 1023 && std::chrono::steady_clock::now() > deadline) {
      // UCX 1.13 cannot cancel RMA/flush requests; release it and let the
      // caller treat the peer as unreachable. The request stays queued on its
      // endpoint, so this worker can no longer be destroyed safely.
      ucp_request_free(ptr);
      keep_until_exit();
      return make_error(errc::unavailable, "{}: no completion within {} ms", what, timeout_ms);
    }
  }
  ucp_request_free(ptr);
  return st == UCS_OK ? status::ok() : ucx_error(st, what);
}

namespace {
ucs_status_t am_trampoline(void* arg, const void* /*header*/, size_t /*header_length*/, void* data,
                           size_t length, const ucp_am_recv_param_t* param) {
  auto* handler = static_cast<worker::am_handler*>(arg);
  // Payloads beyond the eager limit arrive as rendezvous descriptors; Spindle's
  // control messages are small, so those are dropped with a log-free status.
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) return UCS_ERR_UNSUPPORTED;
  (*handler)(std::span<const std::byte>(static_cast<const std::byte*>(data), length));
  return UCS_OK;
}
}  // namespace

namespace {
ucs_status_t bulk_trampoline(void* arg, const void* header, size_t header_length, void* data,
                             size_t length, const ucp_am_recv_param_t* param) {
  auto* handler = static_cast<worker::bulk_handler*>(arg);
  worker::bulk_message m;
  m.header = {static_cast<const std::byte*>(header), header_length};
  m.length = length;
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
    m.rndv = true;
    m.rndv_desc = data;
    (*handler)(m);  // calls receive_rndv now, or drops the message
    return UCS_OK;
  }
  m.data = {static_cast<const std::byte*>(data), length};
  (*handler)(m);
  return UCS_OK;
}

void rndv_done(void* request, ucs_status_t st, size_t, void* user) {
  auto* done = static_cast<std::function<void(status)>*>(user);
  (*done)(st == UCS_OK
              ? status::ok()
              : make_error(errc::unavailable, "ucp_am_recv_data_nbx: {}", ucs_status_string(st)));
  delete done;
  if (request != nullptr) ucp_request_free(request);
}
}  // namespace

status worker::set_bulk_handler(unsigned id, bulk_handler handler) {
  auto& slot = s_->bulk_handlers[id];
  slot = std::move(handler);
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                 UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  p.id = id;
  p.cb = bulk_trampoline;
  p.arg = &slot;
  p.flags = UCP_AM_FLAG_WHOLE_MSG;
  if (ucs_status_t st = ucp_worker_set_am_recv_handler(s_->handle, &p); st != UCS_OK)
    return ucx_error(st, "ucp_worker_set_am_recv_handler");
  return status::ok();
}

status worker::receive_rndv(void* rndv_desc, std::byte* dest, std::size_t length,
                            std::function<void(status)> done) {
  auto* cb = new std::function<void(status)>(std::move(done));  // freed by rndv_done (or below)
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.recv_am = rndv_done;
  p.user_data = cb;
  void* req = ucp_am_recv_data_nbx(s_->handle, rndv_desc, dest, length, &p);
  if (req == nullptr) {  // completed in place: the callback is not called
    (*cb)(status::ok());
    delete cb;
    return status::ok();
  }
  if (UCS_PTR_IS_ERR(req)) {
    delete cb;
    return ucx_error(UCS_PTR_STATUS(req), "ucp_am_recv_data_nbx");
  }
  return status::ok();
}

status worker::set_am_handler(unsigned id, am_handler handler) {
  auto& slot = s_->handlers[id];
  slot = std::move(handler);
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                 UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.id = id;
  p.cb = am_trampoline;
  p.arg = &slot;
  if (ucs_status_t st = ucp_worker_set_am_recv_handler(s_->handle, &p); st != UCS_OK)
    return ucx_error(st, "ucp_worker_set_am_recv_handler");
  return status::ok();
}

// ---- endpoint ------------------------------------------------------------

struct endpoint::state {
  worker* owner = nullptr;
  ucp_ep_h handle = nullptr;
  bool failed = false;
  ~state() {
    // Closing an endpoint whose peer never answered trips an assertion inside
    // UCX 1.13 (pending wireup); such endpoints are released with their worker.
    if (!handle || failed) return;
    // Graceful close: flushes and tells the peer, which then drops its side of
    // the connection in order (a forced close left the peer's tcp endpoint to a
    // racy teardown under load).
    ucp_request_param_t p{};
    void* req = ucp_ep_close_nbx(handle, &p);
    (void)owner->wait_request(req, 2000, "ucp_ep_close_nbx");
  }
};

namespace {
void on_ep_error(void* arg, ucp_ep_h, ucs_status_t) { *static_cast<bool*>(arg) = true; }
}  // namespace

endpoint::endpoint(std::unique_ptr<state> s) : s_(std::move(s)) {}
endpoint::endpoint(endpoint&&) noexcept = default;
endpoint& endpoint::operator=(endpoint&&) noexcept = default;
endpoint::~endpoint() = default;
void* endpoint::native() const { return s_->handle; }
worker& endpoint::owner() const { return *s_->owner; }
bool endpoint::failed() const { return s_->failed; }
void endpoint::forget() { s_->failed = true; }

expected<endpoint> endpoint::connect(worker& w, std::span<const std::uint8_t> peer_address,
                                     bool detect_peer_failure) {
  auto s = std::make_unique<state>();
  s->owner = &w;
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = reinterpret_cast<const ucp_address_t*>(peer_address.data());
  p.err_mode = detect_peer_failure ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  p.err_handler.cb = on_ep_error;
  p.err_handler.arg = &s->failed;
  if (ucs_status_t st = ucp_ep_create(static_cast<ucp_worker_h>(w.native()), &p, &s->handle);
      st != UCS_OK)
    return ucx_error(st, "ucp_ep_create");
  return endpoint(std::move(s));
}

status endpoint::flush(int timeout_ms) {
  if (s_->failed) return make_error(errc::unavailable, "endpoint: peer is unreachable");
  ucp_request_param_t p{};
  void* req = ucp_ep_flush_nbx(s_->handle, &p);
  if (status st = s_->owner->wait_request(req, timeout_ms, "ucp_ep_flush_nbx"); !st) {
    s_->failed = true;
    return st;
  }
  if (s_->failed) return make_error(errc::unavailable, "endpoint: peer is unreachable");
  return status::ok();
}

status endpoint::send_am(unsigned id, std::span<const std::byte> payload, int timeout_ms) {
  if (s_->failed) return make_error(errc::unavailable, "endpoint: peer is unreachable");
  ucp_request_param_t p{};
  void* req = ucp_am_send_nbx(s_->handle, id, nullptr, 0, payload.data(), payload.size(), &p);
  return s_->owner->wait_request(req, timeout_ms, "ucp_am_send_nbx");
}

status endpoint::send_bulk(unsigned id, std::span<const std::byte> header,
                           std::span<const std::byte> payload, int timeout_ms) {
  if (s_->failed) return make_error(errc::unavailable, "endpoint: peer is unreachable");
  ucp_request_param_t p{};
  void* req = ucp_am_send_nbx(s_->handle, id, header.data(), header.size(), payload.data(),
                              payload.size(), &p);
  return s_->owner->wait_request(req, timeout_ms, "ucp_am_send_nbx (bulk)");
}

namespace {
void post_done(void* request, ucs_status_t st, void* user) {
  auto* done = static_cast<std::function<void(status)>*>(user);
  (*done)(st == UCS_OK ? status::ok() : ucx_error(st, "ucp_am_send_nbx (posted)"));
  delete done;
  ucp_request_free(request);
}
}  // namespace

void endpoint::post_bulk(unsigned id, std::span<const std::byte> header,
                         std::span<const std::byte> payload, std::function<void(status)> done) {
  if (s_->failed) return done(make_error(errc::unavailable, "endpoint: peer is unreachable"));
  auto* cb = new std::function<void(status)>(std::move(done));  // freed by post_done (or below)
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = post_done;
  p.user_data = cb;
  void* req = ucp_am_send_nbx(s_->handle, id, header.data(), header.size(), payload.data(),
                              payload.size(), &p);
  if (req != nullptr && !UCS_PTR_IS_ERR(req)) return;  // post_done runs later
  (*cb)(req == nullptr ? status::ok() : ucx_error(UCS_PTR_STATUS(req), "ucp_am_send_nbx (posted)"));
  delete cb;
}

}  // namespace spindle::transport::ucx
