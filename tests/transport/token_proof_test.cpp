// The cluster relays' proof of the token: HMAC-SHA256 over role | gate nonce |
// dialer nonce (checked against RFC 4231's known answer), MAC comparison, and
// nonces that are fresh each time.
#include <gtest/gtest.h>

#include <set>

#include "transport/net/token_proof.hpp"

namespace spindle::transport::net::proof {
namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

TEST(token_proof_test, the_mac_is_hmac_sha256_of_role_and_nonces) {
  // RFC 4231, test case 2: key "Jefe", data "what do ya want for nothing?".
  EXPECT_EQ(hex(mac_of("Jefe", "what do ya", " want for ", "nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  const std::string a(kNonce, 'a'), b(kNonce, 'b');
  EXPECT_EQ(mac_of("token-0123456789", "client", a, b).size(), kMac);
  EXPECT_NE(mac_of("token-0123456789", "client", a, b), mac_of("token-0123456789", "server", a, b));
  EXPECT_NE(mac_of("token-0123456789", "client", a, b), mac_of("token-0123456789", "client", b, a));
  EXPECT_NE(mac_of("token-0123456789", "client", a, b), mac_of("token-9876543210", "client", a, b));
}

TEST(token_proof_test, macs_compare_whole) {
  const std::string m = mac_of("token-0123456789", "client", "x", "y");
  EXPECT_TRUE(same(m, m));
  std::string flipped = m;
  flipped.back() = char(flipped.back() ^ 1);
  EXPECT_FALSE(same(m, flipped));
  EXPECT_FALSE(same(m, m.substr(0, 31)));
  EXPECT_FALSE(same("", m));
}

TEST(token_proof_test, nonces_are_fresh) {
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) {
    const auto n = nonce();
    ASSERT_EQ(n.size(), kNonce);
    EXPECT_TRUE(seen.insert(n).second) << "a nonce came twice";
  }
  EXPECT_NE(nonce(), std::string(kNonce, '\0'));
}

}  // namespace
}  // namespace spindle::transport::net::proof
