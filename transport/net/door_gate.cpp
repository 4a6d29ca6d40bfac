#include "transport/net/door_gate.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "core/allocator.hpp"
#include "core/log.hpp"

namespace spindle::transport::net {
namespace {

// Descriptors kept back from the doors' budget: data files, CAF, UCX, Redis,
// RocksDB, the listeners themselves.
constexpr std::size_t kReserve = 256;
// Each door is guaranteed 1/kReserveShares of the budget (a flood on one door
// cannot take another's), and one peer may hold as much on each door by default.
constexpr std::size_t kReserveShares = 8;
// A flood is over when this many fewer descriptors are held than at the peak.
constexpr std::size_t kFloodSlack = 256;

// What one door holds: descriptors, and connections per peer address.
struct door_share {
  std::size_t fds = 0;
  std::unordered_map<std::string, std::size_t> peers;
};

struct process_state {
  std::mutex mu;
  bool ready = false;
  std::size_t per_peer_wanted = 0;  // --max-connections-per-peer (0: default)
  process_limits lim;
  std::size_t used = 0, peak = 0;  // descriptors held by admitted connections, every door
  std::unordered_map<const door_gate*, door_share> doors;
  std::chrono::steady_clock::time_point last_trim{};
};

process_state& state() {
  static process_state s;
  return s;
}

// Read at first use: processes raise their descriptor limit at start.
void ready_locked(process_state& s) {
  if (s.ready) return;
  rlimit r{};
  std::size_t fds = 4096;
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY) fds = r.rlim_cur;
  s.lim.descriptors = fds > 2 * kReserve ? fds - kReserve : std::max<std::size_t>(1, fds / 2);
  s.lim.reserve_per_door = s.lim.descriptors / kReserveShares;
  s.lim.per_peer = s.per_peer_wanted ? s.per_peer_wanted
                                     : std::max<std::size_t>(8, s.lim.descriptors / kReserveShares);
  s.ready = true;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The descriptors other doors have a right to but do not use yet: `door`
// may not take them.
std::size_t reserved_for_others(const process_state& s, const door_gate* door) {
  std::size_t out = 0;
  for (const auto& [d, share] : s.doors)
    if (d != door && share.fds < s.lim.reserve_per_door) out += s.lim.reserve_per_door - share.fds;
  return out;
}

// This process's resident memory (/proc/self/statm).
double rss_mib() {
  long pages_total = 0, pages_resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
    std::fclose(f);
  }
  return double(pages_resident) * double(::sysconf(_SC_PAGESIZE)) / (1 << 20);
}

}  // namespace

process_limits limits() {
  auto& s = state();
  std::lock_guard lock(s.mu);
  ready_locked(s);
  return s.lim;
}

std::size_t default_max_connections() {
  rlimit r{};
  std::size_t fds = 4096;
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY) fds = r.rlim_cur;
  return std::clamp<std::size_t>(fds > 64 ? fds - 64 : 1, 1, 4096);
}

void set_max_per_peer(std::size_t n) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  s.per_peer_wanted = n;
  if (s.ready && n) s.lim.per_peer = n;
}

door_gate::door_gate(std::string name, std::size_t max_connections, std::size_t fds_per_connection)
    : name_(std::move(name)),
      max_(std::max<std::size_t>(1, max_connections)),
      fds_(std::max<std::size_t>(1, fds_per_connection)) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  s.doors[this];
}

door_gate::~door_gate() {
  auto& s = state();
  std::lock_guard lock(s.mu);
  auto it = s.doors.find(this);
  if (it == s.doors.end()) return;
  s.used -= std::min(s.used, it->second.fds);
  s.doors.erase(it);
}

