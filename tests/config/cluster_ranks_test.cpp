// config::with_ranks: the topology of a plan over more or fewer ranks than the
// TOML lists, as every node of a cluster that a rank joined or left computes it.
#include <gtest/gtest.h>

#include "config/cluster_ranks.hpp"

namespace spindle::config {
namespace {

topology two_servers() {
  auto t = parse_topology(
      "coordinator = \"a\"\n"
      "[[server]]\nname = \"a\"\nhost = \"10.0.0.1\"\nport = 7000\nmemory = \"1MiB\"\n"
      "[[server]]\nname = \"b\"\nhost = \"10.0.0.2\"\nport = 7001\nmemory = \"2MiB\"\n"
      "disk = \"8MiB\"\ndoor = \"10.0.0.2:7400\"\n",
      "two.toml");
  EXPECT_TRUE(t.has_value()) << t.error().message();
  return *t;
}

TEST(cluster_ranks_test, ranks_past_the_toml_copy_its_last_servers_tiers) {
  const auto toml = two_servers();
  const auto t = with_ranks(toml, 4);
  ASSERT_EQ(t.servers.size(), 4u);
  EXPECT_EQ(t.servers[0].name, "a");
  EXPECT_EQ(t.servers[1].port, 7001);
  for (int r : {2, 3}) {
    const auto& s = t.servers[std::size_t(r)];
    EXPECT_EQ(s.name, "rank-" + std::to_string(r));
    EXPECT_EQ(s.memory_bytes, toml.servers[1].memory_bytes);
    EXPECT_EQ(s.disk_bytes, toml.servers[1].disk_bytes);
    EXPECT_EQ(s.port, 0);
    EXPECT_TRUE(s.door.empty());  // a joined rank's door is its own flag's
  }
  EXPECT_EQ(t.coordinator, toml.coordinator);
  EXPECT_EQ(t.inter, toml.inter);
}

TEST(cluster_ranks_test, fewer_ranks_keep_the_first_and_the_same_count_is_the_toml) {
  const auto toml = two_servers();
  const auto one = with_ranks(toml, 1);
  ASSERT_EQ(one.servers.size(), 1u);
  EXPECT_EQ(one.servers[0].name, "a");
  EXPECT_EQ(with_ranks(toml, 2).servers.size(), 2u);
  EXPECT_EQ(with_ranks(toml, 0).servers.size(), 2u);  // 0: the TOML's
  // Two nodes computing the same rank count get the same servers.
  const auto x = with_ranks(toml, 5), y = with_ranks(toml, 5);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(x.servers[i].name, y.servers[i].name);
    EXPECT_EQ(x.servers[i].memory_bytes, y.servers[i].memory_bytes);
  }
}

TEST(cluster_ranks_test, an_absent_rank_keeps_its_place_with_no_memory) {
  const auto toml = two_servers();
  const plan_ranks ranks{5, std::uint64_t{1} << 3};
  EXPECT_TRUE(ranks.is_absent(3));
  EXPECT_FALSE(ranks.holds(3));
  EXPECT_TRUE(ranks.holds(4));
  EXPECT_FALSE(ranks.holds(5));  // past the plan
  EXPECT_FALSE(ranks.is_absent(64));
  EXPECT_EQ(to_string(ranks), "5 ranks, 3 absent");
  EXPECT_EQ(to_string(plan_ranks{4, 0}), "4 ranks");
  const auto t = with_ranks(toml, ranks);
  ASSERT_EQ(t.servers.size(), 5u);
  EXPECT_EQ(t.servers[3].name, "rank-3");  // numbered as before: it names the others' shards
  EXPECT_EQ(t.servers[3].memory_bytes, 0u);
  EXPECT_EQ(t.servers[3].disk_bytes, 0u);
  EXPECT_TRUE(t.servers[3].devices.empty());
  EXPECT_TRUE(t.servers[3].absent);
  EXPECT_FALSE(t.servers[4].absent);
  EXPECT_EQ(t.servers[4].memory_bytes, toml.servers[1].memory_bytes);
  EXPECT_EQ(t.servers[2].memory_bytes, toml.servers[1].memory_bytes);
  // The TOML's count with one absent is not the TOML.
  EXPECT_EQ(with_ranks(toml, plan_ranks{2, 1}).servers[0].memory_bytes, 0u);
}

}  // namespace
}  // namespace spindle::config
