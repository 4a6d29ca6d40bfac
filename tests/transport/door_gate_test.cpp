// The doors' connection gate: a cap per door, a cap per peer across doors, the
// process's descriptor budget, and every slot given back when a door closes.
#include "transport/net/door_gate.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace spindle::transport::net {
namespace {

TEST(door_gate_test, caps_the_door_the_peer_and_the_process) {
  set_max_per_peer(3);
  const auto lim = limits();
  ASSERT_EQ(lim.per_peer, 3u);
  ASSERT_GT(lim.descriptors, 16u);
  door_gate a("a", 4), b("b", 100);
  EXPECT_EQ(a.admit("10.0.0.1"), admission::admitted);
  EXPECT_EQ(a.admit("10.0.0.1"), admission::admitted);
  EXPECT_EQ(b.admit("10.0.0.1"), admission::admitted);
  // The peer's cap counts every door.
  EXPECT_EQ(b.admit("10.0.0.1"), admission::peer_full);
  EXPECT_EQ(a.admit("10.0.0.2"), admission::admitted);
  EXPECT_EQ(a.admit("10.0.0.3"), admission::admitted);
  EXPECT_EQ(a.admit("10.0.0.4"), admission::door_full);
  EXPECT_EQ(a.open(), 4u);
  a.release("10.0.0.1");
  EXPECT_EQ(b.admit("10.0.0.1"), admission::admitted);
  a.release("10.0.0.9");  // never admitted here: nothing changes
  EXPECT_EQ(a.open(), 3u);
}

TEST(door_gate_test, a_closed_door_gives_its_slots_back) {
  set_max_per_peer(2);
  {
    door_gate a("a", 10);
    EXPECT_EQ(a.admit("10.1.0.1"), admission::admitted);
    EXPECT_EQ(a.admit("10.1.0.1"), admission::admitted);
    door_gate b("b", 10);
    EXPECT_EQ(b.admit("10.1.0.1"), admission::peer_full);
  }
  door_gate c("c", 10);
  EXPECT_EQ(c.admit("10.1.0.1"), admission::admitted);
}

TEST(door_gate_test, the_descriptor_budget_holds_for_all_doors) {
  set_max_per_peer(1);  // one connection per address: many addresses fill the budget
  const std::size_t budget = limits().descriptors;
  door_gate big("big", budget + 10, 2);  // two descriptors per connection
  std::size_t admitted = 0;
  for (std::size_t i = 0; i < budget; ++i)
    if (big.admit("peer-" + std::to_string(i)) == admission::admitted) ++admitted;
  EXPECT_EQ(admitted, budget / 2);
  door_gate other("other", 10);
  EXPECT_EQ(other.admit("someone"), budget % 2 ? admission::admitted : admission::process_full);
}

}  // namespace
}  // namespace spindle::transport::net
