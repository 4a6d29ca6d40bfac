// The file door's wire, shared by its server and its client: frames of one kind byte, a
// 64-bit big-endian length and the payload. The handshake is token_proof's
// with its own magic, so a fetcher sent to a CAF gate is told so.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/status.hpp"
#include "transport/net/socket_io.hpp"

namespace spindle::transport::net::file_wire {

inline constexpr char kMagic[8] = {'S', 'P', 'N', 'D', 'L', 'F', 'S', '1'};
inline constexpr std::size_t kMaxRequest = 4096;  // a request frame's payload
inline constexpr std::size_t kMaxManifest = 64 << 20;
// Frame kinds: a request; a manifest (then its 32-byte MAC); file bytes; an error;
// a file changed on the door's disk since the manifest the fetch holds.
inline constexpr char kRequest = 'q', kManifest = 'm', kData = 'd', kError = 'e', kChanged = 'c';

using socket_io::clock_type;
using socket_io::connect_to;
using socket_io::recv_exact;
using socket_io::send_all;

bool send_header(int fd, char kind, std::uint64_t length, clock_type::time_point deadline);
bool recv_header(int fd, char& kind, std::uint64_t& length, clock_type::time_point deadline);
bool send_frame(int fd, char kind, const std::string& payload, clock_type::time_point deadline);

/// The MAC a door sends after a manifest, binding it to this session's nonces.
std::string manifest_mac(const std::string& token, const std::string& gate_nonce,
                         const std::string& client_nonce, const std::string& text);

}  // namespace spindle::transport::net::file_wire
