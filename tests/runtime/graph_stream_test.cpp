// A stream entry's fields become one graph batch (and back), errors naming the
// field; entry ids order as Redis orders them. The follower against a real
// Redis is tested end to end in python/tests/test_graph_updates.py.
#include "runtime/graph_stream.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace spindle::runtime {
namespace {

hps::stream_entry entry_of(const graph::graph_update& u) {
  hps::stream_entry e;
  e.stream = "s";
  e.id = "5-1";
  e.fields = entry_fields_of(u);
  return e;
}

TEST(graph_stream_test, a_batch_round_trips_through_its_fields) {
  graph::graph_update u;
  u.add_src = {1, 2};
  u.add_dst = {0, 0};
  u.add_weight = {0.5f, 2.0f};
  u.remove_src = {3};
  u.remove_dst = {4};
  u.add_nodes = 2;
  u.add_node_features = {1, 2, 3, 4};
  u.set_ids = {5};
  u.set_rows = {9, 8};
  u.remove_nodes = {7};
  auto back = graph_update_of_entry(entry_of(u), 2);
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->add_src, u.add_src);
  EXPECT_EQ(back->add_dst, u.add_dst);
  EXPECT_EQ(back->add_weight, u.add_weight);
  EXPECT_EQ(back->remove_src, u.remove_src);
  EXPECT_EQ(back->add_nodes, 2);
  EXPECT_EQ(back->add_node_features, u.add_node_features);
  EXPECT_EQ(back->set_ids, u.set_ids);
  EXPECT_EQ(back->set_rows, u.set_rows);
  EXPECT_EQ(back->remove_nodes, u.remove_nodes);
  EXPECT_EQ(back->source_stream, "s");
  EXPECT_EQ(back->source_id, "5-1");
}

TEST(graph_stream_test, new_nodes_count_from_their_rows_or_add_count) {
  hps::stream_entry e;
  e.fields = {{"add_nodes", std::string(6 * sizeof(float), '\0')}};
  auto three = graph_update_of_entry(e, 2);
  ASSERT_TRUE(three);
  EXPECT_EQ(three->add_nodes, 3);
  EXPECT_FALSE(graph_update_of_entry(e, 4));  // 6 values are not rows of 4
  hps::stream_entry bare;
  bare.fields = {{"add_count", "2"}};
  auto two = graph_update_of_entry(bare, 0);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->add_nodes, 2);
  bare.fields = {{"add_count", "-2"}};
  EXPECT_FALSE(graph_update_of_entry(bare, 0));
}

TEST(graph_stream_test, a_malformed_entry_is_refused_naming_the_field) {
  auto why = [](std::vector<std::pair<std::string, std::string>> fields) {
    hps::stream_entry e;
    e.fields = std::move(fields);
    auto r = graph_update_of_entry(e, 2);
    EXPECT_FALSE(r);
    return r ? std::string() : r.error().message();
  };
  EXPECT_NE(why({{"add_src", "abc"}}).find("field 'add_src' has 3 bytes"), std::string::npos);
  EXPECT_NE(why({{"add_src", std::string(16, '\0')}, {"add_dst", std::string(8, '\0')}})
                .find("'add_src' (2 ids) and 'add_dst' (1 ids)"),
            std::string::npos);
  EXPECT_NE(why({{"add_edges", "x"}}).find("unknown field 'add_edges'"), std::string::npos);
  EXPECT_NE(why({{"remove_nodes", ""}}).find("changes nothing"), std::string::npos);
  EXPECT_NE(why({{"remove_nodes", std::string(8, '\0')}, {"remove_nodes", std::string(8, '\1')}})
                .find("field 'remove_nodes' appears more than once"),
            std::string::npos);
}

TEST(graph_stream_test, entry_ids_order_by_time_then_sequence) {
  EXPECT_LT(hps::compare_stream_ids("5-1", "5-2"), 0);
  EXPECT_LT(hps::compare_stream_ids("5-9", "10-0"), 0);  // numbers, not text
  EXPECT_EQ(hps::compare_stream_ids("10-0", "10-0"), 0);
  EXPECT_GT(hps::compare_stream_ids("11-0", "10-5"), 0);
  EXPECT_LT(hps::compare_stream_ids("", "0-1"), 0);
  EXPECT_LT(hps::compare_stream_ids("x", "0-0"), 0);
}

TEST(graph_stream_test, each_log_has_a_group_of_its_own) {
  EXPECT_NE(graph_stream_group_of("/tmp/a/graph.log"), graph_stream_group_of("/tmp/b/graph.log"));
  EXPECT_EQ(graph_stream_group_of("/tmp/a/graph.log"), graph_stream_group_of("/tmp/a/./graph.log"));
}

}  // namespace
}  // namespace spindle::runtime
