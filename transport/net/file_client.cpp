#include "transport/net/file_client.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "transport/net/file_wire.hpp"
#include "transport/net/token_proof.hpp"

namespace spindle::transport::net {
namespace {

namespace fw = file_wire;
using client_clock = fw::clock_type;
constexpr auto kClientReply = std::chrono::seconds(60);  // a door hashing a large folder first
constexpr int kClientHelloMs = 3000;  // a door sends its challenge at once, and answers a proof

constexpr auto kClientStall = std::chrono::seconds(30);  // no byte for this long: a cut
constexpr std::size_t kClientChunk = 256 << 10;

// After a read that failed: true when the peer closed (or reset) the
// connection, false when it is open and silent.
bool closed_by_peer(int fd) {
  char c = 0;
  const ssize_t k = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace

expected<file_client> file_client::connect(const std::string& host, int port,
                                           const std::string& token, int timeout_ms) {
  using proof::kHello, proof::kMac, proof::mac_of, proof::same;
  file_client c;
  c.peer_ =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  c.token_ = token;
  SPINDLE_ASSIGN_OR_RETURN(c.fd_, fw::connect_to(host, port, timeout_ms));
  const int hello_ms = std::min(timeout_ms, kClientHelloMs);
  const auto deadline = client_clock::now() + std::chrono::milliseconds(hello_ms);
  std::string hello(kHello, '\0'), answer(kMac, '\0');
  if (!fw::recv_exact(c.fd_, hello.data(), kHello, deadline)) {
    if (closed_by_peer(c.fd_))  // a full door closes at once: asked again
      return make_error(errc::unavailable,
                        "file door {} closed the connection before its challenge (full, or "
                        "stopping)",
                        c.peer_);
    return make_error(errc::invalid_argument,
                      "{} accepted the connection but sent no challenge within {} ms: it is not "
                      "a Spindle file door (check --fetch-from)",
                      c.peer_, hello_ms);
  }
  if (std::memcmp(hello.data(), fw::kMagic, sizeof fw::kMagic) != 0)
    return make_error(errc::invalid_argument, "{} is not a Spindle file door", c.peer_);
  c.gate_nonce_ = hello.substr(sizeof fw::kMagic);
  c.client_nonce_ = proof::nonce();
  const std::string mine =
      c.client_nonce_ + mac_of(token, "client", c.gate_nonce_, c.client_nonce_);
  if (!fw::send_all(c.fd_, mine.data(), mine.size(), deadline) ||
      !fw::recv_exact(c.fd_, answer.data(), kMac, deadline))
    return make_error(errc::invalid_argument, "file door {} refused the cluster token", c.peer_);
  if (!same(answer, mac_of(token, "server", c.gate_nonce_, c.client_nonce_)))
    return make_error(errc::invalid_argument,
                      "file door {} does not hold this cluster's token (a different cluster?)",
                      c.peer_);
  return c;
}

file_client::file_client(file_client&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      peer_(std::move(o.peer_)),
      token_(std::move(o.token_)),
      gate_nonce_(std::move(o.gate_nonce_)),
      client_nonce_(std::move(o.client_nonce_)) {}

file_client& file_client::operator=(file_client&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    peer_ = std::move(o.peer_);
    token_ = std::move(o.token_);
    gate_nonce_ = std::move(o.gate_nonce_);
    client_nonce_ = std::move(o.client_nonce_);
  }
  return *this;
}

file_client::~file_client() {
  if (fd_ >= 0) ::close(fd_);
}

status file_client::request(const std::string& text) {
  if (!fw::send_frame(fd_, fw::kRequest, text, client_clock::now() + kClientStall))
    return make_error(errc::unavailable, "file door {}: connection lost", peer_);
  return status::ok();
}

expected<file_manifest> file_client::manifest(const std::string& root, int rank) {
  return manifest(root, std::to_string(rank));
}

expected<file_manifest> file_client::manifest(const std::string& root, const std::string& word) {
  if (word.empty() || word.find('\n') != std::string::npos)
    return make_error(errc::invalid_argument, "'{}': not a word a file door is asked for",
                      word.substr(0, 64));
  SPINDLE_TRY(request(fmt::format("manifest\n{}\n{}", root, word)));
  char kind = 0;
  std::uint64_t len = 0;
  if (!fw::recv_header(fd_, kind, len, client_clock::now() + kClientReply))
    return make_error(errc::unavailable, "file door {}: no manifest of '{}' (connection lost)",
                      peer_, root);
  if (len > fw::kMaxManifest)
    return make_error(errc::corrupt_data, "file door {}: a {}-byte reply", peer_, len);
  std::string text(len, '\0'), mac(proof::kMac, '\0');
  const auto deadline = client_clock::now() + kClientStall;
  if (!fw::recv_exact(fd_, text.data(), len, deadline))
    return make_error(errc::unavailable, "file door {}: connection lost", peer_);
  if (kind == fw::kError) return make_error(errc::not_found, "file door {}: {}", peer_, text);
  if (kind != fw::kManifest || !fw::recv_exact(fd_, mac.data(), mac.size(), deadline))
    return make_error(errc::unavailable, "file door {}: no manifest (connection lost)", peer_);
  if (!proof::same(mac, fw::manifest_mac(token_, gate_nonce_, client_nonce_, text)))
    return make_error(errc::corrupt_data,
                      "file door {}: the manifest of '{}' fails its MAC (altered in transit)",
                      peer_, root);
  auto m = parse_manifest(text);
  if (!m) return status(m.error()).with_context(fmt::format("file door {}: ", peer_));
  return m;
}

status file_client::get(const std::string& root, const std::string& unit, const std::string& path,
                        std::uint64_t offset,
                        const std::function<status(const char*, std::size_t)>& sink,
                        const std::string& sha256) {
  std::string q = fmt::format("get\n{}\n{}\n{}\n{}", root, unit, path, offset);
  if (!sha256.empty()) q += "\n" + sha256;
  SPINDLE_TRY(request(q));
  char kind = 0;
  std::uint64_t len = 0;
  if (!fw::recv_header(fd_, kind, len, client_clock::now() + kClientReply))
    return make_error(errc::unavailable, "file door {}: {}: cut before its first byte", peer_,
                      path);
  if (kind == fw::kError || kind == fw::kChanged) {
    std::string text(std::min<std::uint64_t>(len, 4096), '\0');
    if (len > text.size() ||
        !fw::recv_exact(fd_, text.data(), text.size(), client_clock::now() + kClientStall))
      return make_error(errc::unavailable, "file door {}: connection lost", peer_);
    return make_error(kind == fw::kChanged ? errc::corrupt_data : errc::invalid_argument,
                      "file door {}: {}", peer_, text);
  }
  if (kind != fw::kData)
    return make_error(errc::corrupt_data, "file door {}: an unexpected reply to get", peer_);
  std::vector<char> buf(kClientChunk);
  std::uint64_t got = 0;
  while (got < len) {
    const std::size_t n = std::size_t(std::min<std::uint64_t>(kClientChunk, len - got));
    // Piece by piece, so a cut keeps what came: fw::recv_exact reads one piece.
    std::size_t have = 0;
    while (have < n) {
      const ssize_t k = ::recv(fd_, buf.data() + have, n - have, MSG_DONTWAIT);
      if (k > 0) {
        have += std::size_t(k);
        continue;
      }
      if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
          !fw::recv_exact(fd_, buf.data() + have, 1, client_clock::now() + kClientStall)) {
        if (have > 0) SPINDLE_TRY(sink(buf.data(), have));
        return make_error(errc::unavailable, "file door {}: {}: cut after {} of {} bytes", peer_,
                          path, offset + got + have, offset + len);
      }
      ++have;
    }
    SPINDLE_TRY(sink(buf.data(), n));
    got += n;
  }
  return status::ok();
}

}  // namespace spindle::transport::net
