// model.toml's task and decoder: what a link-prediction model states, refused by
// name when it is not something Spindle serves, and kept by to_toml.
#include "config/model.hpp"

#include <gtest/gtest.h>

namespace spindle::config {
namespace {

const std::string kStack =
    "[model]\narch = \"stack\"\nin = 4\nout = 3\n\n[[op]]\nkind = \"sage\"\nprefix = \"conv\"\nin = 4\nout = 3\n";

std::string with(const std::string& lines) {
  return "[model]\narch = \"stack\"\nin = 4\nout = 3\n" + lines +
         "\n[[op]]\nkind = \"sage\"\nprefix = \"conv\"\nin = 4\nout = 3\n";
}

TEST(model_test, a_gnn_classifies_nodes_unless_it_says_link) {
  auto node = parse_model_desc(kStack, "m/model.toml");
  ASSERT_TRUE(node.has_value()) << node.error().message();
  EXPECT_EQ(node->task, "node");
  EXPECT_FALSE(node->scores_links());
  auto link = parse_model_desc(with("task = \"link\"\ndecoder = \"dot\"\n"), "m/model.toml");
  ASSERT_TRUE(link.has_value()) << link.error().message();
  EXPECT_TRUE(link->scores_links());
  auto again = parse_model_desc(to_toml(*link), "again");
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_TRUE(again->scores_links());
  EXPECT_EQ(again->decoder, "dot");
  EXPECT_EQ(to_toml(*node).find("task"), std::string::npos);
}

TEST(model_test, tasks_and_decoders_spindle_does_not_serve_are_refused_by_name) {
  auto edges = parse_model_desc(with("task = \"edges\"\n"), "m/model.toml");
  ASSERT_FALSE(edges.has_value());
  EXPECT_NE(edges.error().message().find("m/model.toml: model.task = 'edges': expected node or "
                                         "link"),
            std::string::npos)
      << edges.error().message();
  auto mlp = parse_model_desc(with("task = \"link\"\ndecoder = \"mlp\"\n"), "m/model.toml");
  ASSERT_FALSE(mlp.has_value());
  EXPECT_NE(mlp.error().message().find("model.decoder = 'mlp': expected dot"), std::string::npos);
  auto dlrm = parse_model_desc(
      "[model]\narch = \"dlrm\"\ndense_in = 4\nbottom = [8]\ntop = [1]\nembedding_dim = 8\n"
      "table_rows = [10]\ntask = \"link\"\n",
      "d/model.toml");
  ASSERT_FALSE(dlrm.has_value());
  EXPECT_NE(dlrm.error().message().find("'link' is for GNNs"), std::string::npos)
      << dlrm.error().message();
}

}  // namespace
}  // namespace spindle::config
