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
  refused(R"({"add_edges": [[[[[[[[[[1]]]]]]]]]]})", "nests deeper");
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
