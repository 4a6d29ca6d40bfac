#include "transport/net/file_door.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "core/log.hpp"
#include "core/thread_annotations.hpp"
#include "core/thread_priority.hpp"
#include "transport/net/file_manifest.hpp"
#include "transport/net/file_wire.hpp"
#include "transport/net/listen_socket.hpp"
#include "transport/net/token_proof.hpp"
#include "transport/net/wake_fd.hpp"

namespace spindle::transport::net {
namespace {

namespace fw = file_wire;
using door_clock = fw::clock_type;
constexpr auto kDoorHandshake = std::chrono::seconds(5);
constexpr auto kDoorIdle = std::chrono::seconds(120);  // between requests
constexpr auto kDoorStall = std::chrono::seconds(30);  // a reader that takes nothing this long
constexpr std::size_t kDoorChunk = 256 << 10;

struct door_connection {
  std::thread thread;
  int fd = -1;
  std::atomic<bool> done{false};
};

std::vector<std::string> request_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

struct file_door::impl {
  file_door_options o;
  int listen_fd = -1, wake_fd = -1, port = 0;
  std::atomic<bool> stopping{false};
  std::thread acceptor;
  std::list<door_connection> conns;  // the acceptor's alone
  mutable spindle::mutex mu;
  file_door_stats stats SPINDLE_GUARDED_BY(mu);
  std::map<std::string, file_manifest> manifests SPINDLE_GUARDED_BY(mu);  // by root and unit
  door_clock::time_point last_refusal_log SPINDLE_GUARDED_BY(mu){};
  std::uint64_t refusals_unlogged SPINDLE_GUARDED_BY(mu) = 0;
  spindle::mutex hash_mu;  // held while a folder is hashed
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
  void note_refusal(const std::string& peer) {
    spindle::lock_guard lock(mu);
    ++stats.refused;
    ++refusals_unlogged;
    if (door_clock::now() - last_refusal_log < std::chrono::seconds(10)) return;
    log::warn("{}: closed {} connection(s) that did not prove the cluster token (last from {})",
              o.name, refusals_unlogged, peer);
    refusals_unlogged = 0;
    last_refusal_log = door_clock::now();
  }

  const file_root* root(const std::string& name) const {
    for (const auto& r : o.roots)
      if (r.name == name) return &r;
    return nullptr;
  }

  // The manifest of root r's unit, hashed once and kept (the files a door was
  // started with do not change under it; a changed size is refused at `get`).
  // Hashing holds hash_mu, not mu: transfers go on meanwhile.
  expected<file_manifest> manifest_of(const file_root& r, const std::string& unit) {
    const std::string key = r.name + "\n" + unit;
    auto cached = [&]() -> std::optional<file_manifest> {
      spindle::lock_guard lock(mu);
      auto it = manifests.find(key);
      return it == manifests.end() ? std::nullopt : std::optional(it->second);
    };
    if (auto m = cached()) return *m;
    spindle::lock_guard hashing(hash_mu);  // one folder at a time
    if (auto m = cached()) return *m;      // hashed while this one waited
    SPINDLE_ASSIGN_OR_RETURN(auto m, list_folder(unit == "." ? r.dir : r.dir + "/" + unit, unit));
    spindle::lock_guard lock(mu);
    manifests.emplace(key, m);
    return m;
  }

  expected<std::string> reply_manifest(const std::vector<std::string>& q) {
    const file_root* r = q.size() == 3 ? root(q[1]) : nullptr;
    if (!r)
      return make_error(errc::not_found, "this door serves no folder '{}'",
                        q.size() > 1 ? q[1].substr(0, 64) : "");
    int rank = -1;
    try {
      rank = std::stoi(q[2]);
    } catch (const std::exception&) {
      return make_error(errc::invalid_argument, "rank '{}' is not a number", q[2].substr(0, 32));
    }
    std::string unit = ".";
    if (r->unit_for) {
      SPINDLE_ASSIGN_OR_RETURN(unit, r->unit_for(rank));
    }
    SPINDLE_ASSIGN_OR_RETURN(auto m, manifest_of(*r, unit));
    return to_text(m);
  }

  // Checks a `get` request: a served root, a unit served before, a path of its
  // manifest; returns the file's full path and its manifest entry.
  expected<std::pair<std::string, file_entry>> checked_get(const std::vector<std::string>& q,
                                                           std::uint64_t& offset) {
    if (q.size() != 5) return make_error(errc::invalid_argument, "a malformed get");
    const file_root* r = root(q[1]);
    if (!r)
      return make_error(errc::not_found, "this door serves no folder '{}'", q[1].substr(0, 64));
    if (q[2] != ".") SPINDLE_TRY(check_relative_path(q[2]).with_context("refused: "));
    SPINDLE_TRY(check_relative_path(q[3]).with_context("refused: "));
    file_entry entry;
    {
      spindle::lock_guard lock(mu);
      auto it = manifests.find(r->name + "\n" + q[2]);
      const file_entry* e = it == manifests.end() ? nullptr : it->second.find(q[3]);
      if (!e)
        return make_error(errc::not_found, "refused: {} {} is not a file this door serves", r->name,
                          q[3].substr(0, 200));
      entry = *e;
    }
    try {
      offset = std::stoull(q[4]);
    } catch (const std::exception&) {
      return make_error(errc::invalid_argument, "offset '{}' is not a number", q[4].substr(0, 32));
    }
    if (offset > entry.size)
      return make_error(errc::invalid_argument, "{}: offset {} past its {} bytes", entry.path,
                        offset, entry.size);
    const std::string dir = q[2] == "." ? r->dir : r->dir + "/" + q[2];
    const std::string path = dir + "/" + entry.path;
    // A link swapped in after the manifest was built is not followed: the file
    // must resolve to itself under the served folder.
    const std::string inside = (q[2] == "." ? "" : "/" + q[2]) + "/" + entry.path;
    if (resolved(path) != resolved(r->dir) + inside)
      return make_error(errc::not_found, "{}: changed since its manifest (no longer a plain file "
                        "in the served folder)", entry.path);
    return std::make_pair(path, entry);
  }

