// The plan `spindle partition` stores beside each rank's rows: read back, it is
// the plan the partition was made with (every node in the same shards at the
// same rows, the same checksum); a damaged file, a changed topology or another
// format is refused by name.
#include "features/plan_manifest.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../actors/small_gnn.hpp"
#include "features/dataset_partition.hpp"
#include "features/dataset_placement.hpp"

namespace spindle::features {
namespace {

config::topology three_servers(std::uint64_t memory_bytes) {
  config::topology t;
  t.inter = config::link_kind::infiniband;
  for (int k = 0; k < config::kLinkKinds; ++k)
    t.links[k] = config::default_link_figures(config::link_kind(k));
  for (int s = 0; s < 3; ++s)
    t.servers.push_back({fmt::format("s{}", s), "127.0.0.1", 0, memory_bytes, 0, 1, {}});
  t.coordinator = "s0";
  return t;
}

struct stored_plan : ::testing::Test {
  actors::test_support::small_gnn f{"plan_manifest_ds", 10, 8, 16, 3};
  // Room for about 45% of the rows per server: most rows on one server, some on two.
  config::topology topo = three_servers(std::uint64_t(f.ds->num_nodes()) * 8 * 4 * 45 / 100);
  std::string out = f.dir + "-parts";
  std::string rank1 = out + "/rank-1";
  void SetUp() override {
    auto report = partition_dataset(*f.ds, topo, "fap", out, true);
    ASSERT_TRUE(report.has_value()) << report.error().to_string();
  }
  void TearDown() override { std::filesystem::remove_all(out); }
  expected<placement_plan> read() {
    return read_plan_manifest(rank1, topo, row_bytes_of(*f.ds), std::uint64_t(f.ds->num_nodes()),
                              "fap");
  }
};

TEST_F(stored_plan, reads_back_the_plan_the_partition_was_made_with) {
  auto placed = place_dataset(*f.ds, topo, "fap");
  ASSERT_TRUE(placed.has_value());
  for (int r = 0; r < 3; ++r) {
    const std::string dir = out + "/rank-" + std::to_string(r);
    ASSERT_TRUE(has_plan_manifest(dir));
    auto plan = read_plan_manifest(dir, topo, row_bytes_of(*f.ds),
                                   std::uint64_t(f.ds->num_nodes()), "fap");
    ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
    EXPECT_EQ(plan_checksum(*plan), plan_checksum(*placed));
    EXPECT_EQ(plan->shard_rows(), placed->shard_rows());
    EXPECT_EQ(plan->replicated_rows, placed->replicated_rows);
    for (std::size_t s = 0; s < placed->shards.size(); ++s)
      EXPECT_EQ(plan->lookup.shard_rows(shard_index(s)), placed->lookup.shard_rows(shard_index(s)));
    for (std::int64_t v = 0; v < f.ds->num_nodes(); ++v) {
      auto a = plan->lookup.locate(std::uint64_t(v)), b = placed->lookup.locate(std::uint64_t(v));
      ASSERT_EQ(a.owners.size(), b.owners.size()) << v;
      for (std::size_t k = 0; k < a.owners.size(); ++k) {
        EXPECT_EQ(a.owners[k].shard, b.owners[k].shard) << v;
        EXPECT_EQ(a.owners[k].start_row + a.index, b.owners[k].start_row + b.index) << v;
      }
    }
  }
  EXPECT_GT(placed->replicated_rows + placed->lookup.num_classes(), 3u);  // not a trivial plan
}

TEST_F(stored_plan, a_changed_topology_is_refused_naming_the_shards) {
  topo.servers[2].memory_bytes *= 2;
  auto plan = read();
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message().find("plan.json: the plan's shards"), std::string::npos)
      << plan.error().message();
  EXPECT_NE(plan.error().message().find("partition again"), std::string::npos);
}

TEST_F(stored_plan, a_damaged_node_table_is_refused) {
  auto a = npy_array::open(rank1 + "/plan_nodes.npy");
  ASSERT_TRUE(a.has_value());
  const auto offset = std::streamoff(a->byte_size() - a->byte_size() / 2 + 4);  // an index column
  const std::uintmax_t size = std::filesystem::file_size(rank1 + "/plan_nodes.npy");
  {
    std::fstream io(rank1 + "/plan_nodes.npy", std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(std::streamoff(size) - std::streamoff(a->byte_size()) + offset);
    const std::uint32_t bad = 7;
    io.write(reinterpret_cast<const char*>(&bad), sizeof bad);
  }
  auto plan = read();
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code(), errc::corrupt_data) << plan.error().to_string();
}

TEST_F(stored_plan, another_format_or_a_bad_file_is_refused_by_name) {
  std::ofstream(rank1 + "/plan.json") << "{\"format\": 9, \"shards\": [], \"checksum\": \"0\"}";
  auto plan = read();
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code(), errc::unsupported);
  EXPECT_NE(plan.error().message().find("plan format 9"), std::string::npos);
  std::ofstream(rank1 + "/plan.json") << "[1, 2";
  plan = read();
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message().find("not a stored placement plan"), std::string::npos);
}

