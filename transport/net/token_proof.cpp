#include "transport/net/token_proof.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <random>

namespace spindle::transport::net::proof {

std::string mac_of(const std::string& token, const char* role, const std::string& gate_nonce,
                   const std::string& dialer_nonce) {
  const std::string msg = role + gate_nonce + dialer_nonce;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  HMAC(EVP_sha256(), token.data(), int(token.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

bool same(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string nonce() {
  std::string n(kNonce, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), int(n.size())) == 1) return n;
  // OpenSSL's generator failed: a fixed nonce would make a recorded handshake
  // replayable, so take the kernel's randomness instead (getrandom behind
  // random_device on Linux).
  std::random_device rd;
  for (std::size_t i = 0; i < n.size(); i += 4) {
    const auto word = rd();
    for (std::size_t k = 0; k < 4 && i + k < n.size(); ++k) n[i + k] = char(word >> (8 * k));
  }
  return n;
}

}  // namespace spindle::transport::net::proof
