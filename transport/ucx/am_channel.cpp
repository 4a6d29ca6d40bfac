#include "transport/ucx/am_channel.hpp"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <span>
#include <thread>
#include <variant>

#include "core/log.hpp"
#include "transport/ucx/ucx.hpp"

namespace spindle::transport::ucx {
namespace {

constexpr unsigned kFrameId = 7;       // the active-message id of bridge frames
constexpr int kSendTimeoutMs = 5'000;  // local completion of one frame

struct connect_cmd {
  int peer;
  std::string address;
};
struct disconnect_cmd {
  int peer;
};
struct send_cmd {
  int peer;
  std::vector<char> header, payload;
};
using command = std::variant<connect_cmd, disconnect_cmd, send_cmd>;

}  // namespace

struct am_channel::state {
  context ctx;
  worker w;
  std::string address;
  frame_handler on_frame;
  failure_handler on_failure;
  std::map<int, endpoint> peers;               // channel thread only
  std::size_t in_flight = 0;                   // posted sends not completed yet (channel thread)
  std::vector<std::pair<int, status>> failed;  // sends that failed, handled after progress
  std::mutex mu;
  std::deque<command> queue;  // guarded by mu
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> sent{0}, received{0};
  std::thread thread;

  state(context c, worker wk) : ctx(std::move(c)), w(std::move(wk)) {}

  void run();
  void report_failures();
  void execute(command& c);
  void receive(const worker::bulk_message& m);
};

void am_channel::state::receive(const worker::bulk_message& m) {
  const auto* h = reinterpret_cast<const char*>(m.header.data());
  std::vector<char> header(h, h + m.header.size());
  if (!m.rndv) {
    ++received;
    const auto* d = reinterpret_cast<const char*>(m.data.data());
    on_frame(std::move(header), std::vector<char>(d, d + m.data.size()));
    return;
  }
  // Rendezvous: pull the payload into a buffer of our own, deliver when it lands.
  auto buf = std::make_shared<std::vector<char>>(m.length);
  auto hdr = std::make_shared<std::vector<char>>(std::move(header));
  auto st =
      w.receive_rndv(m.rndv_desc, reinterpret_cast<std::byte*>(buf->data()), buf->size(),
                     [this, buf, hdr](status s) {
                       if (!s.is_ok()) {
                         log::warn("ucx bridge: a frame's payload was lost: {}", s.to_string());
                         return;
                       }
                       ++received;
                       on_frame(std::move(*hdr), std::move(*buf));
                     });
  if (!st.is_ok()) log::warn("ucx bridge: cannot receive a frame: {}", st.to_string());
}

void am_channel::state::execute(command& c) {
  if (auto* cc = std::get_if<connect_cmd>(&c)) {
    if (auto old = peers.find(cc->peer); old != peers.end()) {
      old->second.forget();  // its process restarted: the old one is dead
      peers.erase(old);
    }
    auto addr = parse_hex(cc->address, "bridge address");
    auto ep = addr ? endpoint::connect(w, *addr, /*detect_peer_failure=*/true)
                   : expected<endpoint>(addr.error());
    if (!ep) return on_failure(cc->peer, ep.error());
    peers.emplace(cc->peer, std::move(*ep));
  } else if (auto* dc = std::get_if<disconnect_cmd>(&c)) {
    if (auto it = peers.find(dc->peer); it != peers.end()) {
      it->second.forget();  // the peer is dead: no close handshake
      peers.erase(it);
    }
  } else if (auto* sc = std::get_if<send_cmd>(&c)) {
    auto it = peers.find(sc->peer);
    if (it == peers.end())
      return on_failure(sc->peer,
                        make_error(errc::unavailable, "no connection to rank {}", sc->peer));
    // Posted, not waited for: the thread goes on with other frames while UCX
    // completes this one (a large payload waits for the peer to pull it).
    auto frame = std::make_shared<send_cmd>(std::move(*sc));
    ++in_flight;
    it->second.post_bulk(kFrameId, std::as_bytes(std::span(frame->header)),
                         std::as_bytes(std::span(frame->payload)), [this, frame](status st) {
                           --in_flight;
                           if (st.is_ok())
                             ++sent;
                           else
                             failed.emplace_back(frame->peer, std::move(st));
                         });
  }
}

// A failed send drops the peer's endpoint (outside UCX callbacks) and tells the owner.
void am_channel::state::report_failures() {
  for (auto& [peer, why] : std::exchange(failed, {})) {
    if (auto it = peers.find(peer); it != peers.end()) {
      it->second.forget();
      peers.erase(it);
    }
    on_failure(peer, why);
  }
}

void am_channel::state::run() {
  pthread_setname_np(pthread_self(), "ucx-bridge");
  while (!stop.load(std::memory_order_acquire)) {
    std::deque<command> batch;
    {
      std::lock_guard lock(mu);
      batch.swap(queue);
    }
    for (auto& c : batch) execute(c);
    while (w.progress()) {
    }
    report_failures();
    bool idle = false;
    {
      std::lock_guard lock(mu);
      idle = queue.empty();
    }
    // Sleep until a frame arrives or post()/connect() signals; arm reports busy
    // (and wait returns at once) when events or a signal are already pending.
    // (Polling for 200 us before sleeping was tried: on 2 cores it halved
    // bridge_bench's throughput, the spinning thread starving the actors.)
    if (idle) w.wait();
  }
}

expected<std::unique_ptr<am_channel>> am_channel::start(frame_handler on_frame,
                                                        failure_handler on_failure,
                                                        std::string_view transports) {
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, context::create(transports));
  SPINDLE_ASSIGN_OR_RETURN(auto w, worker::create(ctx));
  auto s = std::make_unique<state>(std::move(ctx), std::move(w));
  s->on_frame = std::move(on_frame);
  s->on_failure = std::move(on_failure);
  SPINDLE_ASSIGN_OR_RETURN(auto addr, s->w.address());
  append_hex(s->address, addr);
  auto* raw = s.get();
  SPINDLE_TRY(
      s->w.set_bulk_handler(kFrameId, [raw](const worker::bulk_message& m) { raw->receive(m); }));
  s->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<am_channel>(new am_channel(std::move(s)));
}

