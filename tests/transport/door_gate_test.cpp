// The doors' connection gate: a cap per door, a cap per peer on each door, the
// process's descriptor budget with a share every door keeps, and every slot
// given back when a door closes.
#include "transport/net/door_gate.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace spindle::transport::net {
namespace {

TEST(door_gate_test, caps_the_door_and_the_peer_on_each_door) {
  set_max_per_peer(3);
  const auto lim = limits();
  ASSERT_EQ(lim.per_peer, 3u);
  ASSERT_GT(lim.descriptors, 16u);
  door_gate a("a", 4), b("b", 100);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.admit("10.0.0.1"), admission::admitted);
  EXPECT_EQ(a.admit("10.0.0.1"), admission::peer_full);
  // The peer's cap is per door: a flood on one door does not shut it out of another.
  EXPECT_EQ(b.admit("10.0.0.1"), admission::admitted);
  EXPECT_EQ(a.admit("10.0.0.2"), admission::admitted);
  EXPECT_EQ(a.admit("10.0.0.3"), admission::door_full);
  EXPECT_EQ(a.open(), 4u);
  a.release("10.0.0.1");
  EXPECT_EQ(a.admit("10.0.0.1"), admission::admitted);
  a.release("10.0.0.9");  // never admitted here: nothing changes
  EXPECT_EQ(a.open(), 4u);
}

TEST(door_gate_test, a_closed_door_gives_its_descriptors_back) {
  set_max_per_peer(1);
  const std::size_t budget = limits().descriptors;
  {
    door_gate a("a", budget + 10);
    for (std::size_t i = 0; i < budget; ++i) (void)a.admit("p" + std::to_string(i));
    EXPECT_EQ(a.admit("one-more"), admission::process_full);
  }
  door_gate c("c", 10);
  EXPECT_EQ(c.admit("10.1.0.1"), admission::admitted);
}

TEST(door_gate_test, every_door_keeps_its_share_of_the_budget) {
  set_max_per_peer(1);  // one connection per address: many addresses fill a door
  const auto lim = limits();
  ASSERT_GT(lim.reserve_per_door, 0u);
  door_gate other("other", lim.descriptors);  // open before the flood, as a server's are
  door_gate big("big", lim.descriptors + 10, 2);  // two descriptors per connection
  std::size_t admitted = 0;
  for (std::size_t i = 0; i < lim.descriptors; ++i)
    if (big.admit("peer-" + std::to_string(i)) == admission::admitted) ++admitted;
  EXPECT_EQ(admitted, (lim.descriptors - lim.reserve_per_door) / 2);
  // The flooded door cannot take the other door's share.
  std::size_t others = 0;
  for (std::size_t i = 0; i < lim.reserve_per_door + 2; ++i)
    if (other.admit("good-" + std::to_string(i)) == admission::admitted) ++others;
  EXPECT_GE(others, lim.reserve_per_door);  // and the odd descriptor `big` could not use
  EXPECT_LE(others, lim.reserve_per_door + 1);
}

}  // namespace
}  // namespace spindle::transport::net
