// `spindle partition`'s logic: each rank's folder holds the graph whole and
// exactly the feature rows of its shards (every node's row on at least one
// rank, equal to the whole dataset's); a folder is checked against the rank
// and the plan it was made for, and a one-process serve reads no partition.
#include "features/dataset_partition.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "../actors/small_gnn.hpp"
#include "features/dataset_placement.hpp"

namespace spindle::features {
namespace {

config::topology servers(int n, std::uint64_t memory_bytes) {
  config::topology t;
  t.inter = config::link_kind::infiniband;
  for (int k = 0; k < config::kLinkKinds; ++k)
    t.links[k] = config::default_link_figures(config::link_kind(k));
  for (int s = 0; s < n; ++s)
    t.servers.push_back({fmt::format("s{}", s), "127.0.0.1", 0, memory_bytes, 0, 1, {}});
  t.coordinator = "s0";
  return t;
}

TEST(dataset_partition_test, each_rank_holds_its_rows_and_the_graph_whole) {
  actors::test_support::small_gnn f("partition_ds", 10, 8, 16, 3);
  const auto& ds = *f.ds;
  // Room for about 45% of the rows per server: most rows live on one server.
  const auto topo = servers(3, std::uint64_t(ds.num_nodes()) * 8 * 4 * 45 / 100);
  const std::string out = f.dir + "-parts";
  auto report = partition_dataset(ds, topo, "fap", out, true);
  ASSERT_TRUE(report.has_value()) << report.error().to_string();
  auto plan = place_dataset(ds, topo, "fap");
  ASSERT_TRUE(plan.has_value());
  std::vector<int> held(std::size_t(ds.num_nodes()), 0);
  for (int r = 0; r < 3; ++r) {
    const std::string dir = rank_dataset_dir(out, r);
    EXPECT_EQ(dir, out + "/rank-" + std::to_string(r));
    auto part = graph::dataset::open(dir, {true});  // checksums verified
    ASSERT_TRUE(part.has_value()) << part.error().to_string();
    EXPECT_TRUE(part->partitioned());
    EXPECT_TRUE(part->features().empty());
    EXPECT_EQ(part->num_nodes(), ds.num_nodes());
    EXPECT_EQ(part->graph().num_edges(), ds.graph().num_edges());
    EXPECT_LT(part->part_rows().size(), std::size_t(ds.num_nodes()));
    EXPECT_EQ(part->part_rows().size(), rows_of_server(*plan, r).size());
    for (auto v : part->part_rows()) {
      ++held[std::size_t(v)];
      ASSERT_EQ(std::memcmp(part->feature_row(v), ds.feature_row(v), 8 * 4), 0) << v;
    }
    EXPECT_TRUE(check_partition(*part, r, *plan).is_ok());
    auto wrong_rank = check_partition(*part, (r + 1) % 3, *plan);
    EXPECT_NE(wrong_rank.message().find("is rank " + std::to_string(r) + "'s partition"),
              std::string::npos)
        << wrong_rank.message();
    auto other = place_dataset(ds, servers(3, std::uint64_t(ds.num_nodes()) * 8 * 4), "fap");
    ASSERT_TRUE(other.has_value());
    EXPECT_NE(check_partition(*part, r, *other).message().find("another placement"),
              std::string::npos);
    EXPECT_EQ(partition_policy(*part), "fap");
  }
  for (std::size_t v = 0; v < held.size(); ++v) EXPECT_GE(held[v], 1) << "node " << v;
  EXPECT_EQ(rank_dataset_dir(f.dir, 0), f.dir);  // a whole dataset is served as it is
  auto again = partition_dataset(*graph::dataset::open(out + "/rank-0"), topo, "fap", out, true);
  EXPECT_FALSE(again.has_value());  // a partition is not partitioned again
}

}  // namespace
}  // namespace spindle::features