  static std::string resolved(const std::string& path) {
    char* real = ::realpath(path.c_str(), nullptr);
    std::string out = real ? real : "";
    std::free(real);
    return out;
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

  // Sends the file from `offset`; false when the connection is gone.
  bool send_file(int fd, const std::string& path, const file_entry& e, std::uint64_t offset) {
    const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st {};
    if (in < 0 || ::fstat(in, &st) != 0 || !S_ISREG(st.st_mode) ||
        std::uint64_t(st.st_size) != e.size) {
      if (in >= 0) ::close(in);
      return fw::send_frame(fd, fw::kError,
                            fmt::format("{}: changed or gone since its manifest", e.path),
                            door_clock::now() + kDoorStall);
    }
    bool ok = fw::send_header(fd, fw::kData, e.size - offset, door_clock::now() + kDoorStall);
    std::vector<char> buf(kDoorChunk);
    std::uint64_t sent = 0;
    while (ok && offset < e.size) {
      const ssize_t n = ::pread(
          in, buf.data(), std::min<std::uint64_t>(kDoorChunk, e.size - offset), off_t(offset));
      if (n <= 0) {
        ok = false;  // the length is promised: a short file ends the connection
        break;
      }
      pace(std::uint64_t(n));
      ok = fw::send_all(fd, buf.data(), std::size_t(n), door_clock::now() + kDoorStall);
      offset += std::uint64_t(n);
      sent += std::uint64_t(n);
    }
    ::close(in);
    count(&file_door_stats::bytes_sent, sent);
    if (ok) count(&file_door_stats::files_sent);
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
    if (!fw::recv_exact(fd, text.data(), len, door_clock::now() + kDoorHandshake)) return false;
    const auto q = request_lines(text);
    const auto deadline = door_clock::now() + kDoorStall;
    auto refuse = [&](const status& st) {
      count(&file_door_stats::requests_refused);
      log::warn("{}: {}: {}", o.name, peer, st.message());
      return fw::send_frame(fd, fw::kError, st.message(), deadline);
    };
    if (!q.empty() && q[0] == "manifest") {
      auto m = reply_manifest(q);
      if (!m) return refuse(m.error());
      return fw::send_frame(fd, fw::kManifest, *m, deadline) &&
             fw::send_all(fd, fw::manifest_mac(o.token, gate_nonce, client_nonce, *m).data(),
                          proof::kMac, deadline);
    }
    if (!q.empty() && q[0] == "get") {
      std::uint64_t offset = 0;
      auto f = checked_get(q, offset);
      if (!f) return refuse(f.error());
      return send_file(fd, f->first, f->second, offset);
    }
    return refuse(make_error(errc::invalid_argument, "an unknown request"));
  }

  void serve(int fd, const std::string& peer) {
    using proof::kHello, proof::kMac, proof::kNonce, proof::kProof, proof::mac_of, proof::same;
    const auto deadline = door_clock::now() + kDoorHandshake;
    const std::string gate_nonce = proof::nonce();
    std::string reply(kProof, '\0');
    if (!fw::send_all(fd, (std::string(fw::kMagic, sizeof fw::kMagic) + gate_nonce).data(), kHello,
                      deadline) ||
        !fw::recv_exact(fd, reply.data(), kProof, deadline) ||
        !same(reply.substr(kNonce),
              mac_of(o.token, "client", gate_nonce, reply.substr(0, kNonce)))) {
      note_refusal(peer);
      return;
    }
    const std::string client_nonce = reply.substr(0, kNonce);
    if (!fw::send_all(fd, mac_of(o.token, "server", gate_nonce, client_nonce).data(), kMac,
                      deadline))
      return;
    count(&file_door_stats::sessions);
    while (!stopping.load() && answer(fd, peer, gate_nonce, client_nonce)) {
    }
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

  void accept_one() {
    std::string peer;
    const int fd = accept_peer(listen_fd, peer);
    if (fd < 0) return;
    reap();
    if (conns.size() >= o.max_connections) {  // the fetcher retries
      ::close(fd);
      return;
    }
    auto& c = conns.emplace_back();
    c.fd = fd;
    c.thread = std::thread([this, &c, peer] {
      lower_to_background_priority();  // the node's serving threads come first
      serve(c.fd, peer);
      ::shutdown(c.fd, SHUT_RDWR);
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