// Rewrites field `name` of rank 1's plan.json with the JSON text `value`.
void set_field(const std::string& dir, const std::string& name, const std::string& value) {
  std::ifstream in(dir + "/plan.json");
  auto j = nlohmann::json::parse(in);
  j[name] = nlohmann::json::parse(value);
  std::ofstream(dir + "/plan.json") << j.dump();
}

TEST_F(stored_plan, mistyped_fields_are_refused_by_name_not_thrown) {
  const std::string good = rank1 + "/plan.json.good";
  std::filesystem::copy_file(rank1 + "/plan.json", good);
  const std::pair<const char*, const char*> cases[] = {
      {"format", "\"1\""}, {"checksum", "123"}, {"nodes", "\"x\""}, {"row_bytes", "-4"},
      {"nodes", "7"},       {"shards", "{}"}};
  for (const auto& [field, value] : cases) {
    std::filesystem::copy_file(good, rank1 + "/plan.json",
                               std::filesystem::copy_options::overwrite_existing);
    set_field(rank1, field, value);
    auto plan = read();
    ASSERT_FALSE(plan.has_value()) << field << " = " << value;
    EXPECT_NE(plan.error().message().find("plan.json"), std::string::npos)
        << plan.error().message();
  }
}

TEST_F(stored_plan, a_hostile_plan_json_is_refused_before_parsing) {
  std::filesystem::remove(rank1 + "/plan.json");
  std::filesystem::create_directory(rank1 + "/plan.json");  // not a file
  auto plan = read();
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message().find("plan.json"), std::string::npos);
  std::filesystem::remove(rank1 + "/plan.json");
  std::ofstream(rank1 + "/plan.json")
      << "{\"format\": 1, \"checksum\": \"0\", \"shards\": " << std::string(100000, '[')
      << std::string(100000, ']') << "}";
  plan = read();
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message().find("nested deeper"), std::string::npos)
      << plan.error().message();
}

TEST_F(stored_plan, an_index_past_its_class_is_refused_without_allocating_it) {
  const std::string path = rank1 + "/plan_nodes.npy";
  auto a = npy_array::open(path);
  ASSERT_TRUE(a.has_value());
  const auto data_at = std::streamoff(std::filesystem::file_size(path) - a->byte_size());
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(data_at + 10 * 8 + 4);  // node 10's index
    const std::uint32_t huge = 0x7f000004;
    io.write(reinterpret_cast<const char*>(&huge), sizeof huge);
  }
  auto plan = read();
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message().find("plan_nodes.npy: node 10 has row 2130706436"),
            std::string::npos)
      << plan.error().message();
}

}  // namespace
}  // namespace spindle::features
