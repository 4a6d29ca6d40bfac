// The KServe graph-update body: every field read into one batch; a wrong type,
// shape or unknown field refused by name, before anything is applied.
#include "transport/kserve/graph_json.hpp"

#include <gtest/gtest.h>

namespace spindle::transport::kserve {
namespace {

TEST(graph_json_test, every_field_is_read_into_one_batch) {
  auto e = graph_edit_of_json(R"({"add_edges": [[1, 2], [3, 4]], "remove_edges": [[5], [6]],
      "add_nodes": [[0.5, 1], [2, 3]], "set_features": {"ids": [7], "rows": [[9, 8]]},
      "remove_nodes": [10]})");
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_EQ(e->add_src, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(e->add_dst, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(e->remove_src, std::vector<std::int64_t>{5});
  EXPECT_EQ(e->add_nodes, 2);
  EXPECT_EQ(e->add_node_features, (std::vector<float>{0.5f, 1, 2, 3}));
  EXPECT_EQ(e->set_ids, std::vector<std::int64_t>{7});
  EXPECT_EQ(e->set_rows, (std::vector<float>{9, 8}));
  EXPECT_EQ(e->remove_nodes, std::vector<std::int64_t>{10});
}

TEST(graph_json_test, a_typed_graphs_fields_are_keyed_by_type) {
  auto e = graph_edit_of_json(R"({"add_edges": {"user,pays,merchant": [[1, 2], [3, 4]]},
      "remove_edges": {"knows": [[5], [6]]}, "add_nodes": {"tx": [[0.5, 1]], "tag": 2},
      "set_features": {"user": {"ids": [7], "rows": [[9, 8]]}}, "remove_nodes": {"tx": [3]}})");
  ASSERT_TRUE(e) << e.error().to_string();
  ASSERT_EQ(e->add_typed.size(), 1u);
  EXPECT_EQ(e->add_typed[0].type, "user,pays,merchant");
  EXPECT_EQ(e->add_typed[0].dst, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(e->remove_typed[0].src, std::vector<std::int64_t>{5});
  ASSERT_EQ(e->nodes.size(), 3u);  // one group per node type, in the body's order
  for (const auto& n : e->nodes) {
    if (n.type == "tx") {
      EXPECT_EQ(n.add, 1);
      EXPECT_EQ(n.add_rows, (std::vector<float>{0.5f, 1}));
      EXPECT_EQ(n.remove, std::vector<std::int64_t>{3});
    } else if (n.type == "tag") {
      EXPECT_EQ(n.add, 2);
    } else {
      EXPECT_EQ(n.type, "user");
      EXPECT_EQ(n.set_ids, std::vector<std::int64_t>{7});
    }
  }
  EXPECT_TRUE(e->add_src.empty() && e->add_nodes == 0);
  auto bad = graph_edit_of_json(R"({"add_edges": {"knows": [[1]]}})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "add_edges['knows']: expected [[src, ...], [dst, ...]]");
  rpc::graph_edit_answer a{rpc::rpc_status::ok, {}, 3, 10, {4, 5, 0}};
  EXPECT_EQ(
      graph_answer_json(a, {{"user", 2}, {"tx", 1}}),
      R"({"new_ids":[4,5,0],"new_ids_by_type":{"tx":[0],"user":[4,5]},"nodes":10,"version":3})");
}

TEST(graph_json_test, bad_bodies_are_refused_by_field) {
  auto refused = [](const char* body, const std::string& says) {
    auto e = graph_edit_of_json(body);
    ASSERT_FALSE(e) << body;
    EXPECT_NE(e.error().message().find(says), std::string::npos) << e.error().message();
  };
  refused("[1]", "not a JSON object");
  refused("{", "not a JSON object");
  refused(R"({"add_edge": []})", "unknown field 'add_edge'");
  refused(R"({"add_edges": [[1, 2]]})", "add_edges: expected [[src, ...], [dst, ...]]");
  refused(R"({"add_edges": [[1, 2.5], [3, 4]]})", "add_edges[0][1]: expected an integer");
  refused(R"({"add_nodes": [[1, "x"]]})", "add_nodes[0][1]: expected a number");
  refused(R"({"set_features": {"ids": [1]}})", "set_features: expected");
  refused(R"({"remove_nodes": 3})", "remove_nodes: expected a list");
  refused(R"({"add_nodes": [[1, 2, 3], [4, 5]]})", "add_nodes[1]: 2 values, but row 0 has 3");
  refused(R"({"add_nodes": {"user": [[1, 2], [3, 4, 5]]}})",
          "add_nodes['user'][1]: 3 values, but row 0 has 2");
  refused(R"({"add_edges": [[[[[[[[[[1]]]]]]]]]]})", "nests deeper");
  // A repeated key kept only its last value (an acknowledged batch lost a part).
  refused(R"({"add_nodes": {"a": [[1, 2]]}, "add_nodes": {"b": [[1, 2, 3]]}})",
          "key 'add_nodes' appears twice in one object");
  refused(R"({"add_nodes": {"user": 1, "user": 2}})", "key 'user' appears twice");
  refused(R"({"set_features": {"ids": [1], "rows": [[1]], "ids": [2]}})", "key 'ids' appears twice");
}

TEST(graph_json_test, a_node_type_may_be_named_ids) {
  auto e = graph_edit_of_json(
      R"({"set_features": {"ids": {"ids": [3], "rows": [[1.5]]}, "rows": {"ids": [4], "rows": [[2]]}}})");
  ASSERT_TRUE(e) << e.error().message();
  ASSERT_EQ(e->nodes.size(), 2u);
  for (const auto& n : e->nodes) {
    EXPECT_TRUE(n.type == "ids" || n.type == "rows") << n.type;
    EXPECT_EQ(n.set_ids, std::vector<std::int64_t>{n.type == "ids" ? 3 : 4});
  }
  auto untyped = graph_edit_of_json(R"({"set_features": {"ids": [3], "rows": [[1.5]]}})");
  ASSERT_TRUE(untyped);
  EXPECT_TRUE(untyped->nodes.empty());
  EXPECT_EQ(untyped->set_ids, std::vector<std::int64_t>{3});
}

TEST(graph_json_test, a_typed_answer_names_only_the_types_that_gained_nodes) {
  rpc::graph_edit_answer a{rpc::rpc_status::ok, {}, 4, 10, {}};
  EXPECT_EQ(graph_answer_json(a, {{"user", 0}}, true),
            R"({"new_ids":[],"new_ids_by_type":{},"nodes":10,"version":4})");
  EXPECT_EQ(graph_answer_json(a, {}, true),
            R"({"new_ids":[],"new_ids_by_type":{},"nodes":10,"version":4})");
  a.new_ids = {7};
  EXPECT_EQ(graph_answer_json(a, {{"user", 0}, {"tx", 1}}, true),
            R"({"new_ids":[7],"new_ids_by_type":{"tx":[7]},"nodes":10,"version":4})");
}

TEST(graph_json_test, the_answer_names_version_nodes_and_new_ids) {
  rpc::graph_edit_answer a;
  a.version = 3;
  a.nodes = 12;
  a.new_ids = {10, 11};
  EXPECT_EQ(graph_answer_json(a), R"({"new_ids":[10,11],"nodes":12,"version":3})");
}

}  // namespace
}  // namespace spindle::transport::kserve
