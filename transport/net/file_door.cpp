#include "transport/net/file_door.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

#include "core/log.hpp"
#include "core/thread_annotations.hpp"
#include "core/thread_priority.hpp"
#include "transport/net/file_requests.hpp"
#include "transport/net/file_wire.hpp"
#include "transport/net/handshake_limit.hpp"
#include "transport/net/listen_socket.hpp"
#include "transport/net/served_manifests.hpp"
#include "transport/net/token_proof.hpp"
#include "transport/net/wake_fd.hpp"

namespace spindle::transport::net {
namespace {

namespace fw = file_wire;
using door_clock = fw::clock_type;
constexpr auto kDoorIdle = std::chrono::seconds(120);  // between requests
constexpr auto kDoorStall = std::chrono::seconds(30);  // a reader that takes nothing this long
constexpr auto kDoorSlotWait = std::chrono::seconds(30);  // a proven peer waits this long for a slot
constexpr auto kDoorRequest = std::chrono::seconds(5);    // a request's bytes after its header
constexpr std::size_t kDoorChunk = 256 << 10;

struct door_connection {
  std::thread thread;
  int fd = -1;
  std::uint64_t id = 0;
  std::atomic<bool> done{false};
};

}  // namespace

struct file_door::impl {
  file_door_options o;
  int listen_fd = -1, wake_fd = -1, port = 0;
  std::atomic<bool> stopping{false};
  std::thread acceptor;
  std::list<door_connection> conns;  // the acceptor's alone
  std::uint64_t next_id = 1;         // the acceptor's
  mutable spindle::mutex mu;
  file_door_stats stats SPINDLE_GUARDED_BY(mu);
  handshake_limit unproven SPINDLE_GUARDED_BY(mu){64, 8};  // set from o at start
  door_clock::time_point last_refusal_log SPINDLE_GUARDED_BY(mu){};
  std::uint64_t refusals_unlogged SPINDLE_GUARDED_BY(mu) = 0;
  std::unique_ptr<served_manifests> manifests;
  std::mutex slot_mu;  // the max_connections slots of proven peers
  std::condition_variable slot_free;
  std::size_t slots_taken = 0;
  spindle::mutex pace_mu;
  // With max_bytes_per_s: when the next chunk may go.
  door_clock::time_point next_send SPINDLE_GUARDED_BY(pace_mu){};

  ~impl() {
    for (int fd : {listen_fd, wake_fd})
      if (fd >= 0) ::close(fd);
  }

  void count(std::uint64_t file_door_stats::*field, std::uint64_t n = 1) {
    spindle::lock_guard lock(mu);
    stats.*field += n;
  }

  // Counted always, logged at most once per 10 s (a port scan is not a log flood).
  void note_refusal(const std::string& peer, const char* why) {
    spindle::lock_guard lock(mu);
    ++stats.refused;
    ++refusals_unlogged;
    if (door_clock::now() - last_refusal_log < std::chrono::seconds(10)) return;
    log::warn("{}: closed {} connection(s) that did not prove the cluster token (last from {}: {})",
              o.name, refusals_unlogged, peer, why);
    refusals_unlogged = 0;
    last_refusal_log = door_clock::now();
  }

  // `e` with every mention of `dir` (a folder served by name) replaced by `label`:
  // the peer learns the root and the name, never the folder's path.
  static status scrubbed(const status& e, const std::string& dir, const std::string& label) {
    std::string why = e.message();
    if (!dir.empty())
      for (std::size_t at = why.find(dir); at != std::string::npos;
           at = why.find(dir, at + label.size())) {
        why.replace(at, dir.size(), label);
      }
    return make_error(e.code(), "{}", why);
  }

  expected<std::string> reply_manifest(const std::vector<std::string>& q) {
    const file_root* r = q.size() == 3 ? find_root(o.roots, q[1]) : nullptr;
    if (!r)
      return make_error(errc::not_found, "this door serves no folder '{}'",
                        q.size() > 1 ? q[1].substr(0, 64) : "");
    std::string unit = ".";
    if (r->folder_named) {  // a folder that comes and goes: the word is its unit
      if (q[2].empty() || q[2] == "." || q[2].find('/') != std::string::npos)
        return make_error(errc::invalid_argument, "'{}' does not name a folder of '{}'",
                          q[2].substr(0, 64), r->name);
      SPINDLE_ASSIGN_OR_RETURN(auto dir, r->folder_named(q[2]));
      auto m = manifests->current(r->name, dir, q[2]);
      if (!m) return scrubbed(m.error(), dir, r->name + "/" + q[2]);
      return to_text(*m);
    }
    if (r->unit_named) {
      SPINDLE_ASSIGN_OR_RETURN(unit, r->unit_named(q[2]));
      if (unit != ".") SPINDLE_TRY(check_relative_path(unit).with_context("refused: "));
    } else {
      int rank = -1;
      try {
        rank = std::stoi(q[2]);
      } catch (const std::exception&) {
        return make_error(errc::invalid_argument, "rank '{}' is not a number", q[2].substr(0, 32));
      }
      if (r->unit_for) {
        SPINDLE_ASSIGN_OR_RETURN(unit, r->unit_for(rank));
      }
    }
    const std::string dir = unit == "." ? r->dir : r->dir + "/" + unit;
    SPINDLE_ASSIGN_OR_RETURN(auto m, manifests->current(r->name, dir, unit));
    return to_text(m);
  }

