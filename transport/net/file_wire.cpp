#include "transport/net/file_wire.hpp"

#include "transport/net/token_proof.hpp"

namespace spindle::transport::net::file_wire {

bool send_header(int fd, char kind, std::uint64_t length, clock_type::time_point deadline) {
  unsigned char h[9];
  h[0] = static_cast<unsigned char>(kind);
  for (int i = 0; i < 8; ++i) h[1 + i] = static_cast<unsigned char>(length >> (56 - 8 * i));
  return send_all(fd, h, sizeof h, deadline);
}

bool recv_header(int fd, char& kind, std::uint64_t& length, clock_type::time_point deadline) {
  unsigned char h[9];
  if (!recv_exact(fd, h, sizeof h, deadline)) return false;
  kind = static_cast<char>(h[0]);
  length = 0;
  for (int i = 0; i < 8; ++i) length = (length << 8) | h[1 + i];
  return true;
}

bool send_frame(int fd, char kind, const std::string& payload, clock_type::time_point deadline) {
  return send_header(fd, kind, payload.size(), deadline) &&
         send_all(fd, payload.data(), payload.size(), deadline);
}

std::string manifest_mac(const std::string& token, const std::string& gate_nonce,
                         const std::string& client_nonce, const std::string& text) {
  return proof::mac_of(token, "manifest", gate_nonce, client_nonce + text);
}

}  // namespace spindle::transport::net::file_wire
