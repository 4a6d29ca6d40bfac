// One authenticated connection to a file door (file_door.hpp): both ends prove
// the cluster token (never sent), then manifests (MAC-checked) and file bytes
// from an offset. Errors name the door's address. One owner; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.hpp"
#include "transport/net/file_manifest.hpp"

namespace spindle::transport::net {

class file_client {
 public:
  /// Connects to host:port and runs the handshake: errc::unavailable when the
  /// door cannot be reached or closes at once (full), errc::invalid_argument
  /// when it or this end holds another token ("refused the cluster token") or
  /// the port is silent for 3 s ("not a Spindle file door").
  static expected<file_client> connect(const std::string& host, int port, const std::string& token,
                                       int timeout_ms = 5000);
  file_client(file_client&& o) noexcept;
  file_client& operator=(file_client&& o) noexcept;
  ~file_client();

  /// The manifest the door serves under `root` to `rank`, its MAC checked.
  expected<file_manifest> manifest(const std::string& root, int rank);
  /// The manifest the door serves under `root` for `word` (a root served by
  /// name: a repository's "NAME/VERSION", "." for all of it).
  expected<file_manifest> manifest(const std::string& root, const std::string& word);
  /// Streams `path` of root's `unit` from `offset` to its end into `sink`. A
  /// refusal carries the door's words; a cut is errc::unavailable ("cut after
  /// N bytes"); a sink error is returned as it is. With `sha256` (the fetch's
  /// manifest's) a file changed at the door since is errc::corrupt_data.
  status get(const std::string& root, const std::string& unit, const std::string& path,
             std::uint64_t offset, const std::function<status(const char*, std::size_t)>& sink,
             const std::string& sha256 = "");
  /// "host:port" of the door.
  const std::string& peer() const { return peer_; }

 private:
  file_client() = default;
  status request(const std::string& text);
  int fd_ = -1;
  std::string peer_, token_, gate_nonce_, client_nonce_;
};

}  // namespace spindle::transport::net
