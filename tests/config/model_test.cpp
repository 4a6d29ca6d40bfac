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

TEST(model_test, a_decoder_of_ops_reads_both_embeddings_and_round_trips) {
  const std::string text = with("task = \"link\"\ndecoder = \"ops\"\n") +
                           "\n[[decoder_op]]\nkind = \"cat\"\ninputs = [\"z_src\", \"z_dst\"]\n"
                           "[[decoder_op]]\nkind = \"linear\"\nprefix = \"dec\"\nin = 6\nout = 1\n";
  auto d = parse_model_desc(text, "m/model.toml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  ASSERT_EQ(d->decoder_ops.size(), 2u);
  EXPECT_EQ(d->decoder_ops[0].width, 6);
  auto again = parse_model_desc(to_toml(*d), "again");
  ASSERT_TRUE(again.has_value()) << again.error().message() << "\n" << to_toml(*d);
  EXPECT_EQ(again->decoder_ops.size(), 2u);
  EXPECT_EQ(again->decoder, "ops");
}

TEST(model_test, only_the_last_op_may_be_called_output) {
  const std::string head = "[model]\narch = \"stack\"\nin = 4\nout = 3\n";
  const std::string sage = "[[op]]\nkind = \"sage\"\nprefix = \"conv\"\nin = 4\nout = 3\n";
  auto early = parse_model_desc(head + sage + "name = \"output\"\n[[op]]\nkind = \"relu\"\n", "m");
  ASSERT_FALSE(early.has_value());
  EXPECT_NE(early.error().message().find("op[0].name = 'output' is the model's output's name"),
            std::string::npos)
      << early.error().message();
  EXPECT_TRUE(parse_model_desc(head + sage + "name = \"output\"\n", "m").has_value());
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
  auto no_ops = parse_model_desc(with("task = \"link\"\ndecoder = \"ops\"\n"), "m/model.toml");
  ASSERT_FALSE(no_ops.has_value());
  EXPECT_NE(no_ops.error().message().find("goes with [[decoder_op]] tables"), std::string::npos)
      << no_ops.error().message();
  const std::string decoder_ops =
      "\n[[decoder_op]]\nkind = \"cat\"\ninputs = [\"z_src\", \"z_dst\"]\n"
      "[[decoder_op]]\nkind = \"linear\"\nprefix = \"dec\"\nin = 6\nout = 2\n";
  auto wide = parse_model_desc(with("task = \"link\"\ndecoder = \"ops\"\n") + decoder_ops,
                               "m/model.toml");
  ASSERT_FALSE(wide.has_value());
  EXPECT_NE(wide.error().message().find("produces 2 columns; a pair's score is 1"),
            std::string::npos)
      << wide.error().message();
  const std::string sage_in_decoder =
      "\n[[decoder_op]]\nkind = \"sage\"\nprefix = \"d\"\nin = 3\nout = 1\n";
  auto mp = parse_model_desc(with("task = \"link\"\ndecoder = \"ops\"\n") + sage_in_decoder,
                             "m/model.toml");
  ASSERT_FALSE(mp.has_value());
  EXPECT_NE(mp.error().message().find("no graph to pass messages over"), std::string::npos);
  auto dlrm = parse_model_desc(
      "[model]\narch = \"dlrm\"\ndense_in = 4\nbottom = [8]\ntop = [1]\nembedding_dim = 8\n"
      "table_rows = [10]\ntask = \"link\"\n",
      "d/model.toml");
  ASSERT_FALSE(dlrm.has_value());
  EXPECT_NE(dlrm.error().message().find("'link' is for GNNs"), std::string::npos)
      << dlrm.error().message();
}

// A field the architecture does not read would be served as if absent: each is
// refused naming the field, its value and who reads it; defaults pass.
TEST(model_test, fields_the_architecture_ignores_are_refused_by_name) {
  const std::string dlrm =
      "[model]\narch = \"dlrm\"\ndense_in = 4\nbottom = [8]\ntop = [1]\nembedding_dim = 8\n"
      "table_rows = [10]\n";
  ASSERT_TRUE(parse_model_desc(dlrm + "log_softmax = false\n", "d/model.toml").has_value());
  auto refused = [](const std::string& text, const std::string& want) {
    auto d = parse_model_desc(text, "d/model.toml");
    ASSERT_FALSE(d.has_value()) << text;
    EXPECT_NE(d.error().message().find(want), std::string::npos) << d.error().message();
    EXPECT_NE(d.error().message().find("d/model.toml"), std::string::npos);
  };
  refused(dlrm + "log_softmax = true\n", "model.log_softmax = true: arch = \"dlrm\" does not read it");
  refused(dlrm + "heads = 8\n", "model.heads = 8: arch = \"dlrm\" does not read it (arch = \"gat\" reads it)");
  refused(dlrm + "attention = [4, 1]\n", "model.attention = [4, 1]: arch = \"dlrm\" does not read it (DIN reads it)");
  refused(dlrm + "fanouts = [5, 5]\n", "model.fanouts = [5, 5]");
  refused(dlrm + "hidden = 16\n", "model.hidden = 16");
  refused("[model]\narch = \"ncf\"\ntop = [8]\nembedding_dim = 4\ntable_rows = [5, 5, 5, 5]\n"
          "bottom = [4]\n",
          "model.bottom = [4]: arch = \"ncf\" does not read it (DLRM reads it)");
  refused(with("table_rows = [10]\n"), "model.table_rows = [10]: arch = \"stack\" does not read it");
  refused(with("heads = 2\n"), "remove model.layers / model.hidden / model.heads");
  // The host's stack never applied it (its ops say where log_softmax goes).
  refused(with("log_softmax = true\n"), "[[op]] with kind = \"log_softmax\"");
  refused(with("dense_in = 13\n"), "(DLRM and Wide & Deep read it)");
  refused("[model]\narch = \"graphsage\"\nin = 4\nhidden = 8\nout = 3\nheads = 2\n",
          "model.heads = 2: arch = \"graphsage\" does not read it");
  EXPECT_TRUE(parse_model_desc("[model]\narch = \"gat\"\nin = 4\nhidden = 8\nout = 3\nheads = 2\n",
                               "g/model.toml")
                  .has_value());
}

}  // namespace
}  // namespace spindle::config