  static std::string resolved(const std::string& path) {
    char* real = ::realpath(path.c_str(), nullptr);
    std::string out = real ? real : "";
    std::free(real);
    return out;
  }

  // The file of `g` opened as the door last hashed it (a file changed on disk
  // since is hashed again first), or -1 with `changed` saying why this fetch
  // cannot have it.
  expected<std::pair<int, served_file>> open_served(const get_request& g, std::string& changed) {
    auto f = manifests->find(g.root->name, g.unit, g.path);
    if (!f)
      return make_error(errc::not_found, "refused: {} {} is not a file this door serves",
                        g.root->name, g.path.substr(0, 200));
    const std::string want = g.sha256.empty() ? f->entry.sha256 : g.sha256;
    const std::string dir = g.dir();  // looked up once: a folder by name may go meanwhile
    if (dir.empty())  // a folder by name the door no longer serves (its model unloaded)
      return make_error(errc::not_found, "refused: {} {} is no longer served here", g.root->name,
                        g.unit.substr(0, 64));
    const std::string path = dir + "/" + g.path;
    const std::string inside = (g.unit == "." ? "" : "/" + g.unit) + "/" + g.path;
    for (int attempt = 0;; ++attempt) {
      const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (in >= 0 && stamp_of_fd(in) == f->stamp) {
        // A link swapped in for a folder on the way is not followed either: the
        // file must resolve to itself under the served folder.
        const std::string expected_path = g.root->folder_named
                                              ? resolved(dir) + "/" + g.path
                                              : resolved(g.root->dir) + inside;
        if (resolved(path) != expected_path) {
          ::close(in);
          return make_error(errc::not_found, "{}: changed since its manifest (no longer a "
                            "plain file in the served folder)", g.path);
        }
        if (f->entry.sha256 != want)
          changed = fmt::format("'{}' {} changed on the door's disk since this fetch's "
                                "manifest (SHA-256 now {}, the manifest's {})",
                                g.root->name, g.path, f->entry.sha256.substr(0, 16),
                                want.substr(0, 16));
        return std::make_pair(in, *f);
      }
      if (in >= 0) ::close(in);
      if (attempt == 1) {
        changed = fmt::format("'{}' {} is being changed on the door's disk", g.root->name, g.path);
        return std::make_pair(-1, *f);
      }
      // Changed or gone since it was hashed: the unit is listed again (logged).
      if (auto m = manifests->current(g.root->name, dir, g.unit); !m)
        return g.root->folder_named ? scrubbed(m.error(), dir, g.root->name + "/" + g.unit)
                                    : std::move(m).error();
      count_changes();
      f = manifests->find(g.root->name, g.unit, g.path);
      if (!f) {
        changed = fmt::format("'{}' {} is gone from the door's disk (or no longer a plain file)",
                              g.root->name, g.path);
        return std::make_pair(-1, served_file{});
      }
    }
  }

  void count_changes() {
    spindle::lock_guard lock(mu);
    stats.files_changed = manifests->changes();
  }

  // With a rate cap, waits until `n` more bytes fit the door's rate (all
  // connections together: each chunk books its slot on one timeline).
  void pace(std::uint64_t n) {
    if (o.max_bytes_per_s == 0) return;
    const auto cost = std::chrono::duration_cast<door_clock::duration>(
        std::chrono::duration<double>(double(n) / double(o.max_bytes_per_s)));
    door_clock::time_point at;
    {
      spindle::lock_guard lock(pace_mu);
      const auto now = door_clock::now();
      at = std::max(next_send, now);
      next_send = at + cost;
    }
    std::this_thread::sleep_until(at);
  }

