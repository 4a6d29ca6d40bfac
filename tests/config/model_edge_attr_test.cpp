// model.toml's ops reading edge attributes (PyG GINEConv, and the attention
// layers' edge_dim): their keys, their round trip, and the check against a
// served dataset's edge attributes, refused by name when they are missing or of
// another width; typed models refuse them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "config/model.hpp"

namespace spindle::config {
namespace {

std::string gine_model(const std::string& extra) {
  return "[model]\narch = \"stack\"\nin = 4\nout = 3\n\n[[op]]\nkind = \"gine\"\nprefix = "
         "\"conv\"\n" +
         extra + "\n[[op]]\nkind = \"linear\"\nprefix = \"conv.nn.0\"\nin = 4\nout = 3\n";
}

TEST(model_edge_attr_test, a_gine_op_passes_messages_and_round_trips_its_edge_dim) {
  auto d = parse_model_desc(gine_model("edge_dim = 2\neps = 0.25\n"), "m/model.toml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->layers, 1);
  EXPECT_TRUE(is_message_passing(op_kind::gine));
  EXPECT_EQ(d->ops[0].edge_dim, 2);
  EXPECT_EQ(d->ops[0].width, 4);
  EXPECT_TRUE(reads_edge_attr(d->ops));
  auto again = parse_model_desc(to_toml(*d), "again");
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_EQ(again->ops[0].edge_dim, 2);
  EXPECT_FLOAT_EQ(again->ops[0].eps, 0.25f);
  EXPECT_EQ(to_string(op_kind::gine), "gine");
}

TEST(model_edge_attr_test, a_gine_op_takes_no_setting_it_does_not_honour) {
  auto d = parse_model_desc(gine_model("relation = 0\n"), "m/model.toml");
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().message().find("relation: not a setting of gine"), std::string::npos)
      << d.error().message();
  auto no_prefix = parse_model_desc(
      "[model]\narch = \"stack\"\nin = 4\nout = 4\n[[op]]\nkind = \"gine\"\n", "m/model.toml");
  ASSERT_FALSE(no_prefix.has_value());
  EXPECT_NE(no_prefix.error().message().find("prefix"), std::string::npos);
}

TEST(model_edge_attr_test, a_dataset_without_edge_attributes_is_refused_by_name) {
  auto d = parse_model_desc(gine_model(""), "m/model.toml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  auto none = check_edge_attr(d->ops, 0, "/data/cora");
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.message().find("op[0] (gine, conv) reads edge attributes, and dataset "
                                "/data/cora has none"),
            std::string::npos)
      << none.message();
  auto narrow = check_edge_attr(d->ops, 3, "ds");  // no edge_dim: as wide as x (4)
  ASSERT_FALSE(narrow.is_ok());
  EXPECT_NE(narrow.message().find("4 wide (no edge_dim: as wide as its input), and dataset ds "
                                  "has 3 columns"),
            std::string::npos)
      << narrow.message();
  EXPECT_TRUE(check_edge_attr(d->ops, 4, "ds").is_ok());
  auto projected = parse_model_desc(gine_model("edge_dim = 3\n"), "m/model.toml");
  ASSERT_TRUE(projected.has_value());
  EXPECT_TRUE(check_edge_attr(projected->ops, 3, "ds").is_ok());
  EXPECT_FALSE(check_edge_attr(projected->ops, 4, "ds").is_ok());
}

TEST(model_edge_attr_test, models_without_gine_read_no_edge_attributes) {
  auto d = parse_model_desc(
      "[model]\narch = \"stack\"\nin = 4\nout = 3\n[[op]]\nkind = \"sage\"\nprefix = \"c\"\nout = "
      "3\n",
      "m/model.toml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_FALSE(reads_edge_attr(d->ops));
  EXPECT_TRUE(check_edge_attr(d->ops, 0, "ds").is_ok());
}

TEST(model_edge_attr_test, attention_ops_read_edge_attributes_with_edge_dim) {
  for (const char* kind : {"gat", "gatv2", "transformer"}) {
    auto d = parse_model_desc(fmt::format("[model]\narch = \"stack\"\nin = 4\nout = 6\n[[op]]\n"
                                          "kind = \"{}\"\nprefix = \"c\"\nout = 3\nheads = 2\n"
                                          "edge_dim = 5\n",
                                          kind),
                              "m/model.toml");
    ASSERT_TRUE(d.has_value()) << kind << ": " << d.error().message();
    EXPECT_TRUE(reads_edge_attr(d->ops)) << kind;
    auto again = parse_model_desc(to_toml(*d), "again");
    ASSERT_TRUE(again.has_value()) << again.error().message();
    EXPECT_EQ(again->ops[0].edge_dim, 5) << kind;
    EXPECT_TRUE(check_edge_attr(d->ops, 5, "ds").is_ok());
    auto other = check_edge_attr(d->ops, 4, "ds");
    ASSERT_FALSE(other.is_ok());
    EXPECT_NE(other.message().find(fmt::format("op[0] ({}, c) reads edge attributes 5 wide (its "
                                               "edge_dim), and dataset ds has 4 columns",
                                               kind)),
              std::string::npos)
        << other.message();
  }
}

TEST(model_edge_attr_test, typed_models_refuse_ops_reading_edge_attributes) {
  auto d = parse_model_desc(
      "[model]\narch = \"stack\"\nout = 3\n[[node_type]]\nname = \"a\"\nin = 4\n"
      "[[edge_type]]\nsrc = \"a\"\nrel = \"r\"\ndst = \"a\"\n[[op]]\nkind = \"gat\"\n"
      "prefix = \"c\"\ninputs = [\"x.a\"]\nrelation = 0\nout = 3\nedge_dim = 2\n"
      "add_self_loops = false\n[[output]]\nnode_type = \"a\"\nvalue = \"op0\"\n",
      "m/model.toml");
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().message().find("op[0] (gat) reads edge attributes; on typed graphs they are "
                                     "not served"),
            std::string::npos)
      << d.error().message();
}

}  // namespace
}  // namespace spindle::config