am_channel::am_channel(std::unique_ptr<state> s) : s_(std::move(s)) {}

am_channel::~am_channel() {
  s_->stop.store(true, std::memory_order_release);
  s_->w.signal();
  s_->thread.join();
  // Let posted sends finish (or fail) before their endpoints and buffers go.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kSendTimeoutMs);
  while (s_->in_flight > 0 && std::chrono::steady_clock::now() < deadline) s_->w.progress();
  s_->failed.clear();
  for (auto& [peer, ep] : s_->peers) ep.forget();  // released with the worker
  s_->peers.clear();
}

const std::string& am_channel::address() const { return s_->address; }

void am_channel::connect(int peer, std::string address_hex) {
  {
    std::lock_guard lock(s_->mu);
    s_->queue.push_back(connect_cmd{peer, std::move(address_hex)});
  }
  s_->w.signal();
}

void am_channel::disconnect(int peer) {
  {
    std::lock_guard lock(s_->mu);
    s_->queue.push_back(disconnect_cmd{peer});
  }
  s_->w.signal();
}

void am_channel::post(int peer, std::vector<char> header, std::vector<char> payload) {
  {
    std::lock_guard lock(s_->mu);
    s_->queue.push_back(send_cmd{peer, std::move(header), std::move(payload)});
  }
  s_->w.signal();
}

std::uint64_t am_channel::sent() const { return s_->sent.load(); }
std::uint64_t am_channel::received() const { return s_->received.load(); }

}  // namespace spindle::transport::ucx