  // Sends the open file `in` from `offset`; false when the connection is gone
  // or must be cut: a file that changes on disk while it is sent (its stamp
  // checked before each chunk) is never sent part old, part new.
  bool send_file(int fd, int in, const get_request& g, const served_file& f) {
    const std::uint64_t size = f.entry.size;
    std::uint64_t offset = g.offset;
    bool ok = fw::send_header(fd, fw::kData, size - offset, door_clock::now() + kDoorStall);
    std::vector<char> buf(kDoorChunk);
    std::uint64_t sent = 0;
    while (ok && offset < size) {
      if (stamp_of_fd(in) != f.stamp) {
        log::warn("{}: {}/{} changed on disk while it was sent: the connection is cut (the "
                  "fetch is refused when it asks again)",
                  o.name, g.dir(), g.path);
        ok = false;
        break;
      }
      const ssize_t n =
          ::pread(in, buf.data(), std::min<std::uint64_t>(kDoorChunk, size - offset), off_t(offset));
      if (n <= 0) {
        ok = false;  // the length is promised: a short file ends the connection
        break;
      }
      pace(std::uint64_t(n));
      ok = fw::send_all(fd, buf.data(), std::size_t(n), door_clock::now() + kDoorStall);
      offset += std::uint64_t(n);
      sent += std::uint64_t(n);
    }
    count(&file_door_stats::bytes_sent, sent);
    if (ok) count(&file_door_stats::files_sent);
    return ok;
  }

  bool answer_get(int fd, const std::vector<std::string>& q,
                  const std::function<bool(const status&)>& refuse) {
    auto g = parse_get(q, o.roots);
    if (!g) return refuse(g.error());
    std::string changed;
    auto f = open_served(*g, changed);
    if (!f) return refuse(f.error());
    const int in = f->first;
    if (!changed.empty()) {
      if (in >= 0) ::close(in);
      count(&file_door_stats::requests_refused);
      log::warn("{}: {}: refused: fetch again for the current copy", o.name, changed);
      return fw::send_frame(fd, fw::kChanged, changed + ": fetch again for the current copy",
                            door_clock::now() + kDoorStall);
    }
    const served_file& s = f->second;
    if (g->offset > s.entry.size) {
      ::close(in);
      return refuse(make_error(errc::invalid_argument, "{}: offset {} past its {} bytes", g->path,
                               g->offset, s.entry.size));
    }
    const bool ok = send_file(fd, in, *g, s);
    ::close(in);
    return ok;
  }

  // One request; false ends the connection.
  bool answer(int fd, const std::string& peer, const std::string& gate_nonce,
              const std::string& client_nonce) {
    char kind = 0;
    std::uint64_t len = 0;
    if (!fw::recv_header(fd, kind, len, door_clock::now() + kDoorIdle)) return false;
    if (kind != fw::kRequest || len > fw::kMaxRequest) return false;
    std::string text(len, '\0');
    if (!fw::recv_exact(fd, text.data(), len, door_clock::now() + kDoorRequest)) return false;
    const auto q = request_lines(text);
    const auto deadline = door_clock::now() + kDoorStall;
    std::function<bool(const status&)> refuse = [&](const status& st) {
      count(&file_door_stats::requests_refused);
      log::warn("{}: {}: {}", o.name, peer, st.message());  // the door's paths, whole
      return fw::send_frame(fd, fw::kError, without_paths(st.message(), o.roots), deadline);
    };
    if (!q.empty() && q[0] == "manifest") {
      auto m = reply_manifest(q);
      count_changes();
      if (!m) return refuse(m.error());
      return fw::send_frame(fd, fw::kManifest, *m, deadline) &&
             fw::send_all(fd, fw::manifest_mac(o.token, gate_nonce, client_nonce, *m).data(),
                          proof::kMac, deadline);
    }
    if (!q.empty() && q[0] == "get") return answer_get(fd, q, refuse);
    return refuse(make_error(errc::invalid_argument, "an unknown request"));
  }

  // One of the max_connections slots, waited for (kDoorSlotWait) while every
  // one serves another peer; false: none came (the fetcher asks again).
  bool take_slot() {
    std::unique_lock lock(slot_mu);
    const bool got = slot_free.wait_for(lock, kDoorSlotWait, [this] {
      return stopping.load() || slots_taken < o.max_connections;
    });
    if (!got || stopping.load()) return false;
    ++slots_taken;
    return true;
  }

  void give_slot() {
    {
      std::lock_guard lock(slot_mu);
      --slots_taken;
    }
    slot_free.notify_one();
  }