admission door_gate::admit(const std::string& peer) {
  if (open_ >= max_) return admission::door_full;
  auto& s = state();
  std::lock_guard lock(s.mu);
  ready_locked(s);
  if (s.used + fds_ + reserved_for_others(s, this) > s.lim.descriptors)
    return admission::process_full;
  auto& mine = s.doors[this];
  auto& n = mine.peers[peer];
  if (n >= s.lim.per_peer) return admission::peer_full;
  ++n;
  mine.fds += fds_;
  s.used += fds_;
  s.peak = std::max(s.peak, s.used);
  ++open_;
  return admission::admitted;
}

void door_gate::release(const std::string& peer) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  auto& mine = s.doors[this];
  auto h = mine.peers.find(peer);
  if (h == mine.peers.end()) return;  // not admitted here (or given back already)
  if (--h->second == 0) mine.peers.erase(h);
  mine.fds -= std::min(mine.fds, fds_);
  s.used -= std::min(s.used, fds_);
  if (open_ > 0) --open_;
}

void door_gate::refused(admission why, const std::string& peer) {
  ++refused_total_;
  if (why == admission::door_full) ++refused_door_;
  if (why == admission::peer_full) ++refused_peer_;
  if (why == admission::process_full) ++refused_process_;
  last_peer_ = peer;
  report_if_due();
}

void door_gate::evicted(double idle_s) {
  (void)idle_s;
  ++evicted_;
  report_if_due();
}

void door_gate::report_if_due() {
  const double now = now_s();
  if (now - last_report_s_ < 10.0) return;
  if (refused_door_ + refused_peer_ + refused_process_ + evicted_ == 0) return;
  const auto lim = limits();
  const double window = last_report_s_ == 0 ? 0.0 : now - last_report_s_;
  log::warn(
      "{}: {} connection(s) refused{} ({} with the door at --max-connections {}, {} from "
      "a peer at --max-connections-per-peer {} (last {}), {} with the doors' {} "
      "descriptors in use); {} idle connection(s) closed to make room",
      name_, refused_door_ + refused_peer_ + refused_process_,
      window > 0 ? fmt::format(" in the last {:.0f} s", window) : std::string(), refused_door_,
      max_, refused_peer_, lim.per_peer, last_peer_.empty() ? "-" : last_peer_, refused_process_,
      lim.descriptors, evicted_);
  refused_door_ = refused_peer_ = refused_process_ = evicted_ = 0;
  last_report_s_ = now;
}

spare_descriptor::spare_descriptor() : fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

spare_descriptor::~spare_descriptor() {
  if (fd_ >= 0) ::close(fd_);
}

bool spare_descriptor::shed_one(int listen_fd) {
  if (fd_ >= 0) ::close(fd_);
  const int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (c >= 0) ::close(c);
  fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return c >= 0;
}

void return_memory_after_flood() {
  // Called from every door's loop: look at most once a second, without the lock.
  static std::atomic<std::int64_t> next_look_ms{0};
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (now_ms < next_look_ms.load(std::memory_order_relaxed)) return;
  next_look_ms.store(now_ms + 1000, std::memory_order_relaxed);
  auto& s = state();
  std::size_t peak = 0, used = 0;
  {
    std::lock_guard lock(s.mu);
    const auto now = std::chrono::steady_clock::now();
    if (s.peak < s.used + kFloodSlack || now - s.last_trim < std::chrono::seconds(5)) return;
    peak = s.peak, used = s.used;
    s.peak = s.used;
    s.last_trim = now;
  }
  const double before = rss_mib();
  const auto t0 = std::chrono::steady_clock::now();
  if (!return_free_heap_memory()) {
    static std::once_flag once;  // the same malloc every time: said once
    std::call_once(once, [&] {
      log::warn("doors: connections fell from a peak of {} descriptors to {}; freed heap "
                "memory could not be handed back to the system (malloc: {})",
                peak, used, allocator_in_use());
    });
    return;
  }
  log::info(
      "doors: connections fell from a peak of {} descriptors to {}; heap memory returned "
      "to the system: resident {:.0f} -> {:.0f} MiB in {:.1f} ms",
      peak, used, before, rss_mib(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace spindle::transport::net
