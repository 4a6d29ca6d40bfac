// Room for unproven connections (the token relay's gate, the file door): past
// an address's cap its own oldest makes room, past the total cap the oldest of
// all; a connection that proved the token or closed is no longer counted.
#include "transport/net/handshake_limit.hpp"

#include <gtest/gtest.h>

namespace spindle::transport::net {
namespace {

TEST(handshake_limit_test, an_address_past_its_cap_makes_room_with_its_own_oldest) {
  handshake_limit l(10, 3);
  EXPECT_FALSE(l.admit(1, "a"));
  EXPECT_FALSE(l.admit(2, "b"));
  EXPECT_FALSE(l.admit(3, "a"));
  EXPECT_FALSE(l.admit(4, "a"));
  auto v = l.admit(5, "a");  // a's fourth: a's oldest (1), not b's
  ASSERT_TRUE(v);
  EXPECT_EQ(v->id, 1u);
  EXPECT_TRUE(v->per_peer);
  EXPECT_EQ(l.waiting_from("a"), 3u);
  EXPECT_EQ(l.waiting_from("b"), 1u);
  EXPECT_FALSE(l.forget(1));  // evicted: no longer counted
  EXPECT_TRUE(l.forget(3));   // proved the token
  EXPECT_FALSE(l.admit(6, "a"));
}

TEST(handshake_limit_test, past_the_total_cap_the_oldest_of_all_makes_room) {
  handshake_limit l(3, 3);
  EXPECT_FALSE(l.admit(1, "a"));
  EXPECT_FALSE(l.admit(2, "b"));
  EXPECT_FALSE(l.admit(3, "c"));
  auto v = l.admit(4, "d");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->id, 1u);
  EXPECT_FALSE(v->per_peer);
  EXPECT_EQ(l.waiting(), 3u);
  EXPECT_EQ(l.waiting_from("a"), 0u);
}

}  // namespace
}  // namespace spindle::transport::net