  // The token proof within proof_deadline_ms; false (counted, the connection
  // closed) when it fails, comes late, or the connection was closed to make room.
  bool proven(int fd, const std::string& peer, std::uint64_t id, std::string& gate_nonce,
              std::string& client_nonce) {
    using proof::kHello, proof::kMac, proof::kNonce, proof::kProof, proof::mac_of, proof::same;
    const auto deadline = door_clock::now() + std::chrono::milliseconds(o.proof_deadline_ms);
    gate_nonce = proof::nonce();
    std::string reply(kProof, '\0');
    const char* why = nullptr;
    if (!fw::send_all(fd, (std::string(fw::kMagic, sizeof fw::kMagic) + gate_nonce).data(), kHello,
                      deadline) ||
        !fw::recv_exact(fd, reply.data(), kProof, deadline))
      why = "no proof in time";
    else if (!same(reply.substr(kNonce),
                   mac_of(o.token, "client", gate_nonce, reply.substr(0, kNonce))))
      why = "a wrong proof";
    {
      spindle::lock_guard lock(mu);
      if (!unproven.forget(id) && !why) why = "closed to make room";
    }
    if (why) {
      note_refusal(peer, why);
      return false;
    }
    client_nonce = reply.substr(0, kNonce);
    return fw::send_all(fd, mac_of(o.token, "server", gate_nonce, client_nonce).data(), kMac,
                        deadline);
  }

  void serve(int fd, const std::string& peer, std::uint64_t id) {
    std::string gate_nonce, client_nonce;
    if (!proven(fd, peer, id, gate_nonce, client_nonce)) return;
    count(&file_door_stats::sessions);
    if (!take_slot()) return;
    while (!stopping.load() && answer(fd, peer, gate_nonce, client_nonce)) {
    }
    give_slot();
  }

  void reap() {
    for (auto it = conns.begin(); it != conns.end();) {
      if (!it->done.load()) {
        ++it;
        continue;
      }
      it->thread.join();
      ::close(it->fd);
      it = conns.erase(it);
    }
  }

  // Room for connection `id` from `peer` among the unproven: the oldest one
  // past a cap is shut down (its thread ends and is reaped).
  void make_room(std::uint64_t id, const std::string& peer) {
    std::optional<handshake_limit::eviction> v;
    {
      spindle::lock_guard lock(mu);
      v = unproven.admit(id, peer);
      if (v) ++stats.evicted;
    }
    if (!v) return;
    for (auto& c : conns)
      if (c.id == v->id) ::shutdown(c.fd, SHUT_RDWR);
  }

  void accept_one() {
    std::string peer;
    const int fd = accept_peer(listen_fd, peer);
    if (fd < 0) return;
    reap();
    // Threads in all: proven peers' (served or waiting for a slot) and unproven ones.
    if (conns.size() >= 4 * o.max_connections + 2 * o.max_unproven) {  // the fetcher retries
      ::close(fd);
      return;
    }
    const std::uint64_t id = next_id++;
    make_room(id, peer);
    auto& c = conns.emplace_back();
    c.fd = fd;
    c.id = id;
    c.thread = std::thread([this, &c, peer] {
      lower_to_background_priority();  // the node's serving threads come first
      serve(c.fd, peer, c.id);
      ::shutdown(c.fd, SHUT_RDWR);
      {
        spindle::lock_guard lock(mu);
        unproven.forget(c.id);
      }
      c.done = true;
    });
    pthread_setname_np(c.thread.native_handle(), "file-conn");
  }

  void loop() {
    while (!stopping.load()) {
      pollfd p[2] = {{listen_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
      if (::poll(p, 2, 1000) > 0 && (p[0].revents & POLLIN)) accept_one();
      reap();
    }
    slot_free.notify_all();
    for (auto& c : conns) ::shutdown(c.fd, SHUT_RDWR);
    for (auto& c : conns) {
      c.thread.join();
      ::close(c.fd);
    }
    conns.clear();
  }
};

expected<std::unique_ptr<file_door>> file_door::start(file_door_options o) {
  if (o.token.empty()) return make_error(errc::invalid_argument, "{}: no cluster token", o.name);
  auto i = std::make_unique<impl>();
  i->o = std::move(o);
  i->manifests = std::make_unique<served_manifests>(i->o.name);
  {
    spindle::lock_guard lock(i->mu);
    i->unproven = handshake_limit(i->o.max_unproven, i->o.max_unproven_per_peer);
  }
  SPINDLE_ASSIGN_OR_RETURN(i->listen_fd, listen_socket(i->o.host, i->o.port, i->o.name, 64));
  i->port = local_port(i->listen_fd);
  i->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (i->wake_fd < 0)
    return make_error(errc::io_error, "{}: eventfd: {}", i->o.name, std::strerror(errno));
  auto* raw = i.get();
  i->acceptor = std::thread([raw] { raw->loop(); });
  pthread_setname_np(i->acceptor.native_handle(), "file-door");
  return std::unique_ptr<file_door>(new file_door(std::move(i)));
}

file_door::file_door(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

file_door::~file_door() {
  impl_->stopping = true;
  wake(impl_->wake_fd);
  impl_->acceptor.join();
}

int file_door::port() const { return impl_->port; }

file_door_stats file_door::stats() const {
  spindle::lock_guard lock(impl_->mu);
  return impl_->stats;
}

}  // namespace spindle::transport::net
